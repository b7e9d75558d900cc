// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "deskd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "deskd", targets: ["deskd"]),
        .executable(name: "deskctl", targets: ["deskctl"]),
        .executable(name: "deskd-session", targets: ["deskd-session"]),
        .executable(name: "deskd-job", targets: ["deskd-job"]),
        .executable(name: "deskd-web", targets: ["deskd-web"]),
        .executable(name: "deskd-auth", targets: ["deskd-auth"]),
        .executable(name: "deskd-files", targets: ["deskd-files"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Property-based tests (DeskCoreTests only): generated inputs, shrunk on failure, with the seed to replay.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // Pure domain logic: no Glibc, no NIO. Everything here is unit-tested without root.
        .target(name: "DeskCore"),
        // libvncclient: the real VNC viewer of the tests and the benchmark (deskd does not link it).
        .systemLibrary(
            name: "CVNCClient",
            pkgConfig: "libvncclient",
            providers: [.apt(["libvncserver-dev"])]
        ),
        // Debian's libcrypto, for the cluster hop's HMAC-SHA256 (DeskCluster): deskd and a desktop's
        // job prove to each other they hold the session's key. Not swift-crypto: its HMAC brings
        // Foundation (and ICU's 30 MB of data) into every binary, and a second BoringSSL to build.
        .systemLibrary(
            name: "CLibCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        // What Swift's Glibc module does not reach: pidfd_open, pipe2, clone3(CLONE_INTO_CGROUP).
        .target(name: "CDeskShims"),
        // What deskd and deskd-session say to each other: the spec, the replies, the commands.
        // Glibc only, as deskd-session is, so the helper still starts in next to no time.
        .target(name: "DeskSessionProtocol"),
        // PAM (libpam0g-dev), for the process that holds each desktop's login session.
        .target(name: "CDeskSession", linkerSettings: [.linkedLibrary("pam")]),
        // What Glibc gives deskctl's client and the OS layer alike: a Unix socket's address
        // (sockaddr_un), the local time zone's clock. Below both, so DeskLinux needs no DeskClient.
        .target(name: "DeskPOSIX", dependencies: ["DeskCore"]),
        // The thin OS layer every process may use: users, /proc and sock_diag, files of another
        // user's, sockets, RFB clients. deskd-web and a cluster node's deskd-job link this one only.
        .target(
            name: "DeskLinux",
            dependencies: [
                "DeskCore",
                "DeskPOSIX",
                "CDeskShims",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The host as only deskd, as root, drives it: logins through deskd-session, web logins
        // through deskd-auth, sessions' directories and cgroups, the web front's process, the
        // daemon's lock, the exit monitor. No process that runs as a user links it.
        .target(
            name: "DeskHost",
            dependencies: [
                "DeskCore",
                "DeskLinux",
                "DeskPOSIX",
                "CDeskShims",
                "DeskSessionProtocol",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A VNC viewer built on libvncclient, for the tests and the benchmark.
        .target(name: "VNCViewer", dependencies: ["DeskCore", "CVNCClient"]),
        // The daemon: session manager, store and control server.
        .target(
            name: "DeskDaemon",
            dependencies: [
                "DeskCore",
                "DeskLinux",
                "DeskHost",
                "DeskPOSIX",
                "DeskSessionProtocol",
                "DeskCluster",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "DeskFrontProtocol",
                "DeskGatewayMetrics",
            ]
        ),
        // What deskd and deskd-web, its web front, say to each other over deskd's front socket,
        // and the values both ends keep: the gateway's settings, grants, counters, the portal's
        // page. No NIO: deskd links this, not the web front's HTTP, WebSocket and TLS.
        .target(name: "DeskFrontProtocol", dependencies: ["DeskCore"]),
        // The gateway's counters at run time, as deskd-web counts them and deskd absorbs them into
        // its metrics: both processes, neither's protocol.
        .target(
            name: "DeskGatewayMetrics",
            dependencies: ["DeskFrontProtocol", .product(name: "CoreMetrics", package: "swift-metrics")]
        ),
        // What deskd-web runs, as an unprivileged user: the browser gateway (noVNC's files,
        // one-time links, a WebSocket relay to each desktop, which deskd logged in to so the VNC
        // password never reaches a browser), the portal's pages and the metrics endpoint, each
        // decision asked of deskd over the front socket.
        .target(
            name: "DeskWeb",
            dependencies: [
                "DeskCore",
                "DeskLinux",
                "DeskFrontProtocol",
                "DeskGatewayMetrics",
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
        // The hop between deskd on a login node and a desktop's Slurm job on a compute node: both
        // sides prove they hold the session's key (HMAC-SHA256) before anything else is said.
        .target(name: "DeskCluster", dependencies: ["DeskCore", "CLibCrypto"]),
        // What deskctl (and the tests) use to talk to deskd. Blocking and small, so the CLI starts fast.
        .target(name: "DeskClient", dependencies: ["DeskCore", "DeskPOSIX"]),
        .executableTarget(
            name: "deskd",
            dependencies: [
                "DeskDaemon",
                "DeskHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The release binary, smaller by 3.8 MB with nothing lost: nothing loads deskd as a
            // library, so its symbols need not be exported (the toolchain exports them all, 2.3 MB
            // stripped), and its relative relocations (position independence: 1.5 MB of them) are
            // packed as DT_RELR, which glibc reads since 2.36 (Debian 12) and ld.bfd writes
            // (gold, the toolchain's default, does not).
            linkerSettings: [.unsafeFlags(["-use-ld=bfd", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                           "-Xlinker", "--no-export-dynamic"], .when(configuration: .release))]
        ),
        // One web login through PAM (service deskd-web), started by deskd as root for each login.
        .executableTarget(name: "deskd-auth", dependencies: ["CDeskSession"]),
        // One file call of a portal user's, as that user: deskd starts it as root, and it
        // becomes the user before it opens anything.
        .executableTarget(name: "deskd-files", dependencies: ["DeskCore", "DeskSessionProtocol", "CDeskShims"]),
        // deskd's web front: the gateway and the metrics endpoint, as an unprivileged user.
        .executableTarget(
            name: "deskd-web",
            dependencies: [
                "DeskWeb",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "deskctl",
            // Not DeskLinux: it would link libvncclient and its TLS stack into every deskctl run.
            dependencies: [
                "DeskCore",
                "DeskClient",
                "DeskPOSIX",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // A release deskctl is one static executable: no dynamic loader, no libstdc++ to map and
            // relocate, which was most of the cost of a run beyond its own work. It looks up no
            // accounts, so static glibc's NSS caveat does not arise. Debug builds stay dynamic.
            // Not a static PIE: ld.gold makes none, ld.bfd 2.40 fails on Foundation's archives, and
            // lld's runs only without the rpath SwiftPM always adds (glibc 2.36 asserts at start).
            // debian/deskd.lintian-overrides says the same, with the measurements.
            linkerSettings: [.unsafeFlags(["-static-executable"], .when(platforms: [.linux], configuration: .release))]
        ),
        // One per desktop, as root: its PAM session, its processes, their logs and exit statuses.
        // Glibc and C only (no Foundation), so it costs a start next to nothing.
        .executableTarget(name: "deskd-session", dependencies: ["CDeskSession", "CDeskShims", "DeskSessionProtocol"]),
        // A cluster desktop's job on a compute node, as its user: Xvnc, the desktop, the relay the
        // login node's gateway reaches it through, its report to deskd, and the end of every process.
        // CDeskShims for pidfds, spawning and prctl(PR_SET_CHILD_SUBREAPER); no PAM: the job is
        // already the user's, logged in by Slurm. A library, so DeskJobTests test its parts.
        .target(name: "DeskJob", dependencies: ["DeskCore", "DeskCluster", "DeskLinux", "DeskSessionProtocol", "CDeskShims"]),
        .executableTarget(name: "deskd-job", dependencies: ["DeskJob"]),
        // The benchmark (scripts/bench): deskd against raw Xtigervnc and vncserver, in one run.
        .executableTarget(name: "deskbench", dependencies: ["DeskCore", "DeskClient", "DeskLinux", "DeskHost", "DeskPOSIX", "VNCViewer"]),
        // TOMLCorpus is toml-test's cases, read through #filePath by TOMLTests rather than bundled.
        // Every parser another party feeds, as a function of bytes: Fuzz/ drives them under libFuzzer,
        // and DeskCoreTests replays Tests/FuzzRegressions through them in every test run.
        .target(
            name: "DeskFuzzTargets",
            dependencies: [
                "DeskCore", "DeskSessionProtocol", "DeskLinux", "DeskWeb", "DeskFrontProtocol", "CDeskShims",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        // The core's invariants as properties too (swift-property-based: shrinking, and a seed to replay a failure).
        .testTarget(
            name: "DeskCoreTests",
            dependencies: ["DeskCore", .product(name: "PropertyBased", package: "swift-property-based")],
            exclude: ["TOMLCorpus"]
        ),
        // The seeds (Fuzz/Corpus) and every input that ever crashed a fuzz target
        // (Tests/FuzzRegressions), through their targets in every test run.
        .testTarget(name: "DeskFuzzTargetsTests", dependencies: ["DeskFuzzTargets", "TestSupport"]),
        // The daemon's decisions under a fake host (Tests/DeskDaemonTests/FakeHost.swift): no root needed.
        .testTarget(
            name: "DeskDaemonTests",
            // DeskWeb too: the front socket's test runs deskd-web's end of it in the same process.
            dependencies: ["DeskCore", "DeskDaemon", "DeskLinux", "DeskHost", "DeskSessionProtocol", "DeskFrontProtocol", "DeskWeb",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "DeskLinuxTests", dependencies: ["DeskCore", "DeskLinux", "DeskHost", "DeskPOSIX", "DeskSessionProtocol", "TestSupport"]),
        // What deskd and its web front say to each other, read back by the same code both ends run.
        .testTarget(name: "DeskFrontProtocolTests", dependencies: ["DeskFrontProtocol", "DeskCore"]),
        // deskctl's side of the control socket against a stand-in deskd in the test's own process.
        .testTarget(name: "DeskClientTests", dependencies: ["DeskClient", "DeskCore", "DeskPOSIX"]),
        // Both ends of the deskd-session protocol: what one writes, the other reads back the same.
        .testTarget(name: "DeskSessionProtocolTests", dependencies: ["DeskSessionProtocol"]),
        // deskd-job's parts beyond the shared display server: its spec, its messages, its private
        // directory, its process sweep and its relay, without Slurm or root.
        .testTarget(name: "DeskJobTests", dependencies: ["DeskJob", "DeskCore", "DeskLinux"]),
        // The cluster hop's handshake over a real socket pair, both sides in this process.
        .testTarget(name: "DeskClusterTests", dependencies: ["DeskCore", "DeskCluster"]),
        // The gateway against a fake authority and a fake Xvnc in this process: no root needed.
        .testTarget(
            name: "DeskWebTests",
            dependencies: [
                "DeskCore",
                "DeskWeb",
                "DeskFrontProtocol",
                "DeskLinux",
                "DeskPOSIX",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                "TestSupport",
            ]
        ),
        // A thread of its own for a test's blocking body (DedicatedThreadExecutor), and a browser
        // as bytes (RawClient) for the gateway's tests and the end-to-end ones.
        .target(name: "TestSupport", dependencies: ["DeskCore", "DeskPOSIX", "DeskLinux"], path: "Tests/TestSupport"),
        // Per-thread credentials, so an end-to-end test can act as another local user.
        .target(name: "CTestShims", path: "Tests/CTestShims"),
        .testTarget(
            name: "DeskEndToEndTests",
            dependencies: ["DeskCore", "DeskClient", "DeskLinux", "DeskHost", "DeskPOSIX", "VNCViewer", "CTestShims", "TestSupport"]
        ),
    ]
)
