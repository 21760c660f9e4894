// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Daybook",
    products: [
        .executable(name: "daybook", targets: ["daybook"]),
        .library(name: "DaybookCore", targets: ["DaybookCore"]),
        .library(name: "DaybookKafka", targets: ["DaybookKafka"]),
    ],
    targets: [
        // Pure arithmetic: events, validation, dedupe, civil days. No I/O.
        .target(name: "DaybookCore"),
        // librdkafka from Debian (librdkafka-dev), seen only by DaybookKafka/RDKafka.
        .systemLibrary(name: "CRdKafka", pkgConfig: "rdkafka", providers: [.apt(["librdkafka-dev"])]),
        // Producer, consumer, admin and the embedded (mock-cluster) broker, in Swift types.
        .target(name: "DaybookKafka", dependencies: ["CRdKafka", "DaybookLog"]),
        // A small logger with a stderr and an in-memory handler; no global bootstrap.
        .target(name: "DaybookLog"),
        .executableTarget(name: "daybook", dependencies: ["DaybookCore", "DaybookKafka", "DaybookLog"]),
        .testTarget(name: "DaybookCoreTests", dependencies: ["DaybookCore"]),
        .testTarget(name: "DaybookKafkaTests", dependencies: ["DaybookKafka", "DaybookCore", "DaybookLog"]),
        .testTarget(name: "DaybookEndToEndTests", dependencies: ["DaybookCore", "DaybookKafka", "daybook"]),
    ]
)
