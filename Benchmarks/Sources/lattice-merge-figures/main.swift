// Prints Lattice's merge figures as JSON lines for compare/run.sh:
//   swift run -c release lattice-merge-figures [--records N] [--runs R]
import Foundation
import LatticeCore
import Workload

var records = 100_000
var runs = 3
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--records": records = Int(arguments.next() ?? "") ?? records
    case "--runs": runs = Int(arguments.next() ?? "") ?? runs
    default:
        FileHandle.standardError.write(Data("usage: lattice-merge-figures [--records N] [--runs R]\n".utf8))
        exit(64)
    }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func report(_ scenario: Workload.Scenario, _ mode: String, _ best: Double, _ bytes: Int) {
    print("{\"system\":\"lattice\",\"scenario\":\"\(scenario.rawValue)\",\"mode\":\"\(mode)\",\"fieldWrites\":\(records * 8),\"seconds\":\(best),\"bytes\":\(bytes)}")
}

do {
    for scenario in Workload.Scenario.allCases {
        var best = Double.infinity
        var size = 0
        for _ in 0..<runs {
            let (receiver, changeSet) = try Workload.prepareMemory(scenario, records: records)
            size = changeSet.count
            best = min(best, try seconds { _ = try receiver.apply(changeSet) })
        }
        report(scenario, "memory", best, size)
        best = .infinity
        for _ in 0..<runs {
            let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-bench-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let (receiver, changeSet) = try Workload.prepareStore(scenario, records: records, directory: directory)
            best = min(best, try seconds { _ = try receiver.apply(changeSet: changeSet) })
        }
        report(scenario, "store", best, size)
    }
} catch {
    FileHandle.standardError.write(Data("lattice-merge-figures: \(error)\n".utf8))
    exit(1)
}
