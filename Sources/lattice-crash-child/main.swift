// A child process for the crash tests: it writes to a store until it is killed.
//   lattice-crash-child DIR batches [PREFIX]   commit batches of 500 records forever, printing each commit
//   lattice-crash-child DIR apply FILE     apply a change-set file over and over, printing each commit
import Foundation
import Lattice

/// Unbuffered, so the parent sees each commit the moment it is durable.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: lattice-crash-child DIR batches | DIR apply FILE\n".utf8))
    exit(64)
}
do {
    let container = try Container(identifier: "crash", directory: URL(fileURLWithPath: arguments[1]))
    let database = container.privateCloudDatabase
    switch arguments[2] {
    case "batches":
        var batch = 0
        let prefix = arguments.count > 3 ? arguments[3] : "b"
        while true {
            let records = (0..<500).map { index -> Record in
                var record = Record(recordType: "Item", recordName: "\(prefix)\(batch)-\(index)")
                record["writer"] = .string(prefix)
                record["batch"] = .int64(Int64(batch))
                record["payload"] = .string(String(repeating: "x", count: 200))
                return record
            }
            try database.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys)
            say("committed \(batch)")
            batch += 1
        }
    case "apply" where arguments.count == 4:
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: arguments[3])))
        var round = 0
        while true {
            let summary = try container.apply(changeSet: bytes)
            say("applied \(round) \(summary.recordsReceived)")
            round += 1
        }
    default:
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("lattice-crash-child: \(error)\n".utf8))
    exit(1)
}
