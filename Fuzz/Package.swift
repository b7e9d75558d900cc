// swift-tools-version: 6.2
import PackageDescription

// deskd's fuzzing: one libFuzzer binary over every target in DeskFuzzTargets (the parsers another
// party feeds), chosen by DESKD_FUZZ_TARGET. The modules it fuzzes are deskd's own sources,
// linked here (Sources/DeskCore → ../../Sources/DeskCore, …), so this package has no dependency
// and no plugin to build: only what is fuzzed is compiled, and all of it instrumented.
// Built by scripts/fuzz alone, in a scratch path of its own (`swift build -c release
// --sanitize=fuzzer --sanitize=address`): SwiftPM does not rebuild when only --sanitize changes,
// and a binary built without it fuzzes blind.
let package = Package(
    name: "deskd-fuzz",
    targets: [
        .target(name: "DeskCore"),
        .target(name: "DeskSessionProtocol"),
        .target(name: "DeskFuzzTargets", dependencies: ["DeskCore", "DeskSessionProtocol"]),
        .executableTarget(name: "deskd-fuzz", dependencies: ["DeskFuzzTargets"]),
    ]
)
