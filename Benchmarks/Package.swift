// swift-tools-version:6.1
// Benchmarks live in their own package so users of Lattice never inherit
// package-benchmark. Run from this directory:
//   swift package benchmark                      (package-benchmark suites)
//   swift run -c release lattice-merge-figures   (JSON lines for compare/run.sh)
import PackageDescription

let package = Package(
    name: "LatticeBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: "../"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(name: "Workload", dependencies: [.product(name: "Lattice", package: "main"), .product(name: "LatticeCore", package: "main")]),
        .executableTarget(name: "lattice-merge-figures", dependencies: ["Workload"]),
        .executableTarget(
            name: "MergeBenchmarks",
            dependencies: ["Workload", .product(name: "Benchmark", package: "package-benchmark")],
            path: "Benchmarks/MergeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
    ]
)
