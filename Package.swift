// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "switchboard", targets: ["switchboard"]),
        .executable(name: "switchboard-dev", targets: ["switchboard-dev"]),
        .library(name: "SwitchboardServer", targets: ["SwitchboardServer"]),
        .library(name: "SwitchboardHTTP", targets: ["SwitchboardHTTP"]),
        .library(name: "SwitchboardStore", targets: ["SwitchboardStore"]),
        .library(name: "SwitchboardWire", targets: ["SwitchboardWire"]),
        .library(name: "SwitchboardKit", targets: ["SwitchboardKit"]),
        .library(name: "SwitchboardKitTesting", targets: ["SwitchboardKitTesting"]),
        .library(name: "SwitchboardCallKit", targets: ["SwitchboardCallKit"]),
    ],
    targets: [
        // C system libraries, each used only by the one Swift module that owns it.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "CNGHTTP2", path: "Sources/CNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CTLS", path: "Sources/CTLS", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CMaxMindDB", path: "Sources/CMaxMindDB", pkgConfig: "libmaxminddb",
            providers: [.apt(["libmaxminddb-dev"])]),

        // A filter in front of nghttp2_submit_rst_stream that keeps libcurl 7.88.1 from resetting
        // streams that are already closed (see its source); linked into every binary that pushes.
        .target(name: "CH2ResetFilter", linkerSettings: [.linkedLibrary("nghttp2"), .linkedLibrary("dl")]),

        // Services and the group that starts them in order and stops them in reverse on SIGTERM/SIGINT.
        .target(name: "SwitchboardLifecycle", dependencies: ["SwitchboardPOSIX"], swiftSettings: strict),

        // Pure domain: no I/O.
        .target(name: "SwitchboardCore", dependencies: ["SwitchboardWire"], swiftSettings: strict),

        // The push protocols without a transport (as APNSwift's APNSCore): payload builders,
        // the vendors' request and answer rules, reason tables, retry policy, token clocks.
        // Pure: shared by the push layer and the push emulator.
        .target(name: "SwitchboardPushCore", dependencies: ["SwitchboardWire"], swiftSettings: strict),

        // Codable wire types shared by the server and the SDK; Foundation only.
        .target(name: "SwitchboardWire", swiftSettings: strict),

        // The client SDK (Foundation only, so it builds for iOS): API client, event feed, the
        // CallCoordinator over the CallSystem seam, relay media, Call Directory, meetings, live
        // location, the E2EE queue.
        .target(name: "SwitchboardKit", dependencies: ["SwitchboardWire"], swiftSettings: strict),

        // Signature stubs of exactly the CallKit, PushKit and AVFAudio API the adapter uses, so
        // that Linux type-checks the adapter and runs its mapping tests. Never built on Apple
        // platforms, where the real frameworks are used.
        .target(name: "AppleFrameworkStubs", swiftSettings: strict),

        // The Apple adapter: CallKit `CallSystem`, PushKit receiver, audio session, the relay's
        // microphone and speaker, Call Directory extension, reachability and memory pressure.
        .target(
            name: "SwitchboardCallKit",
            dependencies: [
                "SwitchboardKit", "SwitchboardWire",
                .target(name: "AppleFrameworkStubs", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strict),

        // OpenSSL: random, hashes, HMAC, scrypt, AES-256-GCM, Ed25519, ES256/RS256 signatures, JWT.
        .target(name: "SwitchboardCrypto", dependencies: ["CCrypto"], swiftSettings: strict),

        // Command-line option scanning and CommandLineProgram (help and version from one table of
        // commands), for both executables.
        .target(name: "SwitchboardCLI", swiftSettings: strict),

        // System calls (EINTR, errno as a typed error), the monotonic clock, TCP socket set-up and
        // joinable threads, for every module that makes them.
        .target(name: "SwitchboardPOSIX", swiftSettings: strict),

        // JSON-lines logs, Prometheus metrics and log throttling, for every layer above.
        .target(name: "SwitchboardObservability", dependencies: ["SwitchboardCore"], swiftSettings: strict),

        // HTTP/1.1 over our own epoll loops; knows nothing about the product.
        // SwitchboardCrypto: SHA-1 for the WebSocket handshake.
        .target(
            name: "SwitchboardHTTP",
            dependencies: ["CLinux", "SwitchboardCrypto", "SwitchboardObservability", "SwitchboardPOSIX"],
            swiftSettings: strict),

        // Push: the outbox dispatcher (over PushOutboxStore), the PushChannel seam and its channels
        // (APNs VoIP and alert, FCM, Huawei, Xiaomi, OPPO, vivo) over SwitchboardPushCore's rules,
        // the HTTP/2 transport (libcurl multi).
        .target(
            name: "SwitchboardPush",
            dependencies: [
                "CCurl", "CH2ResetFilter", "SwitchboardPushCore", "SwitchboardCrypto", "SwitchboardLifecycle",
                "SwitchboardObservability", "SwitchboardWire",
            ],
            swiftSettings: strict),

        // A local stand-in for APNs, FCM, Huawei, Xiaomi, OPPO and vivo (HTTP/2 over nghttp2, h2c or
        // TLS), for development and tests.
        .target(
            name: "SwitchboardAPNsEmulator",
            dependencies: [
                "CNGHTTP2", "CTLS", "SwitchboardCrypto", "SwitchboardPOSIX", "SwitchboardCore", "SwitchboardPushCore",
                "SwitchboardObservability", "SwitchboardCLI",
                "SwitchboardLifecycle",
            ],
            swiftSettings: strict),

        // Storage behind SQLStore: SQLite (WAL, writer/readers, migrations) and PostgreSQL (libpq,
        // migrator, LISTEN), and every repository, a folder per aggregate (Repositories/), with both
        // schemas (Schema/) and the copy and backup tools (Maintenance/).
        .target(
            name: "SwitchboardStore",
            dependencies: [
                "CSQLite", "CLibPQ", "SwitchboardCore", "SwitchboardPushCore", "SwitchboardWire",
                "SwitchboardObservability",
            ],
            swiftSettings: strict),

        // City lookup from an address in a MaxMind-format database (libmaxminddb).
        .target(name: "SwitchboardGeo", dependencies: ["CMaxMindDB"], swiftSettings: strict),

        // Routes, services, configuration, the CLI, EmbeddedServer, ServerStore (the unit of work that wakes the event feed).
        .target(
            name: "SwitchboardServer",
            dependencies: [
                "SwitchboardCore", "SwitchboardPushCore", "SwitchboardHTTP", "SwitchboardStore", "SwitchboardWire",
                "SwitchboardCrypto",
                "SwitchboardPush", "SwitchboardLifecycle", "SwitchboardObservability", "SwitchboardCLI",
                "SwitchboardGeo",
            ],
            swiftSettings: strict,
            plugins: ["EmbedOpenAPI"]),

        // Weak networks on loopback: a TCP proxy that applies a named network profile.
        .target(
            name: "SwitchboardNetSim", dependencies: ["SwitchboardPOSIX", "SwitchboardCLI", "SwitchboardLifecycle"],
            swiftSettings: strict),

        // `switchboard-dev demo`, `bench wakeup` and `bench relay`: the server, the push emulator and
        // simulated phones in one process.
        .target(
            name: "SwitchboardDemo",
            dependencies: [
                "SwitchboardServer", "SwitchboardHTTP", "SwitchboardAPNsEmulator", "SwitchboardCrypto",
                "SwitchboardKit", "SwitchboardKitTesting",
                "SwitchboardWire", "SwitchboardNetSim", "SwitchboardObservability", "SwitchboardTesting",
                "SwitchboardCore", "SwitchboardCLI", "SwitchboardPOSIX",
                "SwitchboardLifecycle",
            ],
            swiftSettings: strict),

        // The production server: wiring only. It links no test double, emulator or proxy
        // (scripts/check-lean-server.sh holds it to that).
        .executableTarget(name: "switchboard", dependencies: ["SwitchboardServer"], swiftSettings: strict),

        // The developer tools: demo, bench wakeup, bench relay, proxy, push-emulator. Wiring only.
        .executableTarget(
            name: "switchboard-dev",
            dependencies: [
                "SwitchboardServer", "SwitchboardAPNsEmulator", "SwitchboardDemo", "SwitchboardNetSim",
                "SwitchboardCLI",
            ],
            swiftSettings: strict),

        // Benchmark program: pushes per second through the APNs provider (make bench).
        .executableTarget(
            name: "push-bench",
            dependencies: [
                "SwitchboardPush", "SwitchboardPushCore", "SwitchboardCrypto", "SwitchboardObservability",
                "SwitchboardWire",
            ],
            path: "Benchmarks/PushBench", swiftSettings: strict),

        // Build tool that embeds openapi.json into the server binary.
        .executableTarget(name: "embed-resource", path: "Plugins/EmbedTool", swiftSettings: strict),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["embed-resource"]),

        // Test support for this package's tests and the demo (not a product): loopback clients,
        // polling helpers, a process launcher, a MaxMind database writer.
        .target(name: "SwitchboardTesting", swiftSettings: strict),

        // For app developers' tests too (Foundation only): a CallKit that enforces its contract,
        // simulated media, a manual clock and a whole simulated phone.
        .target(
            name: "SwitchboardKitTesting", dependencies: ["SwitchboardKit", "SwitchboardWire"], swiftSettings: strict),

        .testTarget(
            name: "SwitchboardHTTPTests", dependencies: ["SwitchboardHTTP", "SwitchboardTesting"],
            exclude: ["websocket_interop.py"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardCoreTests", dependencies: ["SwitchboardCore", "SwitchboardWire"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardPushCoreTests", dependencies: ["SwitchboardPushCore", "SwitchboardWire"],
            swiftSettings: strict),
        .testTarget(
            name: "SwitchboardObservabilityTests", dependencies: ["SwitchboardObservability"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardLifecycleTests", dependencies: ["SwitchboardLifecycle", "SwitchboardTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "SwitchboardKitTests",
            // SwitchboardCrypto: the encrypted-push tests seal payloads as the server does.
            dependencies: [
                "SwitchboardKit", "SwitchboardKitTesting", "SwitchboardWire", "SwitchboardTesting", "SwitchboardCrypto",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "SwitchboardCallKitTests",
            dependencies: [
                "SwitchboardCallKit", "SwitchboardKit", "SwitchboardKitTesting", "SwitchboardWire",
                .target(name: "AppleFrameworkStubs", condition: .when(platforms: [.linux])),
            ],
            swiftSettings: strict),
        .testTarget(name: "SwitchboardDemoTests", dependencies: ["SwitchboardDemo"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardNetSimTests", dependencies: ["SwitchboardNetSim", "SwitchboardTesting"],
            swiftSettings: strict),
        .testTarget(
            name: "SwitchboardStoreTests", dependencies: ["SwitchboardStore", "SwitchboardTesting"],
            swiftSettings: strict),
        .testTarget(name: "SwitchboardCryptoTests", dependencies: ["SwitchboardCrypto"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardGeoTests", dependencies: ["SwitchboardGeo", "SwitchboardTesting"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardAPNsEmulatorTests",
            dependencies: [
                "SwitchboardAPNsEmulator", "SwitchboardCrypto", "CNGHTTP2", "SwitchboardTesting", "SwitchboardPush",
                "SwitchboardCore", "SwitchboardPushCore", "SwitchboardCLI", "SwitchboardPOSIX",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "SwitchboardPushTests",
            dependencies: ["SwitchboardPush", "SwitchboardPushCore", "SwitchboardCrypto", "SwitchboardTesting"],
            exclude: ["Transport/h2_test_server.py"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardServerTests",
            dependencies: [
                "SwitchboardServer", "SwitchboardHTTP", "SwitchboardStore", "SwitchboardCore", "SwitchboardPushCore",
                "SwitchboardWire",
                "SwitchboardCrypto", "SwitchboardTesting", "SwitchboardPush", "SwitchboardKit", "SwitchboardKitTesting",
                "SwitchboardObservability", "SwitchboardLifecycle", "SwitchboardCLI",
                "SwitchboardNetSim",  // SplitMix64, for seeded histories
            ],
            swiftSettings: strict),
    ]
)
