import Benchmark
import Foundation
import Lattice
@_spi(Tools) import LatticeCore
import Workload

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(20), maxIterations: 5)
    let records = 100_000

    for scenario in Workload.Scenario.allCases {
        Benchmark("merge in memory, \(scenario.rawValue), \(records) records x 8 fields", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let (receiver, changeSet) = try Workload.prepareMemory(scenario, records: records)
            benchmark.startMeasurement()
            blackHole(try receiver.apply(changeSet))
            benchmark.stopMeasurement()
        }
        Benchmark("merge into the store, \(scenario.rawValue), \(records) records x 8 fields", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (receiver, changeSet) = try Workload.prepareStore(scenario, records: records, directory: directory)
            benchmark.startMeasurement()
            blackHole(try receiver.apply(changeSet: changeSet))
            benchmark.stopMeasurement()
        }
    }

    Benchmark("single-record save") { benchmark in
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try Container(identifier: "bench", directory: directory).privateCloudDatabase
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            var record = Record(recordType: "Track", recordName: Workload.name(i))
            for (name, value) in Workload.fields(record: i, generation: 0) { record[name] = value }
            blackHole(try database.save(record))
        }
    }

    // Each iteration saves 1,000 new records into the same store: the steady
    // state of an app writing in batches (the first batch also defines the schema).
    let batches = BatchRig()
    Benchmark(
        "batched save, 1,000 records of 8 fields per modifyRecords",
        configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo, maxDuration: .seconds(10), maxIterations: 100),
        closure: { benchmark in
            let batch = batches.makeBatch()
            benchmark.startMeasurement()
            blackHole(try batches.save(batch))
        },
        setup: { try batches.prepare() }, teardown: { batches.remove() })

    // The workload's Track type has title (sortable) and rating (queryable) indexed.
    for count in [100_000, 1_000_000] {
        let rig = QueryRig(records: count)
        Benchmark(
            "sorted, filtered page of 50 out of \(count) records, indexed (rating >= X, sorted by title)",
            configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(15), maxIterations: 2_000),
            closure: { _ in
                let query = Query(recordType: "Track", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(Int64.random(in: 0..<900_000)))),
                                  sortDescriptors: [QuerySort(.field("title"))])
                blackHole(try rig.database.records(matching: query, resultsLimit: 50))
            },
            setup: { try rig.prepare() }, teardown: { rig.remove() })
    }

    let unindexed = QueryRig(records: records)
    Benchmark(
        "sorted, filtered page of 50 out of 100000 records, no index (plays >= X, sorted by artist)",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(15), maxIterations: 10),
        closure: { _ in
            let query = Query(recordType: "Track", predicate: .condition(QueryCondition(.field("plays"), .greaterThanOrEquals, .int64(Int64.random(in: 0..<90_000)))),
                              sortDescriptors: [QuerySort(.field("artist"))])
            blackHole(try unindexed.database.records(matching: query, resultsLimit: 50))
        },
        setup: { try unindexed.prepare() }, teardown: { unindexed.remove() })
}

/// A store that takes batch after batch of new records.
final class BatchRig: @unchecked Sendable {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
    private var database: Database?
    private var next = 0

    func prepare() throws {
        database = try Container(identifier: "bench", directory: directory).privateCloudDatabase
        _ = try save(makeBatch())
    }

    func makeBatch() -> [Record] {
        defer { next += 1_000 }
        return (next..<next + 1_000).map { i -> Record in
            var record = Record(recordType: "Track", recordName: Workload.name(i))
            for (name, value) in Workload.fields(record: i, generation: 0) { record[name] = value }
            return record
        }
    }

    func save(_ batch: [Record]) throws -> Database.ModifyResults {
        try database!.modifyRecords(saving: batch, deleting: [], savePolicy: .allKeys)
    }

    func remove() {
        database = nil
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A store holding the merge workload's records, made once per benchmark.
final class QueryRig: @unchecked Sendable {
    let records: Int
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
    private var container: Container?

    init(records: Int) { self.records = records }

    var database: Database { container!.privateCloudDatabase }

    func prepare() throws {
        let (container, changeSet) = try Workload.prepareStore(.empty, records: records, directory: directory)
        try container.apply(changeSet: changeSet)
        self.container = container
    }

    func remove() {
        container = nil
        try? FileManager.default.removeItem(at: directory)
    }
}
