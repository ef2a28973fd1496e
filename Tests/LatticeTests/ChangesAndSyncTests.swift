import Foundation
import Lattice
import LatticeTestSupport
import Testing

@Suite struct ChangesAndSyncTests {
    let directory = TemporaryDirectory()

    @Test func changeTokensReportChangedAndDeletedRecords() throws {
        let container = try directory.container()
        let db = container.privateCloudDatabase
        try db.save(movie("a", ["title": "A"]))
        try db.save(movie("b", ["title": "B"]))
        let first = try db.recordZoneChanges(inZoneWith: .default, since: nil)
        #expect(Set(first.modifications.map(\.recordID.recordName)) == ["a", "b"])
        try db.deleteRecord(withID: Record.ID(recordName: "a"))
        try db.save(movie("c", ["title": "C"]))
        let token = try ChangeToken(stringValue: first.changeToken.description)
        let second = try db.recordZoneChanges(inZoneWith: .default, since: token)
        #expect(second.modifications.map(\.recordID.recordName) == ["c"])
        #expect(second.deletions.map(\.recordID.recordName) == ["a"])
        // A token of one zone is refused in another.
        try db.save(Zone(zoneName: "Other"))
        expectError(.invalidArguments) { _ = try db.recordZoneChanges(inZoneWith: Zone.ID(zoneName: "Other"), since: second.changeToken) }
        let none = try db.recordZoneChanges(inZoneWith: .default, since: second.changeToken)
        #expect(none.modifications.isEmpty && none.deletions.isEmpty)
        // Paged: at most one record per page, never losing any.
        var seen: [String] = []
        var cursor: ChangeToken?
        repeat {
            let page = try db.recordZoneChanges(inZoneWith: .default, since: cursor, resultsLimit: 1)
            seen += page.modifications.map(\.recordID.recordName) + page.deletions.map(\.recordID.recordName)
            cursor = page.changeToken
            if !page.moreComing { break }
        } while true
        #expect(Set(seen) == ["a", "b", "c"])
        // Another store's token, and a token from before a compaction, expire.
        let other = try directory.container("other")
        try other.privateCloudDatabase.save(movie("z", [:]))
        expectError(.changeTokenExpired) { _ = try db.recordZoneChanges(inZoneWith: .default, since: other.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil).changeToken) }
        try container.compact()
        expectError(.changeTokenExpired) { _ = try db.recordZoneChanges(inZoneWith: .default, since: first.changeToken) }
    }

    @Test func twoStoresConvergeAndKeepConflicts() throws {
        let a = try directory.container("a")
        let b = try directory.container("b")
        try a.privateCloudDatabase.save(movie("up", ["title": "Up", "rating": 3]))
        try sync(a, to: b)
        var onA = try a.privateCloudDatabase.record(for: Record.ID(recordName: "up"))
        onA["rating"] = 4
        try a.privateCloudDatabase.save(onA)
        var onB = try b.privateCloudDatabase.record(for: Record.ID(recordName: "up"))
        onB["rating"] = 5
        try b.privateCloudDatabase.save(onB)
        try sync(a, to: b)
        try sync(b, to: a)
        let ra = try a.privateCloudDatabase.record(for: onA.recordID)
        let rb = try b.privateCloudDatabase.record(for: onA.recordID)
        #expect(ra.fields == rb.fields)
        #expect(ra.recordChangeTag == rb.recordChangeTag)
        let conflicts = try a.privateCloudDatabase.conflicts(for: onA.recordID) + b.privateCloudDatabase.conflicts(for: onA.recordID)
        #expect(conflicts.count >= 1)
        let losing = conflicts.first?.losingValue
        #expect(losing == .int64(4) || losing == .int64(5))
        #expect(losing != ra["rating"])
        try b.privateCloudDatabase.clearConflicts(for: onA.recordID)
        #expect(try b.privateCloudDatabase.conflicts(for: onA.recordID).isEmpty)
        // Nothing left to send once converged.
        for zone in try a.allZoneKeys() {
            let summary = try b.apply(changeSet: a.changeSet(for: zone, since: b.vector(for: zone)))
            #expect(summary.recordsChanged == 0)
        }
    }

    @Test func deleteWinsOverConcurrentEditAndRecreationAfterDeleteWins() throws {
        let a = try directory.container("a")
        let b = try directory.container("b")
        let id = Record.ID(recordName: "cars")
        try a.privateCloudDatabase.save(movie("cars", ["title": "Cars"]))
        try sync(a, to: b)
        try a.privateCloudDatabase.deleteRecord(withID: id)
        var edit = try b.privateCloudDatabase.record(for: id)
        edit["rating"] = 2
        try b.privateCloudDatabase.save(edit)
        try sync(a, to: b)
        try sync(b, to: a)
        #expect(throws: LatticeError.self) { try a.privateCloudDatabase.record(for: id) }
        #expect(throws: LatticeError.self) { try b.privateCloudDatabase.record(for: id) }
        // A write made after seeing the delete starts a new incarnation.
        try b.privateCloudDatabase.save(movie("cars", ["title": "Cars 3"]))
        try sync(b, to: a)
        let recreated = try a.privateCloudDatabase.record(for: id)
        #expect(recreated.fields == ["title": "Cars 3"])
    }

    @Test func deleteSelfReferencesCascadeLocallyAndOnOtherReplicas() throws {
        let a = try directory.container("a")
        let b = try directory.container("b")
        try a.privateCloudDatabase.save(movie("parent", ["title": "P"]))
        try a.privateCloudDatabase.save(movie("child", ["parent": .reference(RecordReference(recordName: "parent", action: .deleteSelf))]))
        try a.privateCloudDatabase.save(movie("grandchild", ["parent": .reference(RecordReference(recordName: "child", action: .deleteSelf))]))
        try a.privateCloudDatabase.save(movie("bystander", ["parent": .reference(RecordReference(recordName: "parent"))]))
        try sync(a, to: b)
        // b adds another child concurrently with a's delete of the parent.
        try b.privateCloudDatabase.save(movie("late", ["parent": .reference(RecordReference(recordName: "parent", action: .deleteSelf))]))
        try a.privateCloudDatabase.deleteRecord(withID: Record.ID(recordName: "parent"))
        for name in ["child", "grandchild"] {
            #expect(throws: LatticeError.self) { try a.privateCloudDatabase.record(for: Record.ID(recordName: name)) }
        }
        try sync(a, to: b)
        try sync(b, to: a)
        for container in [a, b] {
            for name in ["parent", "child", "grandchild", "late"] {
                #expect(throws: LatticeError.self, "\(name) should be gone") { try container.privateCloudDatabase.record(for: Record.ID(recordName: name)) }
            }
            #expect(try container.privateCloudDatabase.record(for: Record.ID(recordName: "bystander"))["parent"] != nil)
        }
    }

    @Test func damagedChangeSetIsRefusedAndChangesNothing() throws {
        let a = try directory.container("a")
        let b = try directory.container("b")
        try b.privateCloudDatabase.save(movie("kept", ["title": "Kept"]))
        _ = try a.privateCloudDatabase.modifyRecords(saving: (0..<50).map { movie("r\($0)", ["title": .string("T\($0)")]) }, deleting: [])
        let zone = ZoneKey(scope: .private, zoneID: .default)
        let bytes = try a.changeSet(for: zone, since: b.vector(for: zone))
        let before = try b.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil).modifications.map(\.recordID.recordName)
        var flipped = bytes
        flipped[bytes.count / 2] ^= 0x40
        for damaged in [Array(bytes.prefix(bytes.count - 3)), flipped, Array("not a change set at all".utf8), Array(bytes.prefix(5))] {
            do {
                try b.apply(changeSet: damaged)
                Issue.record("a damaged change set was accepted")
            } catch { #expect(error.code == .invalidArguments) }
        }
        #expect(try b.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil).modifications.map(\.recordID.recordName) == before)
        let summary = try b.apply(changeSet: bytes)
        #expect(summary.recordsChanged == 50 && summary.claimTaken)
        // Applying the same change set again is a no-op (idempotent).
        #expect(try b.apply(changeSet: bytes).recordsChanged == 0)
    }

    @Test func zoneDeletionReachesOtherReplicas() throws {
        let a = try directory.container("a")
        let b = try directory.container("b")
        let zone = Zone(zoneName: "Temp")
        try a.privateCloudDatabase.save(zone)
        try a.privateCloudDatabase.save(movie("t", zone: zone.zoneID, ["title": "T"]))
        try sync(a, to: b)
        #expect(try b.privateCloudDatabase.record(for: Record.ID(recordName: "t", zoneID: zone.zoneID))["title"] == "T")
        try a.privateCloudDatabase.deleteZone(withID: zone.zoneID)
        try sync(a, to: b)
        #expect(try b.privateCloudDatabase.allRecordZones().map(\.zoneID.zoneName) == ["_defaultZone"])
    }

    @Test func subscriptionStreamsCommitsAsTheyLand() async throws {
        let container = try directory.container()
        let db = container.privateCloudDatabase
        let stream = try db.notifications(for: .query(recordType: "Movie", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, 4)), zoneID: .default))
        let writer = Task {
            try await Task.sleep(nanoseconds: 50_000_000)
            try await db.save(movie("low", ["rating": 1]))
            try await db.save(movie("high", ["rating": 5]))
        }
        // A stream that never delivers must fail the test, not hang it.
        let received = try await withThrowingTaskGroup(of: [(RecordNotification.Reason, String)].self) { group in
            group.addTask {
                var received: [(RecordNotification.Reason, String)] = []
                for try await notification in stream {
                    received.append((notification.reason, notification.recordID.recordName))
                    if received.count == 1 { try await db.deleteRecord(withID: Record.ID(recordName: "high")) }
                    if received.count == 2 { break }
                }
                return received
            }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(hangBound(300) * 1e9))
                return []
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
        try await writer.value
        #expect(received.map(\.1) == ["high", "high"])
        #expect(received.map(\.0) == [.recordCreated, .recordDeleted])
    }
}

