import Benchmark
import Foundation
import Lattice
import LatticeCore
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

    Benchmark("batched save, 1,000 records per modifyRecords", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try Container(identifier: "bench", directory: directory).privateCloudDatabase
        let batch = (0..<1_000).map { i -> Record in
            var record = Record(recordType: "Track", recordName: Workload.name(i))
            for (name, value) in Workload.fields(record: i, generation: 0) { record[name] = value }
            return record
        }
        benchmark.startMeasurement()
        blackHole(try database.modifyRecords(saving: batch, deleting: [], savePolicy: .allKeys))
    }

    Benchmark("sorted, filtered page of 50 out of 100,000 records") { benchmark in
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (container, changeSet) = try Workload.prepareStore(.empty, records: records, directory: directory)
        try container.apply(changeSet: changeSet)
        let query = Query(recordType: "Track", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(500_000))), sortDescriptors: [QuerySort(.field("title"))])
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try container.privateCloudDatabase.records(matching: query, resultsLimit: 50))
        }
    }
}
