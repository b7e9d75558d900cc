// swift-tools-version: 6.2
import PackageDescription

// deskd's fuzzing: one libFuzzer binary over every target in DeskFuzzTargets (the parsers another
// party feeds), chosen by DESKD_FUZZ_TARGET. The modules it fuzzes are deskd's own sources,
// linked here (Sources/DeskCore → ../../Sources/DeskCore, …), so this package depends on the
// root package's packages, not on the root package: only what is fuzzed is compiled, and all of
// it instrumented (the gateway's NIO included, so NIO's HTTP parser and WebSocket decoder guide
// the fuzzer as much as deskd's own code does).
// Built by scripts/fuzz alone, in a scratch path of its own (`swift build -c release
// --sanitize=fuzzer --sanitize=address`): SwiftPM does not rebuild when only --sanitize changes,
// and a binary built without it fuzzes blind.
let package = Package(
    name: "deskd-fuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .target(name: "DeskCore"),
        .target(name: "DeskSessionProtocol"),
        .target(name: "CDeskShims"),
        .target(name: "DeskPOSIX", dependencies: ["DeskCore"]),
        .target(name: "DeskLinux", dependencies: ["DeskCore", "DeskPOSIX", "CDeskShims", "DeskSessionProtocol", .product(name: "Logging", package: "swift-log")]),
        .target(name: "DeskFrontProtocol", dependencies: ["DeskCore"]),
        .target(name: "DeskGatewayMetrics", dependencies: ["DeskFrontProtocol", .product(name: "CoreMetrics", package: "swift-metrics")]),
        .target(
            name: "DeskWeb",
            dependencies: [
                "DeskCore", "DeskLinux", "DeskFrontProtocol", "DeskGatewayMetrics",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "DeskFuzzTargets",
            dependencies: [
                "DeskCore", "DeskSessionProtocol", "DeskLinux", "DeskWeb", "DeskFrontProtocol", "CDeskShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .executableTarget(name: "deskd-fuzz", dependencies: ["DeskFuzzTargets"]),
    ]
)
