// swift-tools-version:6.0
import PackageDescription

/// The hot path's modules (decode, ledger, store, projection) are built without the runtime
/// exclusivity checks in release builds: under callgrind they cost ~3k instructions per
/// event (BENCHMARKS.md). Debug builds, which every test runs, keep the checks, so a
/// conflicting access still traps there; the compile-time checks apply to every build.
let hotPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Daybook",
    products: [
        .executable(name: "daybook", targets: ["daybook"]),
        .library(name: "DaybookCore", targets: ["DaybookCore"]),
        .library(name: "DaybookSupport", targets: ["DaybookSupport"]),
        .library(name: "DaybookKafka", targets: ["DaybookKafka"]),
        .library(name: "DaybookStore", targets: ["DaybookStore"]),
        .library(name: "DaybookPipeline", targets: ["DaybookPipeline"]),
        .library(name: "DaybookMetrics", targets: ["DaybookMetrics"]),
        .library(name: "DaybookImport", targets: ["DaybookImport"]),
        .library(name: "DaybookConfiguration", targets: ["DaybookConfiguration"]),
        .library(name: "DaybookFiles", targets: ["DaybookFiles"]),
        .library(name: "DaybookPublish", targets: ["DaybookPublish"]),
        .library(name: "DaybookBench", targets: ["DaybookBench"]),
        .library(name: "DaybookImportFiles", targets: ["DaybookImportFiles"]),
        .library(name: "DaybookHTTP", targets: ["DaybookHTTP"]),
        .library(name: "DaybookServe", targets: ["DaybookServe"]),
    ],
    targets: [
        // Pure arithmetic: events, validation, dedupe, civil days, freshness judgement and its
        // policy (page-fraction overrides), the totals day rules (a row, no data, unknown). No I/O.
        .target(name: "DaybookCore", dependencies: ["DaybookSupport"], swiftSettings: hotPath),
        // What Core and the tools share that is not the domain: a strict JSON parser and writer,
        // parallel map over all cores, number and duration text for people, a repeatable random
        // generator (SplitMix64). No I/O.
        .target(name: "DaybookSupport", swiftSettings: hotPath),
        // librdkafka from Debian (librdkafka-dev), seen only by DaybookKafka/RDKafka.
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        // Producer, consumer, admin and the embedded (mock-cluster) broker, in Swift types.
        .target(name: "DaybookKafka", dependencies: ["CRdKafka", "DaybookLog"]),
        // A small logger with a stderr and an in-memory handler; no global bootstrap.
        .target(name: "DaybookLog"),
        // Files replaced whole or not at all (AtomicFile), buffered writes that fail loudly
        // (CheckedWriter, for standard output), lines read from a mapped file or a stream
        // through one splitter (LineInput), and temporary names and scratch directories that a
        // killed run's successor cleans up (TemporaryName, ScratchDirectory). No dependencies.
        .target(name: "DaybookFiles"),
        // The Prometheus text format and the metrics file node_exporter's textfile collector
        // reads (written with DaybookFiles' AtomicFile).
        .target(name: "DaybookMetrics", dependencies: ["DaybookFiles"]),
        // SQLite from Debian (libsqlite3-dev), seen only by DaybookStore.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The SQLite wrapper and the shard read model (one file per partition): totals' day
        // blocks and freshness readings over every shard.
        .target(name: "DaybookStore", dependencies: ["CSQLite", "DaybookCore", "DaybookSupport", "DaybookFiles"], swiftSettings: hotPath),
        // Kafka → core → shards: the projector and its dead-letter outbox; rebuild, the
        // verify/diff comparison and replay (its plan and run), each a projection too; and
        // dead-letter replay (republished through DaybookPublish, marked in the shards); a stale
        // report's Prometheus series (StaleMetrics).
        .target(name: "DaybookPipeline", dependencies: ["DaybookCore", "DaybookSupport", "DaybookFiles", "DaybookKafka", "DaybookStore", "DaybookLog", "DaybookMetrics", "DaybookPublish"], swiftSettings: hotPath),
        // Apple Health exports → events: a streaming reader of export.xml and the mapping of
        // its records (uuids, sources, zones). Pure: bytes in, lines out; no Kafka, no SQLite.
        .target(name: "DaybookImport", dependencies: ["DaybookCore", "DaybookSupport"]),
        // Apple Health exports from files: export.xml, standard input, or export.zip through an
        // unzip child (ExportInput); the import loop that feeds DaybookImport's pure importer
        // and hands each event line on (AppleHealthImport); where the lines go, `--out` checked
        // against the input, a file replaced whole or a staging file (ImportOutput). No Kafka,
        // no SQLite.
        .target(name: "DaybookImportFiles", dependencies: ["DaybookImport", "DaybookFiles"]),
        // config/daybook.json read and checked into typed settings (priority, Kafka, state,
        // freshness); errors name the member. Used by the executable and the fuzz target.
        .target(name: "DaybookConfiguration", dependencies: ["DaybookCore", "DaybookSupport", "DaybookKafka"]),
        // Events → Kafka, for ingestion services and every command that publishes: the
        // validating, keyed, accounted EventPublisher; files of event lines decoded on all
        // cores and published line by line (EventLines); a phone's sync batch decoded, checked
        // whole and published whole (SyncBatch). No SQLite: an ingestion service needs none.
        .target(name: "DaybookPublish", dependencies: ["DaybookCore", "DaybookSupport", "DaybookKafka", "DaybookLog", "DaybookFiles"]),
        // The benchmarks: the pipeline bench (the daybook binary's broker, publish and project
        // as child processes beside kcat; their counts read from their metrics files), the
        // core bench in process, and the realistic log both use (SyntheticLog).
        .target(name: "DaybookBench", dependencies: ["DaybookCore", "DaybookSupport", "DaybookKafka", "DaybookLog", "DaybookFiles", "DaybookStore"]),
        // libmicrohttpd from Debian (libmicrohttpd-dev), seen only by DaybookHTTP.
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // An HTTP/1.1 server for Daybook's endpoints: request and response values, the
        // request-target taken apart (RequestTarget), the server over libmicrohttpd
        // (HTTPServer, answering at once or later through an HTTPResponder), and gzip bodies
        // inflated within a limit (Gunzip).
        // zlib from Debian (zlib1g-dev), seen only by DaybookHTTP: gzip request bodies.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "DaybookHTTP", dependencies: ["CMicroHTTPD", "CZlib"]),
        // Reads over HTTP (`daybook serve`): routes, access tokens, routing to the member that
        // holds a user, and the JSON answers; phones' syncs into Kafka (SyncIngest, `serve --ingest`).
        .target(name: "DaybookServe", dependencies: ["DaybookHTTP", "DaybookCore", "DaybookSupport", "DaybookStore", "DaybookPipeline", "DaybookMetrics", "DaybookKafka", "DaybookLog", "DaybookPublish"]),
        // The command line: parses arguments, calls a library, renders, maps typed errors to
        // sysexits codes and adds the CLI hints (the options and commands that fix them).
        .executableTarget(name: "daybook", dependencies: ["DaybookCore", "DaybookSupport", "DaybookConfiguration", "DaybookFiles", "DaybookKafka", "DaybookLog", "DaybookStore", "DaybookPipeline", "DaybookMetrics", "DaybookImport", "DaybookPublish", "DaybookBench", "DaybookImportFiles", "DaybookServe"]),
        .testTarget(name: "DaybookCoreTests", dependencies: ["DaybookCore", "DaybookSupport", "DaybookTestSupport"], exclude: ["Golden"]),
        .testTarget(name: "DaybookSupportTests", dependencies: ["DaybookSupport"]),
        .testTarget(name: "DaybookHTTPTests", dependencies: ["DaybookHTTP", "DaybookTestSupport"]),
        // The read service's handler driven without a socket over real shard files: routes,
        // statuses, access, placement, the tokens file, the JSON and the metrics (promtool).
        .testTarget(name: "DaybookServeTests", dependencies: ["DaybookServe", "DaybookHTTP", "DaybookPipeline", "DaybookStore", "DaybookCore", "DaybookKafka", "DaybookSupport", "DaybookTestSupport"]),
        .testTarget(name: "DaybookConfigurationTests", dependencies: ["DaybookConfiguration", "DaybookCore", "DaybookKafka", "DaybookTestSupport"]),
        .testTarget(name: "DaybookFilesTests", dependencies: ["DaybookFiles", "DaybookTestSupport"]),
        .testTarget(name: "DaybookKafkaTests", dependencies: ["DaybookKafka", "DaybookCore", "DaybookLog"]),
        // Per-test temporary directories, promtool and gzip, shared by the test targets (the seeded
        // random generator, SplitMix64, is DaybookSupport's).
        .target(name: "DaybookTestSupport", path: "Tests/DaybookTestSupport"),
        .testTarget(name: "DaybookStoreTests", dependencies: ["DaybookStore", "DaybookCore", "DaybookSupport", "DaybookTestSupport"]),
        .testTarget(name: "DaybookMetricsTests", dependencies: ["DaybookMetrics", "DaybookTestSupport"]),
        .testTarget(name: "DaybookImportTests", dependencies: ["DaybookImport", "DaybookImportFiles", "DaybookFiles", "DaybookCore", "DaybookSupport", "DaybookTestSupport"]),
        // The projector, rebuild, verify, diff, replay, the publisher and dead-letter replay in
        // process against EmbeddedBroker over TCP, into real shard files.
        .testTarget(name: "DaybookPipelineTests", dependencies: ["DaybookPipeline", "DaybookPublish", "DaybookFiles", "DaybookCore", "DaybookSupport", "DaybookKafka", "DaybookStore", "DaybookLog", "DaybookTestSupport"]),
        // Fixtures/: data the tests read by path (a shard written by an older Daybook, as SQL).
        .testTarget(name: "DaybookEndToEndTests", dependencies: ["DaybookCore", "DaybookSupport", "DaybookKafka", "DaybookStore", "DaybookBench", "daybook", "DaybookTestSupport"],
                    exclude: ["Fixtures"]),
    ]
)
