import DaybookConfiguration
import DaybookKafka
import DaybookLog
import DaybookPipeline
import DaybookServe
import Foundation

/// `daybook serve`: the read service over HTTP.
enum ServeCommand: Subcommand {
    static let name = "serve"
    static let abstract = "Answer reads of the shards over HTTP (JSON), routing each user to the member that owns them; with --ingest, take phones' syncs into Kafka."
    static let usage = "serve --data DIR --listen HOST:PORT [--brokers B --group G --advertise URL] [--tokens FILE] [--ingest [--max-body BYTES] [--delivery-timeout SECONDS] [--sync-rate N] [--sync-burst N]] [--max-lag N] [--threads N] [--config FILE]"
    static let options = [
        SharedOptions.data("Directory of the shards (as given to project; read-only here)."),
        OptionSpec(name: "--listen", value: "HOST:PORT", help: "Address to listen on (127.0.0.1:8080, [::1]:8080; another than loopback needs --tokens)."),
        KafkaOptions.brokers,
        OptionSpec(name: "--group", value: "G", help: "The projectors' consumer group: route each user to the member owning them (needs --brokers or --config)."),
        OptionSpec(name: "--advertise", value: "URL", help: "This member's own URL, as its projector advertises it (project --advertise), so it knows itself in the group."),
        OptionSpec(name: "--tokens", value: "FILE", help: "Access tokens: per line a token's SHA-256 (hex) and the user it may read, or * (see ACCESS)."),
        OptionSpec(name: "--max-lag", value: "N", help: "/readyz answers 503 while an owned shard is more than N messages behind the log (default: lag not checked)."),
        OptionSpec(name: "--threads", value: "N", help: "Threads answering requests (1-64, default 2)."),
        OptionSpec(name: "--ingest", value: nil, help: "Take phones' syncs: POST /v1/users/{user}/syncs into the topic (needs --tokens, and --brokers or --config; see SYNCS)."),
        OptionSpec(name: "--max-body", value: "BYTES", help: "The largest sync body, after gzip is inflated (1024-1073741824, default 8388608)."),
        OptionSpec(name: "--delivery-timeout", value: "SECONDS", help: "A sync not delivered within this is answered 503 (1-300, default 10)."),
        OptionSpec(name: "--sync-rate", value: "N", help: "Syncs a second each token may send on average (1-1000000, default 50)."),
        OptionSpec(name: "--sync-burst", value: "N", help: "Syncs each token may send at once (1-1000000, default 100)."),
        SharedOptions.config("kafka settings (bootstrap servers, group, partitioner), and the metrics it adds to the catalogue (rows of an added metric are read only with it)."),
        SharedOptions.topic(),
        KafkaOptions.connectTimeout,
    ]
    static let discussion = """
    Reads are answered from the shards of DIR as 'daybook totals' reads them (safe while a
    projector writes), as JSON; every answer is a real HTTP status, errors as
    {"error":{"code","parameter","message"}} naming the parameter and what it accepts.

      GET /v1/users/{user}/totals?metric=M&from=DAY&to=DAY[&bucket=day|hour][&sources=true][&stale=ok]
      GET /v1/users/{user}/days/{day}/explain?metric=M[&stale=ok]
      GET /healthz   200 while the process answers (no token needed)
      GET /readyz    200 when the shards can be read and owned shards keep up (no token needed)
      GET /metrics   Prometheus text (a service token, *, when --tokens is given)

    A range spans at most 366 days; an empty day is no row, never 0; "unknown" lists the
    days a source may still send data for. An unknown user is 200 with no rows.
    Guides/Reading.md has every field.

    ROUTING: without --group, DIR answers for every user (partitions from its roles.json,
    written by the projector). With --brokers and --group, a request for a user whose
    partition another member owns is answered 307 to that member's advertised URL
    (project --advertise), 503 with Retry-After while no member owns it (a rebalance); a
    warm standby here answers only with stale=ok, and says so (as_of.role "standby").

    ACCESS: with --tokens every data read needs Authorization: Bearer TOKEN (401 without
    or with an unknown one, 403 for another user's data). The file holds no secret: add a
    token with
      printf '%s %s\\n' "$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)" ana >> tokens
    Tokens are never logged or echoed. Without --tokens, serve listens only on loopback.

    SYNCS: with --ingest (and --tokens, and --brokers or --config), phones' sync batches
    are published to the topic and answered once delivered (Guides/Ingest.md):

      POST /v1/users/{user}/syncs   Content-Type: application/json [Content-Encoding: gzip]
      {"anchor": 17, "added": [sample, ...], "deleted": ["uuid", ...]}

    202 {"anchor","events","partition","offsets":[first,last]} once every event is
    delivered; 400 naming the field as sent (added[3].end), nothing published; 401/403 (a
    user's token syncs only that user, a * token any user); 413 past --max-body; 415;
    429 with Retry-After when the token sent more than --sync-rate/--sync-burst or the
    producer's queue is full; 503 with Retry-After when not delivered within
    --delivery-timeout: nothing is acknowledged, and sending the batch again is safe.

    SIGINT/SIGTERM stop it: it stops listening and returns once no request is answered.

    EXIT CODES: 0 stopped; 64 usage (also a --listen off loopback without --tokens, a bad
    --advertise, --ingest without --tokens); 66 DIR or the tokens file missing; 69 cannot
    listen on --listen, or Kafka unreachable within --connect-timeout; 78 bad configuration
    or a malformed tokens file (the line is named, never shown).

    EXAMPLE:
      daybook serve --data /var/lib/daybook --listen 127.0.0.1:8080 &
      curl -s 'http://127.0.0.1:8080/v1/users/ana/totals?metric=steps&from=2024-03-25&to=2024-03-31'
      {"user":"ana","metric":"steps","bucket":"day","rows":[{"day":"2024-03-25","value":8210},…],"unknown":[],"as_of":{"partition":3,"next_offset":1204,"lag":null,"role":"local"}}
    """

