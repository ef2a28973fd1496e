import Foundation
import Lattice
import Testing

/// A child process writes to a store and is killed with SIGKILL mid-write;
/// the store must open and hold every batch the child reported committed,
/// each one whole.
@Suite struct CrashTests {
    let directory = TemporaryDirectory()

    /// Starts the child and returns it once it has printed `lines` lines.
    /// Or, with `delay`, kills it that many milliseconds after it starts.
    func runChild(_ arguments: [String], killAfter lines: Int, delay: UInt32? = nil) throws -> [String] {
        let child = Process()
        child.executableURL = builtProduct("lattice-crash-child")
        child.arguments = arguments
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        var text = ""
        let reader = output.fileHandleForReading
        if let delay {
            usleep(delay * 1000)
            kill(child.processIdentifier, SIGKILL)
        }
        while text.split(separator: "\n").count < lines {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal, "the child should have been killed, not have exited")
        return text.split(separator: "\n").map(String.init)
    }

    @Test func killDuringBatchWritesLosesNoCommittedBatch() throws {
        let store = directory.url.appendingPathComponent("batches")
        for round in 0..<3 {
            let lines = try runChild([store.path, "batches"], killAfter: 4 + round)
            let committed = Set(lines.compactMap { $0.hasPrefix("committed ") ? Int64($0.dropFirst(10)) : nil })
            #expect(committed.count >= 4)
            let container = try Container(identifier: "crash", directory: store, create: false)
            var counts: [Int64: Int] = [:]
            var token: ChangeToken?
            repeat {
                let page = try container.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: token, resultsLimit: 5_000)
                for record in page.modifications { counts[record["batch"]!.int64Value!, default: 0] += 1 }
                token = page.changeToken
                if !page.moreComing { break }
            } while true
            // Every batch reported committed is there whole; a batch cut by the kill is all or nothing.
            for batch in committed { #expect(counts[batch] == 500, "batch \(batch) of round \(round) has \(counts[batch] ?? 0) records") }
            for (batch, count) in counts { #expect(count == 500, "batch \(batch) is partial: \(count)") }
        }
    }

    @Test func twoProcessesWriteOneStoreAtOnce() throws {
        let store = directory.url.appendingPathComponent("shared")
        _ = try Container(identifier: "crash", directory: store)
        func start(_ prefix: String) throws -> (Process, Pipe) {
            let child = Process()
            child.executableURL = builtProduct("lattice-crash-child")
            child.arguments = [store.path, "batches", prefix]
            let output = Pipe()
            child.standardOutput = output
            child.standardError = FileHandle.nullDevice
            try child.run()
            return (child, output)
        }
        let writers = try [start("x"), start("y")]
        var reported: [String: Int] = [:]
        for ((child, output), prefix) in zip(writers, ["x", "y"]) {
            var text = ""
            while text.split(separator: "\n").count < 5 {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            reported[prefix] = text.split(separator: "\n").count
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
        }
        let container = try Container(identifier: "crash", directory: store, create: false)
        var counts: [String: Int] = [:]
        var token: ChangeToken?
        repeat {
            let page = try container.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: token, resultsLimit: 5_000)
            for record in page.modifications { counts["\(record["writer"]!.stringValue!)\(record["batch"]!.int64Value!)", default: 0] += 1 }
            token = page.changeToken
            if !page.moreComing { break }
        } while true
        for prefix in ["x", "y"] {
            #expect((reported[prefix] ?? 0) >= 5)
            for batch in 0..<(reported[prefix] ?? 0) { #expect(counts["\(prefix)\(batch)"] == 500, "writer \(prefix) batch \(batch)") }
        }
        #expect(counts.values.allSatisfy { $0 == 500 })
        // Both writers' commits got distinct stamps from one clock: the zone vector has one entry, this device.
        let vector = try container.vector(for: ZoneKey(scope: .private, zoneID: .default))
        #expect(vector.entries.count == 1 && vector.entries.first?.replica == container.replicaID)
    }

    @Test func killDuringChangeSetApplyLeavesTheStoreWholeAndOpenable() throws {
        let source = try directory.container("source")
        let records = (0..<3_000).map { movie("r\($0)", ["title": .string("Title \($0)"), "n": .int64(Int64($0))]) }
        _ = try source.privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        let zone = ZoneKey(scope: .private, zoneID: .default)
        let file = directory.url.appendingPathComponent("changes.ltcs")
        try Data(source.changeSet(for: zone, since: VersionVector())).write(to: file)
        let target = directory.url.appendingPathComponent("target")
        do {
            let container = try Container(identifier: "crash", directory: target)
            try container.privateCloudDatabase.save(movie("before", ["title": "committed before the crash"]))
        }
        // Kill at several moments of the first apply: it is all there or not at all.
        var outcomes = Set<Int>()
        for delay: UInt32 in [30, 80, 150, 300, 600, 1_200] {
            _ = try runChild([target.path, "apply", file.path], killAfter: 1, delay: delay)
            let container = try Container(identifier: "crash", directory: target, create: false)
            #expect(try container.privateCloudDatabase.record(for: Record.ID(recordName: "before"))["title"] == "committed before the crash")
            let count = try container.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil, resultsLimit: 10_000).modifications.count
            #expect(count == 1 || count == 3_001, "a killed apply left \(count - 1) of 3000 records")
            outcomes.insert(count)
            if count == 3_001 { break }
        }
        #expect(outcomes.contains(3_001) || outcomes == [1])
    }
}
