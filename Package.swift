// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Daybook",
    products: [
        .executable(name: "daybook", targets: ["daybook"]),
        .library(name: "DaybookCore", targets: ["DaybookCore"]),
    ],
    targets: [
        // Pure arithmetic: events, validation, dedupe, civil days. No I/O.
        .target(name: "DaybookCore"),
        .executableTarget(name: "daybook", dependencies: ["DaybookCore"]),
        .testTarget(name: "DaybookCoreTests", dependencies: ["DaybookCore"]),
        .testTarget(name: "DaybookEndToEndTests", dependencies: ["DaybookCore", "daybook"]),
    ]
)