    static func run(_ arguments: ParsedArguments) throws -> Int32 {
        guard arguments.positionals.isEmpty else { throw CLIError.usage("serve takes no positional arguments") }
        let data = try arguments.data(for: "serve")
        guard let listenText = arguments.value("--listen") else { throw CLIError.usage("serve needs --listen HOST:PORT (127.0.0.1:8080)") }
        guard let listen = ListenAddress(listenText) else {
            throw CLIError.usage("--listen '\(TerminalText.escaped(listenText))' is not HOST:PORT; write 127.0.0.1:8080, or [::1]:8080 for IPv6")
        }
        // Before any metric is named: the configuration may add metrics to the catalogue
        // (standard input is read once, where the Kafka settings are read, with --group or --ingest).
        if let path = arguments.value("--config"), path != "-" { _ = try DaybookConfiguration.load(path, resolvingSecrets: false) }
        var configuration = ReadServiceConfiguration(dataDirectory: data)
        configuration.host = listen.host
        configuration.port = listen.port
        configuration.topic = try arguments.topic(default: configuration.topic)
        configuration.threads = try arguments.integer("--threads", default: 2, in: 1...64)
        if arguments.value("--max-lag") != nil { configuration.maxLag = Int64(try arguments.integer("--max-lag", default: 0, in: 0...Int(Int32.max))) }
        if let url = arguments.value("--advertise") {
            if let problem = ListenAddress.advertiseProblem(url) { throw CLIError.usage("--advertise '\(TerminalText.escaped(url))' \(problem)") }
            configuration.advertisedURL = ListenAddress.normalized(url)
        }
        if let path = arguments.value("--tokens") {
            do {
                configuration.tokens = try AccessTokens.load(path)
            } catch {
                // A file that is not there or unreadable is a missing input; one that says something wrong, configuration.
                throw CLIError(code: error.line == nil ? ExitCode.noInput : ExitCode.config, message: error.message)
            }
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: data, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CLIError(code: ExitCode.noInput, message: "\(data): no such data directory")
        }
        let logger = Logger(label: "serve", level: .warning)
        configuration.logger = logger
        let ingesting = arguments.has("--ingest")
        if !ingesting, let option = ["--max-body", "--delivery-timeout", "--sync-rate", "--sync-burst"].first(where: { arguments.value($0) != nil }) {
            throw CLIError.usage("\(option) sets how syncs are taken: give it with --ingest")
        }
        if ingesting {
            guard configuration.tokens != nil else {
                throw CLIError.usage("--ingest without --tokens would let anyone who reaches serve write any user's data: give --tokens FILE")
            }
            let (config, timeout) = try KafkaOptions.load(arguments, command: "serve --ingest")
            var sync = SyncIngestConfiguration(connection: config.connection)
            sync.producer = config.producer
            sync.topic = configuration.topic
            sync.maxBodyBytes = try arguments.integer("--max-body", default: sync.maxBodyBytes, in: 1_024...(1 << 30))
            sync.deliveryTimeout = .seconds(try arguments.integer("--delivery-timeout", default: 10, in: 1...300))
            sync.ratePerSecond = Double(try arguments.integer("--sync-rate", default: 50, in: 1...1_000_000))
            sync.burst = try arguments.integer("--sync-burst", default: 100, in: 1...1_000_000)
            sync.logger = logger
            let ingest: SyncIngest
            do {
                ingest = try SyncIngest(sync)
                try ingest.connect(timeout: timeout)
            } catch {
                throw CLIError(code: error.kind == .unreachable ? ExitCode.unavailable : ExitCode.config, message: error.message + (error.kind == .unreachable ? " (--brokers, --connect-timeout)" : ""))
            }
            configuration.ingest = ingest
        }
        if let group = arguments.value("--group") {
            var (config, timeout) = try KafkaOptions.load(arguments, command: "serve --group")
            config.consumer.groupID = try StatusCommand.groupName(group)
            let access = LogAccess(connection: config.connection, consumer: config.consumer, producer: config.producer)
            do {
                configuration.cluster = try KafkaClusterView(access: access, topic: configuration.topic, timeout: timeout, logger: logger)
            } catch {
                throw CLIError(error)
            }
        } else if arguments.value("--brokers") != nil, !ingesting {
            throw CLIError.usage("--brokers without --group or --ingest: serve asks the cluster only to route by the group or to publish syncs; give --group G (the projectors' group) or --ingest, or leave --brokers out to answer from DIR for every user")
        } else if arguments.value("--advertise") != nil {
            throw CLIError.usage("--advertise names this member in the group: give it with --brokers B --group G")
        }

        let service: ReadService
        do {
            service = try ReadService(configuration)
        } catch {
            configuration.ingest?.close()
            throw CLIError.usage(error.message + " (--tokens FILE)")
        }
        Shutdown.install()
        do {
            try service.start()
        } catch {
            configuration.ingest?.close()
            throw CLIError(code: ExitCode.unavailable, message: error.message)
        }
        printError("serve: listening on \(listen.host.contains(":") ? "[\(listen.host)]" : listen.host):\(service.port ?? listen.port)\(configuration.tokens == nil ? " (no --tokens: loopback only)" : "")\(ingesting ? " (taking syncs into \(configuration.topic))" : ""); Ctrl-C stops")
        while !Shutdown.isRequested { usleep(100_000) }
        service.stop()
        printError("serve: stopped")
        return ExitCode.ok
    }
}
