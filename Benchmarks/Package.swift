// swift-tools-version:6.1
// Benchmarks live in their own package so users of Lattice never inherit
// package-benchmark. Run from this directory:
//   swift package benchmark                      (package-benchmark suites)
//   swift run -c release lattice-merge-figures   (JSON lines for compare/run.sh)
//   swift run -c release lattice-sync-figures propagation|propagation-cli|initial   (the README's sync figures)
//   swift run -c release lattice-model-figures   (typed models against the raw record API)
//   swift run -c release lattice-web-figures STORE   (the library's side of web/bench.py's query figures)
//   swift run -c release lattice-history-figures merge|updates|fetch|at|selective   (history's cost and reads; selective sync)
import Foundation
import PackageDescription

// A package at a path is known by its directory's name: name Lattice's
// package by the name its checkout has, whatever that is.
let lattice = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().standardizedFileURL.lastPathComponent

let package = Package(
    name: "LatticeBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(name: "Workload", dependencies: [
            .product(name: "Lattice", package: lattice), .product(name: "LatticeCore", package: lattice), .product(name: "LatticeCrypto", package: lattice),
        ]),
        .executableTarget(name: "lattice-merge-figures", dependencies: ["Workload", .product(name: "GRDB", package: "GRDB.swift")]),
        .executableTarget(name: "lattice-sync-figures", dependencies: [
            "Workload", .product(name: "Lattice", package: lattice), .product(name: "LatticeCrypto", package: lattice),
            .product(name: "LatticeProtocol", package: lattice), .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .executableTarget(name: "lattice-model-figures", dependencies: ["Workload", .product(name: "Lattice", package: lattice)]),
        .executableTarget(name: "lattice-web-figures", dependencies: [.product(name: "Lattice", package: lattice)]),
        .executableTarget(name: "lattice-history-figures", dependencies: [
            "Workload", .product(name: "Lattice", package: lattice), .product(name: "LatticeCore", package: lattice), .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .executableTarget(
            name: "ModelBenchmarks",
            dependencies: ["Workload", .product(name: "Lattice", package: lattice), .product(name: "Benchmark", package: "package-benchmark")],
            path: "Benchmarks/ModelBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "MergeBenchmarks",
            dependencies: ["Workload", .product(name: "Benchmark", package: "package-benchmark")],
            path: "Benchmarks/MergeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        .executableTarget(
            name: "SyncBenchmarks",
            dependencies: ["Workload", .product(name: "Lattice", package: lattice), .product(name: "Benchmark", package: "package-benchmark")],
            path: "Benchmarks/SyncBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
