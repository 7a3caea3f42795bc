// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "switchboard", targets: ["switchboard"]),
        .library(name: "SwitchboardServer", targets: ["SwitchboardServer"]),
        .library(name: "SwitchboardHTTP", targets: ["SwitchboardHTTP"]),
        .library(name: "SwitchboardStore", targets: ["SwitchboardStore"]),
    ],
    targets: [
        // C system libraries, each used only by the one Swift module that owns it.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),

        // Pure domain: no I/O.
        .target(name: "SwitchboardCore", swiftSettings: strict),

        // HTTP/1.1 over our own epoll loops; knows nothing about the product.
        .target(name: "SwitchboardHTTP", dependencies: ["CLinux"], swiftSettings: strict),

        // Storage: SQLite owner, migrations, writer/reader connections.
        .target(name: "SwitchboardStore", dependencies: ["CSQLite"], swiftSettings: strict),

        // Routes, configuration, logging, metrics, services.
        .target(
            name: "SwitchboardServer",
            dependencies: ["SwitchboardCore", "SwitchboardHTTP", "SwitchboardStore"],
            swiftSettings: strict,
            plugins: ["EmbedOpenAPI"]),

        // The one binary: wiring only.
        .executableTarget(name: "switchboard", dependencies: ["SwitchboardServer"], swiftSettings: strict),

        // Build tool that embeds openapi.json into the server binary.
        .executableTarget(name: "embed-resource", path: "Plugins/EmbedTool", swiftSettings: strict),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["embed-resource"]),

        .testTarget(name: "SwitchboardHTTPTests", dependencies: ["SwitchboardHTTP"], swiftSettings: strict),
        .testTarget(name: "SwitchboardStoreTests", dependencies: ["SwitchboardStore"], swiftSettings: strict),
        .testTarget(
            name: "SwitchboardServerTests",
            dependencies: ["SwitchboardServer", "SwitchboardHTTP", "SwitchboardStore", "SwitchboardCore"],
            swiftSettings: strict),
    ]
)
