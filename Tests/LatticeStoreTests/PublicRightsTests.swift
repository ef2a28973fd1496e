import Foundation
import LatticeCore
import LatticeCrypto
@_spi(Testing) @testable import LatticeStore
import LatticeTestSupport
import Testing

/// The public database's creator-only rule, on stores on disk exchanging
/// change sets without sockets: anyone creates, only the creator changes or
/// deletes, every replica refuses the rest (also relayed), refused records
/// change nothing while the rest of their change set lands, and two
/// devices' creations of one name converge to the first.
@Suite struct PublicRightsTests {
    let zone = ZoneKey(scope: .public, zoneID: .default)
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-public-\(UUID().uuidString)")
    let clock = ManualClock(1_700_000_000_000)

    func open(_ name: String) throws -> RecordStore {
        try RecordStore(directory: directory.appendingPathComponent(name), wallClock: { [clock] in clock.now })
    }

    func save(_ store: RecordStore, _ name: String, _ changes: [(name: String, value: FieldValue?)]) throws {
        try store.write { transaction in
            _ = try transaction.createZone(zone)
            try transaction.save(name, type: "Item", in: zone, changes: changes)
        }
        clock.now += 5
    }

    @discardableResult
    func sync(_ from: RecordStore, to: RecordStore) throws -> ApplySummary {
        let vector = try to.read { try $0.syncState(of: zone)?.vector } ?? VersionVector()
        return try to.apply(try from.changeSet(for: zone, since: vector))
    }

    func record(_ store: RecordStore, _ name: String) throws -> RecordState? {
        try store.read { try $0.record(name, in: zone) }
    }

    @Test func theCreatorsEditsSpreadThroughOtherDevicesAndOthersCannotEditLocally() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b)
        try sync(b, to: c)
        try save(a, "p1", [("title", "Desk lamp")])
        try sync(a, to: b)
        try sync(b, to: c)
        #expect(try record(c, "p1")?[field: "title"] == "Desk lamp")
        // An honest device refuses its own edit of another device's record at once.
        #expect(throws: ReplicaError.self) { try save(b, "p1", [("title", "Mine now")]) }
        #expect(throws: ReplicaError.self) { try b.write { _ = try $0.delete(["p1"], in: zone) } }
        #expect(try record(b, "p1")?[field: "title"] == "Desk lamp")
        // Anyone may create.
        try save(b, "p2", [("title", "Chair")])
        #expect(try sync(b, to: a).recordsChanged == 1)
    }

    @Test func aNonCreatorsEditIsRefusedByEveryReplicaWhileTheRestOfItsChangeSetLands() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b)
        try sync(a, to: c)
        // B plays a modified client: it edits A's record and deletes nothing else, and creates one of its own.
        b.ignoresWriteRights = true
        try save(b, "p1", [("title", "Vandalised")])
        try save(b, "p2", [("title", "Chair")])
        let summary = try sync(b, to: c)
        #expect(summary.recordsRefused == 1)
        #expect(summary.refusal?.contains("may not change it") == true, "\(summary.refusal ?? "none")")
        #expect(!summary.claimTaken, "a claim over a refused write would say it is held")
        #expect(try record(c, "p1")?[field: "title"] == "Lamp")
        #expect(try record(c, "p2")?[field: "title"] == "Chair")
        // Relayed by C (honest) to A: nothing of the edit went along; B to A directly: refused there too.
        try sync(c, to: a)
        #expect(try sync(b, to: a).recordsRefused == 1)
        #expect(try record(a, "p1")?[field: "title"] == "Lamp")
        #expect(try record(a, "p2")?[field: "title"] == "Chair")
        // Sent again, it is refused again and still changes nothing.
        #expect(try sync(b, to: c).recordsRefused == 1)
        #expect(try record(c, "p1")?[field: "title"] == "Lamp")
    }

    @Test func aNonCreatorsDeleteOrReplacementIsRefusedAndTheCreatorsDeleteSpreads() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try save(a, "p2", [("title", "Desk")])
        try sync(a, to: b)
        try sync(a, to: c)
        b.ignoresWriteRights = true
        try b.write { _ = try $0.delete(["p1"], in: zone) }
        clock.now += 5
        // A re-creation over A's live record (a delete, then a save): refused too, as every re-creation is.
        try b.write { _ = try $0.delete(["p2"], in: zone) }
        try save(b, "p2", [("title", "Taken")])
        #expect(try sync(b, to: c).recordsRefused == 2)
        #expect(try record(c, "p1")?.isAlive == true)
        #expect(try record(c, "p2")?[field: "title"] == "Desk")
        try a.write { _ = try $0.delete(["p1"], in: zone) }
        try sync(a, to: c)
        #expect(try record(c, "p1")?.isAlive == false)
        // A deleted public record's name is not reused, by anyone; a re-creation sent anyway is refused.
        let d = try open("d")
        try sync(c, to: d)
        #expect(throws: ReplicaError.self) { try save(d, "p1", [("title", "New lamp")]) }
        #expect(throws: ReplicaError.self) { try save(a, "p1", [("title", "New lamp")]) }
        a.ignoresWriteRights = true
        try save(a, "p1", [("title", "New lamp")])
        #expect(try sync(a, to: c).recordsRefused == 1)
        #expect(try record(c, "p1")?.isAlive == false)
    }

    @Test func twoDevicesCreatingOneNameConvergeToTheFirstCreationInAnyOrder() throws {
        let a = try open("a"), b = try open("b"), c = try open("c"), d = try open("d")
        try save(a, "x", [("title", "first"), ("colour", "red")])
        try save(b, "x", [("title", "second"), ("size", .int64(3))])
        // B's creator edits its own copy, which also loses.
        try save(b, "x", [("size", .int64(4))])
        try sync(a, to: c)
        try sync(b, to: c)
        try sync(b, to: d)
        try sync(a, to: d)
        try sync(c, to: a)
        try sync(d, to: b)
        try sync(a, to: b)
        try sync(b, to: a)
        for store in [a, b, c, d] {
            let state = try #require(try record(store, "x"))
            #expect(state[field: "title"] == "first")
            #expect(state[field: "size"] == nil)
        }
        let states = try [a, b, c, d].map { try record($0, "x") }
        #expect(Set(states).count == 1, "replicas differ: \(states)")
        // B cannot edit the record it lost.
        #expect(throws: ReplicaError.self) { try save(b, "x", [("size", .int64(5))]) }
    }

    @Test func thePublicDatabaseHasOneZoneThatNoChangeSetDeletes() throws {
        let a = try open("a"), b = try open("b")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b)
        // A modified client deletes the public default zone and re-creates it: refused whole.
        a.ignoresWriteRights = true
        try a.write { try $0.deleteZone(zone) }
        try a.write { _ = try $0.createZone(zone) }
        let vector = try b.read { try $0.syncState(of: zone)?.vector } ?? VersionVector()
        let bytes = try a.changeSet(for: zone, since: vector)
        #expect(throws: WriteProofError.self) { try b.apply(bytes) }
        #expect(try record(b, "p1")?[field: "title"] == "Lamp")
        // A custom zone of the public database is refused too.
        let custom = ZoneKey(scope: .public, zoneID: ZoneID(zoneName: "Catalogue"))
        try a.write { _ = try $0.createZone(custom) }
        let other = try a.changeSet(for: custom, since: VersionVector())
        #expect(throws: WriteProofError.self) { try b.apply(other) }
        #expect(try b.read { try $0.syncState(of: custom) } == nil)
    }
}
