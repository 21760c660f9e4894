# Daybook on Debian 12 with the Swift toolchain it is tested with (6.3.1); librdkafka, SQLite,
# libmicrohttpd (serve's HTTP server) and zlib (gzip sync bodies) from Debian.
# Tests/DaybookEndToEndTests checks this tag against the compiler.
FROM swift:6.3.1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka-dev libsqlite3-dev libmicrohttpd-dev zlib1g-dev pkg-config && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN swift build -c release --product daybook && cp .build/release/daybook /usr/local/bin/daybook

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends librdkafka1 libsqlite3-0 libmicrohttpd12 zlib1g tzdata ca-certificates unzip && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/share/swift /usr/share/swift
COPY --from=build /usr/lib/swift/linux/*.so /usr/lib/swift/linux/
COPY --from=build /usr/local/bin/daybook /usr/local/bin/daybook
ENV LD_LIBRARY_PATH=/usr/lib/swift/linux
WORKDIR /daybook
COPY topics/ topics/
COPY config/ config/
ENTRYPOINT ["daybook"]
