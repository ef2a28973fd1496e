// A child process for the crash tests: it writes to a store until it is killed.
//   lattice-crash-child DIR batches [PREFIX]   commit batches of 500 records forever, printing each commit
//   lattice-crash-child DIR zones          create zones of 1,000 records and delete them, printing "deleting N" / "deleted N"
//   lattice-crash-child DIR apply FILE     apply a change-set file over and over, printing each commit
//   lattice-crash-child DIR apply-pausing FILE OFFSET
//       apply a change-set file once; when the apply reads past OFFSET it prints
//       "inside apply" and pauses, so the parent's kill lands inside the transaction
import Foundation
import Lattice
@_spi(Tools) import LatticeCore

/// Unbuffered, so the parent sees each commit the moment it is durable.
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// Bytes in memory that announce, and pause, when the reader gets past `pauseAt`.
struct PausingSource: ByteSource {
    var inner: ArrayByteSource
    let pauseAt: Int
    var offset = 0
    var paused = false

    mutating func read(upTo count: Int) throws -> [UInt8] {
        if !paused, offset >= pauseAt {
            paused = true
            say("inside apply")
            sleep(30)
        }
        let bytes = try inner.read(upTo: count)
        offset += bytes.count
        return bytes
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: lattice-crash-child DIR batches [PREFIX] | DIR apply FILE | DIR apply-pausing FILE OFFSET\n".utf8))
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
            _ = try database.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys)
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
    case "zones":
        for round in 0... {
            let zone = Zone.ID(zoneName: "z\(round)")
            try database.save(Zone(zoneID: zone))
            let records = (0..<1_000).map { index -> Record in
                var record = Record(recordType: "Item", recordName: "r\(index)", zoneID: zone)
                record["payload"] = .string(String(repeating: "x", count: 100))
                return record
            }
            _ = try database.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys)
            say("deleting \(round)")
            try database.deleteZone(withID: zone)
            say("deleted \(round)")
        }
    case "apply-pausing" where arguments.count == 5:
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: arguments[3])))
        let source = PausingSource(inner: ArrayByteSource(bytes), pauseAt: Int(arguments[4]) ?? bytes.count / 2)
        let summary = try container.apply(changeSetsFrom: source)
        say("applied \(summary.recordsReceived)")
    default:
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("lattice-crash-child: \(error)\n".utf8))
    exit(1)
}