@Suite struct CollectedTombstoneTokenTests {
    let directory = TemporaryDirectory()

    /// A token that should list a deletion whose tombstone went can no
    /// longer do so: changeTokenExpired. One taken after it still works.
    @Test func aTokenFromBeforeACollectionExpiresAndOneFromAfterWorks() throws {
        let container = try directory.container()
        let db = container.privateCloudDatabase
        try db.save(movie("a", ["title": "A"]))
        try db.save(movie("b", ["title": "B"]))
        let before = try db.recordZoneChanges(inZoneWith: .default, since: nil).changeToken
        try db.save(Zone(zoneName: "Other"))
        try db.save(movie("x", zone: Zone.ID(zoneName: "Other"), ["title": "X"]))
        let otherZone = try db.recordZoneChanges(inZoneWith: Zone.ID(zoneName: "Other"), since: nil).changeToken
        try db.deleteRecord(withID: Record.ID(recordName: "a"))
        let afterDelete = try db.recordZoneChanges(inZoneWith: .default, since: nil).changeToken
        #expect(try db.recordZoneChanges(inZoneWith: .default, since: before).deletions.map(\.recordID.recordName) == ["a"])
        // A device alone in its account: every tombstone is acknowledged by all.
        #expect(try container.tombstoneReports().map(\.held) == [0, 1], "Other, then the default zone")
        #expect(try container.collectTombstones() == 1)
        #expect(try container.tombstoneReports().map { [$0.held, $0.collected] } == [[0, 0], [0, 1]])
        expectError(.changeTokenExpired) { _ = try db.recordZoneChanges(inZoneWith: .default, since: before) }
        // Another zone's token is not touched by what this zone collected.
        #expect(try db.recordZoneChanges(inZoneWith: Zone.ID(zoneName: "Other"), since: otherZone).modifications.isEmpty)
        let later = try db.recordZoneChanges(inZoneWith: .default, since: afterDelete)
        #expect(later.modifications.isEmpty && later.deletions.isEmpty)
        expectError(.unknownItem) { _ = try db.record(for: Record.ID(recordName: "a")) }
        // Created again, it is a new record, listed as such.
        try db.save(movie("a", ["title": "A again"]))
        #expect(try db.recordZoneChanges(inZoneWith: .default, since: afterDelete).modifications.map(\.recordID.recordName) == ["a"])
    }

    /// A trusted device that has not acknowledged the delete holds the tombstone back, and is named.
    @Test func aDeviceThatHasNotAcknowledgedHoldsTombstonesBack() throws {
        let container = try directory.container("a")
        let other = try directory.container("b")
        try container.trust(deviceID: other.deviceID)
        let db = container.privateCloudDatabase
        try db.save(movie("a", ["title": "A"]))
        try db.deleteRecord(withID: Record.ID(recordName: "a"))
        #expect(try container.collectTombstones() == 0)
        let report = try #require(try container.tombstoneReports().first)
        #expect(report.held == 1 && report.collected == 0)
        #expect(report.waitingFor.map(\.deviceID) == [other.deviceID])
    }
}
