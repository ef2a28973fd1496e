import Foundation
import Lattice
import LatticeTestSupport
import Testing

/// A child process writes to a store and is killed with SIGKILL mid-write;
/// the store must open and hold every batch the child reported committed,
/// each one whole.
@Suite struct CrashTests {
    let directory = TemporaryDirectory()

    /// Starts the child, kills it with SIGKILL once what it printed satisfies
    /// `done`, and returns the lines it printed.
    func runChild(_ arguments: [String], killWhen done: ([String]) -> Bool) throws -> [String] {
        let child = Process()
        child.executableURL = builtProduct("lattice-crash-child")
        child.arguments = arguments
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        var text = ""
        while !done(text.split(separator: "\n").map(String.init)) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal, "the child should have been killed, not have exited")
        return text.split(separator: "\n").map(String.init)
    }

    func runChild(_ arguments: [String], killAfter lines: Int) throws -> [String] {
        try runChild(arguments) { $0.count >= lines }
    }

    func runChild(_ arguments: [String], until marker: String) throws -> [String] {
        try runChild(arguments) { $0.contains(marker) }
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

    /// Runs the child until it says it is inside the apply, kills it there,
    /// and returns everything it printed.
    func killInsideApply(_ store: URL, file: URL, pauseAt offset: Int) throws -> [String] {
        let lines = try runChild([store.path, "apply-pausing", file.path, String(offset)], until: "inside apply")
        #expect(lines.contains("inside apply"), "the child never reached the middle of the apply: \(lines)")
        #expect(!lines.contains { $0.hasPrefix("applied") }, "the apply finished before the kill")
        return lines
    }

    func changes(in container: Container, zone: Zone.ID = .default) throws -> ZoneChanges {
        try container.privateCloudDatabase.recordZoneChanges(inZoneWith: zone, since: nil, resultsLimit: 10_000)
    }

    @Test func killInsideAChangeSetApplyLeavesNothingOfIt() throws {
        let source = try directory.container("source")
        let records = (0..<3_000).map { movie("r\($0)", ["title": .string("Title \($0)"), "n": .int64(Int64($0))]) }
        _ = try source.privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        let zone = ZoneKey(scope: .private, zoneID: .default)
        let file = directory.url.appendingPathComponent("changes.ltcs")
        let bytes = try source.changeSet(for: zone, since: VersionVector())
        try Data(bytes).write(to: file)
        let target = directory.url.appendingPathComponent("target")
        do {
            let container = try Container(identifier: "crash", directory: target)
            try container.privateCloudDatabase.save(movie("before", ["title": "committed before the crash"]))
        }
        // Killed with half the records merged inside the open transaction: none of them stays.
        _ = try killInsideApply(target, file: file, pauseAt: bytes.count / 2)
        var container = try Container(identifier: "crash", directory: target, create: false)
        #expect(try container.privateCloudDatabase.record(for: Record.ID(recordName: "before"))["title"] == "committed before the crash")
        #expect(try changes(in: container).modifications.count == 1, "a killed apply left some of its records")
        // The same apply, not killed, commits all of them: the kill is what kept them out.
        #expect(try container.apply(changeSet: bytes).recordsChanged == 3_000)
        container = try Container(identifier: "crash", directory: target, create: false)
        #expect(try changes(in: container).modifications.count == 3_001)
    }

    @Test func killDuringAZoneDeletionKeepsTheZoneWhole() throws {
        let zoneID = Zone.ID(zoneName: "Doomed")
        let zone = ZoneKey(scope: .private, zoneID: zoneID)
        let origin = try directory.container("origin")
        try origin.privateCloudDatabase.save(Zone(zoneID: zoneID))
        _ = try origin.privateCloudDatabase.modifyRecords(saving: (0..<2_000).map { movie("r\($0)", zone: zoneID, ["n": .int64(Int64($0))]) }, deleting: [])
        let target = directory.url.appendingPathComponent("target")
        do {
            let container = try Container(identifier: "crash", directory: target)
            try container.apply(changeSet: origin.changeSet(for: zone, since: VersionVector()))
        }
        try origin.privateCloudDatabase.deleteZone(withID: zoneID)
        let deletion = try origin.changeSet(for: zone, since: VersionVector())
        let file = directory.url.appendingPathComponent("deletion.ltcs")
        try Data(deletion).write(to: file)
        // The end frame is read after the header's deletion has removed the records, in the open transaction.
        _ = try killInsideApply(target, file: file, pauseAt: deletion.count - 10)
        var container = try Container(identifier: "crash", directory: target, create: false)
        #expect(try container.privateCloudDatabase.allRecordZones().contains(Zone(zoneID: zoneID)))
        #expect(try container.privateCloudDatabase.recordCount(inZoneWith: zoneID) == 2_000, "a killed zone deletion removed some records")
        try container.apply(changeSet: deletion)
        container = try Container(identifier: "crash", directory: target, create: false)
        #expect(try !container.privateCloudDatabase.allRecordZones().contains(Zone(zoneID: zoneID)))
        #expect(try container.privateCloudDatabase.recordCount(inZoneWith: zoneID) == 0)
    }

    @Test func killDuringLocalZoneDeletionsLeavesEachZoneWholeOrGone() throws {
        let store = directory.url.appendingPathComponent("zones")
        let lines = try runChild([store.path, "zones"], until: "deleting 3")
        let container = try Container(identifier: "crash", directory: store, create: false)
        let database = container.privateCloudDatabase
        let zones = Set(try database.allRecordZones().map(\.zoneID.zoneName))
        for round in 0..<4 {
            let name = Zone.ID(zoneName: "z\(round)")
            let deleted = lines.contains("deleted \(round)")
            if deleted { #expect(!zones.contains(name.zoneName), "zone \(round) was reported deleted") }
            if zones.contains(name.zoneName) {
                #expect(try database.recordCount(inZoneWith: name) == 1_000, "zone \(round) is half deleted")
            }
        }
        #expect(lines.contains("deleted 2"))
    }
}
