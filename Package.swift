// swift-tools-version: 6.1
import PackageDescription

// Layers, from the bottom up (nothing imports a layer above it):
//   TSyncModel   JSON values, system properties, identifiers, timestamps, the error type
//   TSyncQuery   OData $filter/$orderby/$select parsing and SQL rendering (SQLite, PostgreSQL)
//   TSyncEngine  the client: local store, operation queue, push/pull, conflicts, HTTP client
//   TSyncServer  the server: Mobile Apps v2 routes, storage backends, accounts
//   TSyncCLI     the command line: one file per command, formatting, exit codes
//   tsync        the executable: runs TSyncCLI's root command
let package = Package(
    name: "tsync",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tsync", targets: ["tsync"]),
        .library(name: "TSyncEngine", targets: ["TSyncEngine"]),
        .library(name: "TSyncServer", targets: ["TSyncServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.65.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.21.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.20.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.27.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        // Already in the graph through Hummingbird; named for the server's own shutdown notice.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        // `swift package generate-documentation`: the DocC catalog rendered in the test command.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The server's series go through swift-metrics (a program embedding it picks the backend);
        // swift-prometheus renders `/metrics` from a registry of the server's own.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
    ],
    targets: [
        .target(name: "TSyncModel"),
        .target(name: "TSyncQuery", dependencies: ["TSyncModel"]),
        // What swift-nio's connection errors mean, for the client's messages and the server's.
        .target(
            name: "TSyncTransport",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]
        ),
        .target(
            name: "TSyncEngine",
            dependencies: [
                "TSyncModel",
                "TSyncQuery",
                "TSyncTransport",
                "CSQLiteSettings",
                "CSQLiteWriteback",
                "TSyncSQLite",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // SQLite's process-wide settings (`sqlite3_config`, variadic: not callable from Swift).
        .systemLibrary(name: "CSQLiteSettings"),
        // SQLite's writes handed to the disk as they go (`SQLiteSettings.writebackBytes`).
        .target(name: "CSQLiteWriteback", linkerSettings: [.linkedLibrary("sqlite3")]),
        // What the store and the server share of SQLite below GRDB.
        .target(
            name: "TSyncSQLite",
            dependencies: [
                "TSyncModel",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .systemLibrary(
            name: "CArgon2",
            pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]
        ),
        .target(
            name: "TSyncServer",
            dependencies: [
                "TSyncModel",
                "TSyncQuery",
                "TSyncTransport",
                "TSyncSQLite",
                "CArgon2",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The live route answers its held requests at once when the server shuts down.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "TSyncCLI",
            dependencies: [
                "TSyncModel",
                "TSyncQuery",
                "TSyncEngine",
                "TSyncServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "tsync", dependencies: ["TSyncCLI"]),
        // The benchmark baseline of scripts/bench-sync.sh (the SDKs' way to pull), not part of tsync.
        .executableTarget(name: "tsync-pull-baseline", dependencies: ["TSyncEngine", "TSyncModel"]),
        // The ceiling of scripts/bench-push-ceiling.sh (the server's storage writing on its own), not part of tsync.
        .executableTarget(name: "tsync-write-ceiling", dependencies: ["TSyncServer", "TSyncModel"]),
        // PropertyBased for the generated-input tests of the JSON model and timestamps.
        .testTarget(
            name: "TSyncModelTests",
            dependencies: ["TSyncModel", .product(name: "PropertyBased", package: "swift-property-based")]
        ),
        // GRDB only to execute the rendered SQLite SQL against a real database.
        .testTarget(
            name: "TSyncQueryTests",
            dependencies: ["TSyncQuery", "TSyncModel", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "TSyncEngineTests",
            dependencies: ["TSyncEngine", "TSyncModel", "TSyncQuery", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "TSyncServerTests",
            dependencies: [
                "TSyncModel",
                "TSyncQuery",
                "TSyncServer",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The command line's pure parts in-process: the config file reader, formats, messages.
        .testTarget(name: "TSyncCLITests", dependencies: ["TSyncCLI", "TSyncModel", "TSyncEngine"]),
        // Runs the built `tsync` binary against a real `tsync serve` on loopback.
        .testTarget(name: "TSyncEndToEndTests", dependencies: ["tsync", "TSyncModel"]),
        // Imports the libraries plainly, as a program outside the package does: only what is public.
        .testTarget(
            name: "TSyncLibraryTests",
            dependencies: [
                "TSyncEngine", "TSyncServer", "TSyncModel", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
