// swift-tools-version:5.4
// libFuzzer harnesses for Daybook's input path. Not part of the root package (whose
// Package.swift stays untouched): build and run them with `scripts/fuzz`, which passes
// -sanitize=fuzzer,address to every module. See README.md in this directory.
//
// Tools version 5.4 on purpose: from 5.5 on, SwiftPM links an executable's entry point as
// `<Target>_main` (--defsym main=…), which a libFuzzer target does not have: its `main`
// comes from libFuzzer. 5.4 also lets the path dependency be named whatever the clone's
// directory is called.
import PackageDescription

let package = Package(
    name: "DaybookFuzz",
    dependencies: [.package(name: "Daybook", path: "..")],
    targets: [
        // EventDecoder (fast and tree paths) → Ledger → recompute → JSON lines.
        .executableTarget(name: "FuzzEventDecoder", dependencies: [
            .product(name: "DaybookCore", package: "Daybook"),
            .product(name: "DaybookSupport", package: "Daybook"),
        ]),
        // Instant(rfc3339:) and formatting back; CivilDay's YYYY-MM-DD parser.
        .executableTarget(name: "FuzzInstant", dependencies: [
            .product(name: "DaybookCore", package: "Daybook"),
        ]),
        // DaybookConfiguration.load (the DaybookConfiguration library) on a file's bytes.
        .executableTarget(name: "FuzzConfiguration", dependencies: [
            .product(name: "DaybookConfiguration", package: "Daybook"),
            .product(name: "DaybookCore", package: "Daybook"),
            .product(name: "DaybookKafka", package: "Daybook"),
        ]),
        // PartitionWorker.apply over a real SQLite shard in a temporary directory.
        .executableTarget(name: "FuzzProjector", dependencies: [
            .product(name: "DaybookCore", package: "Daybook"),
            .product(name: "DaybookKafka", package: "Daybook"),
            .product(name: "DaybookStore", package: "Daybook"),
            .product(name: "DaybookPipeline", package: "Daybook"),
        ]),
        // RequestTarget(parsing:) as a target, a path and a query, re-encoded and parsed
        // back; the server's refusals by target (DaybookHTTP, built over libmicrohttpd).
        .executableTarget(name: "FuzzRequestTarget", dependencies: [
            .product(name: "DaybookHTTP", package: "Daybook"),
        ]),
    ]
)
