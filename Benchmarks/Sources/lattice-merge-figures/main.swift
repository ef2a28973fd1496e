// Prints Lattice's merge figures as JSON lines for compare/run.sh:
//   swift run -c release lattice-merge-figures [--records N] [--runs R]
// and, with --mode saves / --mode ceiling, the batched-save figure and the
// engine's ceiling (the same rows through SQLite, no Lattice code around them).
import Foundation
import Lattice
@_spi(Tools) import LatticeCore
import Workload

var records = 100_000
var runs = 3
var modes: Set<String> = ["memory", "store"]
var scenarios = Workload.Scenario.allCases
/// Measure applying each change set a second time: everything is already held.
var reapply = false
/// Leave the record type without its two indexed fields.
var indexed = true
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--records": records = Int(arguments.next() ?? "") ?? records
    case "--runs": runs = Int(arguments.next() ?? "") ?? runs
    case "--print-record":
        // Prints one record of the workload, to check it against compare/workload.py.
        let index = Int(arguments.next() ?? "") ?? 0
        let generation = Int(arguments.next() ?? "") ?? 0
        print(Workload.name(index), Workload.fields(record: index, generation: generation).map { "\($0.name)=\($0.value!)" }.joined(separator: " "))
        exit(0)
    case "--mode": modes = [arguments.next() ?? ""]
    case "--reapply": reapply = true
    case "--no-indexes": indexed = false
    case "--scenario":
        let name = arguments.next() ?? ""
        scenarios = Workload.Scenario.allCases.filter { $0.rawValue == name }
    default:
        FileHandle.standardError.write(Data("usage: lattice-merge-figures [--records N] [--runs R] [--mode memory|store|saves|ceiling] [--scenario empty|half-lose|concurrent-10pct] [--reapply] [--no-indexes]\n".utf8))
        exit(64)
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

@MainActor func report(_ scenario: Workload.Scenario, _ mode: String, _ best: Double, _ bytes: Int) {
    print("{\"system\":\"lattice\",\"scenario\":\"\(scenario.rawValue)\(reapply ? " (again)" : "")\",\"mode\":\"\(mode)\",\"fieldWrites\":\(records * 8),\"seconds\":\(best),\"bytes\":\(bytes)}")
}

do {
    if modes.contains("saves") {
        // Batches of 1,000 new records of 8 fields through modifyRecords, each a durable commit.
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
        let database = try Container(identifier: "bench", directory: directory).privateCloudDatabase
        var best = Double.infinity
        for batch in 0..<(records / 1_000) {
            let saving = (batch * 1_000..<(batch + 1) * 1_000).map { i -> Record in
                var record = Record(recordType: "Track", recordName: Workload.name(i))
                for (name, value) in Workload.fields(record: i, generation: 0) { record[name] = value }
                return record
            }
            best = min(best, try seconds { _ = try database.modifyRecords(saving: saving, deleting: [], savePolicy: .allKeys) })
        }
        print("{\"system\":\"lattice\",\"figure\":\"batched saves\",\"recordsPerBatch\":1000,\"bestBatchSeconds\":\(best),\"recordsPerSecond\":\(Int(1_000 / best))}")
        // exit() skips defer blocks: the store goes first.
        try? FileManager.default.removeItem(at: directory)
        exit(0)
    }
    if modes.contains("ceiling") {
        for layout in Ceiling.layouts {
            var best = Double.infinity
            for _ in 0..<runs { best = min(best, try Ceiling.insert(records: records, layout: layout)) }
            print("{\"system\":\"sqlite\",\"scenario\":\"ceiling, \(layout.name)\",\"mode\":\"store\",\"fieldWrites\":\(records * 8),\"seconds\":\(best),\"bytes\":0}")
        }
        exit(0)
    }
    for scenario in scenarios {
        var best = Double.infinity
        var size = 0
        for _ in 0..<(modes.contains("memory") ? runs : 0) {
            let (receiver, changeSet) = try Workload.prepareMemory(scenario, records: records, indexed: indexed)
            size = changeSet.count
            if reapply { _ = try receiver.apply(changeSet) }
            best = min(best, try seconds { _ = try receiver.apply(changeSet) })
        }
        if modes.contains("memory") { report(scenario, "memory", best, size) }
        best = .infinity
        for _ in 0..<(modes.contains("store") ? runs : 0) {
            let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (receiver, changeSet) = try Workload.prepareStore(scenario, records: records, directory: directory, indexed: indexed)
            size = changeSet.count
            if reapply { _ = try receiver.apply(changeSet: changeSet) }
            best = min(best, try seconds { _ = try receiver.apply(changeSet: changeSet) })
        }
        if modes.contains("store") { report(scenario, "store", best, size) }
    }
} catch {
    FileHandle.standardError.write(Data("lattice-merge-figures: \(error)\n".utf8))
    exit(1)
}
