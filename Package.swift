// swift-tools-version:6.0
//
// Lattice: CloudKit's data model, replicated between devices with a CRDT.
//
// Layers (dependencies point inward only):
//
//   lattice (CLI entry) -> LatticeCLI   one file per command, JSON output types
//   lattice-demo, lattice-crash-child   executables
//          |
//       Lattice            public API: Container, Database, Zone, Record, Query ...
//        /     \
//  LatticeStore  LatticeCrypto          GRDB/SQLite persistence | libsodium identities, hashes
//        \       |
//      LatticeCore         pure: values, clocks, vectors, merge, change sets, queries (no I/O)
//
//  CSodium                 system-library shim for libsodium
//  LatticeFuzzing          the change-set fuzz target (store + core), for lattice-fuzz-changeset and the tests
import PackageDescription

let package = Package(
    name: "Lattice",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Lattice", targets: ["Lattice"]),
        .library(name: "LatticeCore", targets: ["LatticeCore"]),
        .executable(name: "lattice", targets: ["lattice"]),
        .executable(name: "lattice-demo", targets: ["lattice-demo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]
        ),
        .target(name: "LatticeCore"),
        .target(name: "LatticeCrypto", dependencies: ["CSodium"]),
        .target(
            name: "LatticeStore",
            dependencies: ["LatticeCore", "LatticeCrypto", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .target(name: "Lattice", dependencies: ["LatticeCore", "LatticeCrypto", "LatticeStore"]),
        .target(name: "LatticeCLI", dependencies: ["Lattice", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .executableTarget(name: "lattice", dependencies: ["LatticeCLI"]),
        .executableTarget(name: "lattice-demo", dependencies: ["Lattice"]),
        .executableTarget(name: "lattice-crash-child", dependencies: ["Lattice"]),
        // The change-set fuzzer: a library the tests replay crashers with, and its binary (scripts/fuzz.sh).
        .target(name: "LatticeFuzzing", dependencies: ["LatticeCore", "LatticeStore"]),
        .executableTarget(name: "lattice-fuzz-changeset", dependencies: ["LatticeFuzzing"]),
        .target(name: "LatticeTestSupport", path: "Tests/LatticeTestSupport"),
        .testTarget(name: "LatticeCoreTests", dependencies: ["LatticeCore", "LatticeTestSupport"]),
        .testTarget(name: "LatticeStoreTests", dependencies: ["LatticeStore", "LatticeCore", "LatticeCrypto", "LatticeTestSupport", "LatticeFuzzing", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "LatticeTests", dependencies: ["Lattice", "LatticeCore", "lattice-crash-child"]),
        .testTarget(name: "LatticeCLITests", dependencies: ["LatticeCLI", "Lattice", "lattice", "LatticeTestSupport"]),
    ]
)
