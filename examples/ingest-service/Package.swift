// swift-tools-version:6.0
import PackageDescription

// An ingestion service's shape over Daybook's publishing library, as a package of its own
// that depends on Daybook by path. Only DaybookPublish and what it needs are built (no
// SQLite, no projector, no command line).
let package = Package(
    name: "ingest-service",
    dependencies: [.package(name: "Daybook", path: "../..")],
    targets: [
        .executableTarget(name: "ingest-service", dependencies: [
            .product(name: "DaybookPublish", package: "Daybook"),
            .product(name: "DaybookFiles", package: "Daybook"),
            .product(name: "DaybookKafka", package: "Daybook"),
            .product(name: "DaybookCore", package: "Daybook"),
        ]),
        // Guides/Publishing.md's program, verbatim (scripts/example checks that
        // the two are the same and runs it).
        .executableTarget(name: "publish-once", dependencies: [
            .product(name: "DaybookPublish", package: "Daybook"),
            .product(name: "DaybookKafka", package: "Daybook"),
            .product(name: "DaybookCore", package: "Daybook"),
        ]),
    ]
)
