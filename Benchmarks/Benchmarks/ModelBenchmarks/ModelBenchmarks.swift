import Benchmark
import Foundation
import Lattice
import Workload

// Typed models against the raw record API: a save of 1,000 objects, and a
// filtered, sorted page of 50 out of 10,000 with the rating indexed.

// Set in a benchmark's setup, read by its iterations, cleared in its teardown:
// package-benchmark runs those one after another, never two at once.
nonisolated(unsafe) var modelRig: (root: URL, models: ModelContainer, raw: Container)?
nonisolated(unsafe) var inserted = 0

func openRig() async throws {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("lattice-model-bench-\(UUID().uuidString)")
    let models = try await ModelContainer(for: BenchMovie.self, configuration: ModelConfiguration("bench", directory: root.appendingPathComponent("models"), sync: .none))
    let raw = try Container(identifier: "bench", directory: root.appendingPathComponent("raw"))
    let context = ModelContext(models)
    for i in 0..<10_000 { context.insert(ModelWorkload.object(i)) }
    try context.save()
    _ = try await raw.privateCloudDatabase.modifyRecords(saving: (0..<10_000).map(ModelWorkload.record), deleting: [], savePolicy: .changedKeys)
    try models.store.addIndex([.queryable, .sortable], field: "rating", of: "BenchMovie")
    try raw.addIndex([.queryable, .sortable], field: "rating", of: "BenchMovie")
    modelRig = (root, models, raw)
}

func closeRig() async {
    guard let rig = modelRig else { return }
    await rig.models.close()
    try? FileManager.default.removeItem(at: rig.root)
    modelRig = nil
}

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(20), maxIterations: 200,
                                                setup: { try await openRig() }, teardown: { await closeRig() })

    Benchmark("models: insert and save 1,000 objects", configuration: configuration) { benchmark in
        let context = ModelContext(modelRig!.models)
        benchmark.startMeasurement()
        for _ in 0..<1_000 {
            inserted += 1
            context.insert(ModelWorkload.object(10_000 + inserted))
        }
        try context.save()
        benchmark.stopMeasurement()
    }

    Benchmark("raw: modifyRecords of 1,000 records", configuration: configuration) { benchmark in
        let records = (0..<1_000).map { _ in
            inserted += 1
            return ModelWorkload.record(10_000 + inserted)
        }
        benchmark.startMeasurement()
        _ = try modelRig!.raw.privateCloudDatabase.modifyRecords(saving: records, deleting: [], savePolicy: .changedKeys)
        benchmark.stopMeasurement()
    }

    Benchmark("models: fetch a filtered, sorted page of 50", configuration: configuration) { _ in
        let page = try ModelContext(modelRig!.models).fetch(ModelWorkload.pageDescriptor)
        precondition(page.count == 50)
    }

    Benchmark("raw: query a filtered, sorted page of 50", configuration: configuration) { _ in
        let page = try modelRig!.raw.privateCloudDatabase.records(matching: ModelWorkload.pageQuery, resultsLimit: 50).matchResults
        precondition(page.count == 50)
    }
}
