// swift-tools-version:6.0
//
// Lattice: CloudKit's data model, replicated between devices with a CRDT.
//
// Layers (dependencies point inward only):
//
//   lattice (CLI entry) -> LatticeCLI   one file per command, JSON output types; imports Lattice, LatticeWeb and ArgumentParser only
//                          LatticeWeb   serve --http: CloudKit Web Services, event streams, /metrics (SwiftNIO HTTP, swift-prometheus)
//   lattice-demo, lattice-crash-child, movies-example, readme-quickstart   executables of the library
//          |
//       Lattice            public API: models (@Model, ModelContainer, ModelContext, FetchDescriptor), Container, Database,
//          |               Zone, Record, Query ...; the sync node. It re-exports only the engine types an app meets
//          |               (PublicTypes.swift); tools and tests import LatticeCore & co. for the rest
//          |               LatticeMacros: the @Model macro (swift-syntax), a compiler plugin Lattice declares
//        /      |      \
//  LatticeStore  |   LatticeTransport   GRDB/SQLite persistence | SwiftNIO: framing, handshake, encryption, sessions
//       |        |      /
//       |   LatticeProtocol            pure: sync messages, wire encoding, session state machine, the delegate it needs
//        \       |   /
//      LatticeCore + LatticeCrypto     pure: values, clocks, vectors, merge, change sets, queries | libsodium
//
//  LatticeNode             pure: the node's policy as values (dials, connections, asset schedule); Lattice's SyncNode runs it
//  LatticeDiscovery        dns_sd advertiser and browser (knows nothing of records); only Lattice uses it
//  CSodium, CDNSSD         system-library shims for libsodium and the DNS-SD API (Avahi's on Linux)
//  LatticeFuzzing          the change-set fuzz target (store + core), for lattice-fuzz-changeset and the tests
//  LatticeRawClient        a plain TCP client of the framing, for lattice-flood (a hostile client) and the tests
import CompilerPluginSupport
import PackageDescription

/// The static Foundation's own libraries, which a link with -static-stdlib alone leaves out
/// (SwiftPM's --static-swift-stdlib adds them; a linker setting has to name them).
let staticFoundation = ["Foundation", "FoundationInternationalization", "_FoundationICU", "FoundationEssentials", "_FoundationCollections", "_FoundationCShims", "CoreFoundation"]
    .flatMap { ["-Xlinker", "-l\($0)"] }
let staticFoundationGroup = ["-Xlinker", "--start-group"] + staticFoundation + ["-Xlinker", "-lstdc++", "-Xlinker", "--end-group"]

