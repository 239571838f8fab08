// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

/// SessionMesh: a paired-device sync transport for Linux.
///
/// Layers (see docs/ARCHITECTURE.md and the README): the pure protocol `SessionMesh`; the
/// daemon's domain values `MeshCore` (device IDs, control reports, delivery vocabulary, the
/// daemon's errors); the libsodium boundary `CSodium` + `MeshCrypto`; the local-API wire format
/// `MeshLocalAPI`; the daemon `MeshDaemon`; the app-side `SessionMeshClient`; and the executables.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

var package = Package(
    name: "SessionMesh",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "SessionMesh", targets: ["SessionMesh"]),
        .library(name: "SessionMeshClient", targets: ["SessionMeshClient"]),
        .library(name: "MeshCrypto", targets: ["MeshCrypto"]),
        .library(name: "MeshDaemon", targets: ["MeshDaemon"]),
        .library(name: "MeshDiscovery", targets: ["MeshDiscovery"]),
        .executable(name: "meshd", targets: ["meshd"]),
        .executable(name: "meshctl", targets: ["meshctl"]),
        .executable(name: "mesh-vectors", targets: ["mesh-vectors"]),
        .executable(name: "mesh-bench", targets: ["mesh-bench"]),
        .executable(name: "mesh-discovery-probe", targets: ["mesh-discovery-probe"]),
        .executable(name: "shared-timer", targets: ["SharedTimer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // Pure protocol: Foundation only.
        .target(name: "SessionMesh", swiftSettings: strict),

        // The daemon's domain values, below the crypto, wire and daemon modules: device IDs,
        // control reports, delivery vocabulary, the daemon's own errors. No C library; NIOCore
        // only for the event-loop task executor daemon and clients share.
        .target(
            name: "MeshCore",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),

        // libsodium boundary.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .target(name: "MeshCrypto", dependencies: ["CSodium", "MeshCore"], swiftSettings: strict),

        // SQLite boundary for the daemon's durable store.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),

        // Avahi boundary: MeshDiscovery is the only importer of CAvahiClient.
        .systemLibrary(
            name: "CAvahiClient",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        .target(
            name: "MeshDiscovery",
            dependencies: ["CAvahiClient", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mesh-discovery-probe",
            dependencies: [
                "MeshDiscovery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // libmosquitto boundary: MeshMQTT is the only importer of CMosquitto. The MQTT client is
        // driven on the caller's NIO event loop (docs/RELAY.md, docs/ARCHITECTURE.md).
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .target(
            name: "MeshMQTT",
            dependencies: [
                "CMosquitto", "MeshCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // Local API wire format shared by the daemon and the client library.
        .target(
            name: "MeshLocalAPI",
            dependencies: [
                "SessionMesh", "MeshCore",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // Daemon core: a library so tests can run several daemons in one process.
        .target(
            name: "MeshDaemon",
            dependencies: [
                "SessionMesh", "MeshCore", "MeshCrypto", "MeshLocalAPI", "CSQLite", "MeshDiscovery", "MeshMQTT",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),

        // App-side client of the local API.
        .target(
            name: "SessionMeshClient",
            dependencies: [
                "SessionMesh", "MeshCore", "MeshLocalAPI",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        .executableTarget(
            name: "meshd",
            dependencies: [
                "MeshDaemon", "MeshLocalAPI", "MeshCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "meshctl",
            dependencies: [
                "SessionMeshClient", "MeshLocalAPI", "SessionMesh", "MeshCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        // Example app: a stopwatch shared by paired devices (Examples/SharedTimer/README.md).
        .executableTarget(
            name: "SharedTimer",
            dependencies: [
                "SessionMesh", "SessionMeshClient", "MeshLocalAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/SharedTimer",
            exclude: ["README.md"],
            swiftSettings: strict
        ),
        .executableTarget(name: "mesh-vectors", dependencies: ["MeshCrypto"], swiftSettings: strict),
        .executableTarget(
            name: "mesh-channel-bench",
            dependencies: [
                "MeshDaemon", "MeshLocalAPI",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "mesh-bench",
            dependencies: [
                "SessionMesh", "MeshCore", "MeshCrypto", "MeshDaemon", "MeshLocalAPI", "SessionMeshClient", "CSQLite", "MeshMQTT",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        // Deterministic simulator of the daemon core (docs/SIMULATION.md): N routers and stores on
        // virtual time over a simulated network, faults and crashes chosen from one seed.
        .target(
            name: "MeshSimulation",
            dependencies: [
                "MeshDaemon", "MeshCore", "MeshMQTT", "SessionMesh",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),

        .testTarget(name: "SessionMeshTests", dependencies: ["SessionMesh"], swiftSettings: strict),
        .testTarget(
            name: "MeshSimulationTests",
            dependencies: ["MeshSimulation", "MeshDaemon", "MeshMQTT", "SessionMesh", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MeshCryptoTests",
            dependencies: ["MeshCrypto", "MeshCore"],
            resources: [.copy("Vectors")],
            swiftSettings: strict
        ),
        .testTarget(name: "MeshDiscoveryTests", dependencies: ["MeshDiscovery"], swiftSettings: strict),
        .testTarget(
            name: "SessionMeshClientTests",
            dependencies: [
                "SessionMeshClient", "MeshLocalAPI", "SessionMesh",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MeshDaemonTests",
            dependencies: [
                "MeshDaemon", "MeshLocalAPI", "SessionMeshClient", "SessionMesh", "MeshCrypto", "MeshDiscovery", "MeshMQTT",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
    ]
)

// The libFuzzer harnesses (Fuzz/, docs/FUZZING.md): one executable holding every harness, declared
// only when MESH_FUZZ=1 so plain `swift build` / `swift test` never compile it; scripts/fuzz builds
// it in its own scratch folder (.build-fuzz). This package's modules are compiled with coverage and
// AddressSanitizer as one flag, `-sanitize=fuzzer,address` (swiftc keeps only the last of several
// `-sanitize=` flags, so SwiftPM's `--sanitize` options, passed one by one, would drop one of them);
// the dependencies are not instrumented. libFuzzer supplies `main`.
if Context.environment["MESH_FUZZ"] == "1" {
    let sanitize: [SwiftSetting] = [.unsafeFlags(["-sanitize=fuzzer,address"])]
    let fuzzed: Set<String> = ["SessionMesh", "MeshCore", "MeshCrypto", "MeshLocalAPI", "MeshDaemon", "MeshDiscovery"]
    for target in package.targets where fuzzed.contains(target.name) {
        target.swiftSettings = (target.swiftSettings ?? []) + sanitize
    }
    package.targets.append(.executableTarget(
        name: "mesh-fuzz",
        dependencies: [
            "SessionMesh", "MeshCrypto", "MeshLocalAPI", "MeshDaemon", "MeshDiscovery",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ],
        path: "Fuzz",
        exclude: ["seeds"],
        swiftSettings: strict + sanitize + [.unsafeFlags(["-parse-as-library"])],
        linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
    ))
}