let package = Package(
    name: "Lattice",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Lattice", targets: ["Lattice"]),
        .library(name: "LatticeCore", targets: ["LatticeCore"]),
        .library(name: "LatticeCrypto", targets: ["LatticeCrypto"]),
        .library(name: "LatticeProtocol", targets: ["LatticeProtocol"]),
        .executable(name: "lattice", targets: ["lattice"]),
        .executable(name: "lattice-demo", targets: ["lattice-demo"]),
        .executable(name: "movies-example", targets: ["movies-example"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `swift package generate-documentation --target Lattice`: the public API's DocC (the test command builds it).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        // No pkg-config here: Avahi's .pc file adds -D_REENTRANT, which SwiftPM warns about on every build.
        .systemLibrary(name: "CDNSSD", providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
        .target(name: "LatticeCore", dependencies: ["LatticeCrypto"]),
        // Avahi's libraries are loaded when discovery starts (Sources/CDNSSD/shim.h), not linked.
        .target(name: "LatticeDiscovery", dependencies: ["CDNSSD"]),
        .target(name: "LatticeCrypto", dependencies: ["CSodium"]),
        .target(
            name: "LatticeStore",
            dependencies: ["LatticeCore", "LatticeCrypto", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")]
        ),
        .target(name: "LatticeProtocol", dependencies: ["LatticeCore", "LatticeCrypto"]),
        // The node's policy as values (dial plan, connection table, asset schedule, status debounce): time is an input, no I/O.
        .target(name: "LatticeNode", dependencies: ["LatticeCore", "LatticeProtocol", .product(name: "NIOCore", package: "swift-nio")]),
        .target(
            name: "LatticeTransport",
            dependencies: [
                "LatticeCore", "LatticeCrypto", "LatticeProtocol",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The @Model macro: a class's stored properties become a record type's fields.
        .macro(name: "LatticeMacros", dependencies: [
            .product(name: "SwiftSyntax", package: "swift-syntax"), .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftCompilerPlugin", package: "swift-syntax"), .product(name: "SwiftDiagnostics", package: "swift-syntax"),
        ]),
        .target(
            name: "Lattice",
            dependencies: [
                "LatticeMacros", "LatticeCore", "LatticeCrypto", "LatticeStore", "LatticeProtocol", "LatticeNode", "LatticeTransport", "LatticeDiscovery",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The node on the web (`serve --http`): CloudKit Web Services, event streams and /metrics over SwiftNIO's HTTP/1.1,
        // an adapter over the library and the node's events (it imports Lattice, nothing of the engine).
        .target(name: "LatticeWeb", dependencies: [
            "Lattice",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // The CLI is an app of the library: Lattice (and LatticeWeb for serve --http) and ArgumentParser, nothing of the engine.
        .target(name: "LatticeCLI", dependencies: ["Lattice", "LatticeWeb", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Release builds on Linux link the Swift runtime and Foundation statically, into a
        // position-dependent executable: no shared libraries of Swift's to load, and none of the
        // 105,000 relocations a position-independent one takes at every start (README, CLI start).
        .executableTarget(
            name: "lattice", dependencies: ["LatticeCLI"],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xclang-linker", "-no-pie"] + staticFoundationGroup, .when(platforms: [.linux], configuration: .release))]
        ),
        .executableTarget(name: "lattice-demo", dependencies: ["Lattice"]),
        // The seeds' models on two containers that sync on loopback (`swift run movies-example`).
        .executableTarget(name: "movies-example", dependencies: ["Lattice"]),
        // The README's library quick start, so that it compiles (scripts/check-docs.py keeps the two equal).
        .executableTarget(name: "readme-quickstart", dependencies: ["Lattice"]),
        .executableTarget(name: "lattice-crash-child", dependencies: ["Lattice", "LatticeCore"]),
        // A hostile client (throwaway identities, oversized messages) for the flood test and benchmark.
        .executableTarget(name: "lattice-flood", dependencies: ["LatticeCrypto", "LatticeProtocol", "LatticeRawClient"]),
        // A plain blocking TCP client of Lattice's framing and nothing more: what it sends is up to its caller.
        .target(name: "LatticeRawClient"),
        // The change-set fuzzer: a library the tests replay crashers with, and its binary (scripts/fuzz.sh).
        .target(name: "LatticeFuzzing", dependencies: ["LatticeCore", "LatticeCrypto", "LatticeStore"]),
        .executableTarget(name: "lattice-fuzz-changeset", dependencies: ["LatticeFuzzing"]),
        .target(name: "LatticeTestSupport", dependencies: ["LatticeCore", "LatticeCrypto", "LatticeStore"], path: "Tests/LatticeTestSupport"),
        .testTarget(name: "LatticeCoreTests", dependencies: ["LatticeCore", "LatticeCrypto", "LatticeTestSupport"]),
        .testTarget(name: "LatticeCryptoTests", dependencies: ["LatticeCrypto"]),
        .testTarget(name: "LatticeNodeTests", dependencies: ["LatticeNode", "LatticeCore", "LatticeProtocol", .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(name: "LatticeDiscoveryTests", dependencies: ["LatticeDiscovery"]),
        .testTarget(name: "LatticeProtocolTests", dependencies: ["LatticeProtocol", "LatticeCore", "LatticeCrypto", "LatticeTestSupport"]),
        .testTarget(name: "LatticeTransportTests", dependencies: [
            "LatticeRawClient",
            "LatticeTransport", "LatticeProtocol", "LatticeCrypto", "LatticeCore", "LatticeTestSupport",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOTestUtils", package: "swift-nio"),
        ]),
        .testTarget(name: "LatticeStoreTests", dependencies: ["LatticeStore", "LatticeCore", "LatticeCrypto", "LatticeTestSupport", "LatticeFuzzing", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "LatticeTests", dependencies: [
            "LatticeRawClient",
            "Lattice", "LatticeCore", "LatticeCrypto", "LatticeProtocol", "LatticeTestSupport", "lattice-crash-child",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "LatticeWebTests", dependencies: ["LatticeWeb", "Lattice", "LatticeTestSupport"]),
        .testTarget(name: "LatticeModelTests", dependencies: ["Lattice", "LatticeTestSupport"]),
        .testTarget(name: "LatticeMacroTests", dependencies: [
            "LatticeMacros", .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax"),
        ]),
        .testTarget(name: "LatticeCLITests", dependencies: [
            "LatticeRawClient",
            "LatticeCLI", "Lattice", "LatticeCore", "LatticeStore", "lattice", "lattice-flood", "LatticeTestSupport", "LatticeCrypto", "LatticeProtocol",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
    ]
)

// The test command (scripts/test.sh) builds Lattice's own targets with warnings as errors;
// dependencies keep theirs suppressed, as SwiftPM builds them.
if Context.environment["LATTICE_WARNINGS_AS_ERRORS"] == "1" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-warnings-as-errors"])]
    }
}
