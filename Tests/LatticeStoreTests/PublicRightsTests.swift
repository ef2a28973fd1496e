import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@testable import LatticeStore
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
    func record(_ store: RecordStore, _ name: String) throws -> RecordState? {
        try store.read { try $0.record(name, in: zone) }
    }

    @Test func theCreatorsEditsSpreadThroughOtherDevicesAndOthersCannotEditLocally() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b, zone)
        try sync(b, to: c, zone)
        try save(a, "p1", [("title", "Desk lamp")])
        try sync(a, to: b, zone)
        try sync(b, to: c, zone)
        #expect(try record(c, "p1")?[field: "title"] == "Desk lamp")
        // An honest device refuses its own edit of another device's record at once.
        #expect(throws: ReplicaError.self) { try save(b, "p1", [("title", "Mine now")]) }
        #expect(throws: ReplicaError.self) { try b.write { _ = try $0.delete(["p1"], in: zone) } }
        #expect(try record(b, "p1")?[field: "title"] == "Desk lamp")
        // Anyone may create.
        try save(b, "p2", [("title", "Chair")])
        #expect(try sync(b, to: a, zone).recordsChanged == 1)
    }

    @Test func aNonCreatorsEditIsRefusedByEveryReplicaWhileTheRestOfItsChangeSetLands() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b, zone)
        try sync(a, to: c, zone)
        // B plays a modified client: it edits A's record and deletes nothing else, and creates one of its own.
        b.ignoresWriteRights = true
        try save(b, "p1", [("title", "Vandalised")])
        try save(b, "p2", [("title", "Chair")])
        let summary = try sync(b, to: c, zone)
        #expect(summary.recordsRefused == 1)
        #expect(summary.refusal?.contains("may not change it") == true, "\(summary.refusal ?? "none")")
        #expect(!summary.claimTaken, "a claim over a refused write would say it is held")
        #expect(try record(c, "p1")?[field: "title"] == "Lamp")
        #expect(try record(c, "p2")?[field: "title"] == "Chair")
        // Relayed by C (honest) to A: nothing of the edit went along; B to A directly: refused there too.
        try sync(c, to: a, zone)
        #expect(try sync(b, to: a, zone).recordsRefused == 1)
        #expect(try record(a, "p1")?[field: "title"] == "Lamp")
        #expect(try record(a, "p2")?[field: "title"] == "Chair")
        // Sent again, it is refused again and still changes nothing.
        #expect(try sync(b, to: c, zone).recordsRefused == 1)
        #expect(try record(c, "p1")?[field: "title"] == "Lamp")
    }

    @Test func aNonCreatorsDeleteOrReplacementIsRefusedAndTheCreatorsDeleteSpreads() throws {
        let a = try open("a"), b = try open("b"), c = try open("c")
        try save(a, "p1", [("title", "Lamp")])
        try save(a, "p2", [("title", "Desk")])
        try sync(a, to: b, zone)
        try sync(a, to: c, zone)
        b.ignoresWriteRights = true
        try b.write { _ = try $0.delete(["p1"], in: zone) }
        clock.now += 5
        // A re-creation over A's live record (a delete, then a save): refused too, as every re-creation is.
        try b.write { _ = try $0.delete(["p2"], in: zone) }
        try save(b, "p2", [("title", "Taken")])
        #expect(try sync(b, to: c, zone).recordsRefused == 2)
        #expect(try record(c, "p1")?.isAlive == true)
        #expect(try record(c, "p2")?[field: "title"] == "Desk")
        try a.write { _ = try $0.delete(["p1"], in: zone) }
        try sync(a, to: c, zone)
        #expect(try record(c, "p1")?.isAlive == false)
        // A deleted public record's name is not reused, by anyone; a re-creation sent anyway is refused.
        let d = try open("d")
        try sync(c, to: d, zone)
        #expect(throws: ReplicaError.self) { try save(d, "p1", [("title", "New lamp")]) }
        #expect(throws: ReplicaError.self) { try save(a, "p1", [("title", "New lamp")]) }
        a.ignoresWriteRights = true
        try save(a, "p1", [("title", "New lamp")])
        #expect(try sync(a, to: c, zone).recordsRefused == 1)
        #expect(try record(c, "p1")?.isAlive == false)
    }

    @Test func twoDevicesCreatingOneNameConvergeToTheFirstCreationInAnyOrder() throws {
        let a = try open("a"), b = try open("b"), c = try open("c"), d = try open("d")
        try save(a, "x", [("title", "first"), ("colour", "red")])
        try save(b, "x", [("title", "second"), ("size", .int64(3))])
        // B's creator edits its own copy, which also loses.
        try save(b, "x", [("size", .int64(4))])
        try sync(a, to: c, zone)
        try sync(b, to: c, zone)
        try sync(b, to: d, zone)
        try sync(a, to: d, zone)
        try sync(c, to: a, zone)
        try sync(d, to: b, zone)
        try sync(a, to: b, zone)
        try sync(b, to: a, zone)
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

    /// Names qualified by their creator (issue 38): a device that creates a
    /// name another device holds, stamped before it, makes a record of its
    /// own; the first creator's stays whole on every replica, its creator
    /// and the replicas that held it first read it by its plain name, and a
    /// creation under another device's qualified name is refused.
    @Test func aCreationStampedBeforeAnotherDevicesTakesNothingOver() throws {
        let a = try open("a"), c = try open("c"), m = try open("m")
        func resolved(_ store: RecordStore, _ name: String) throws -> RecordState? {
            try store.read { try $0.record($0.storedRecordName(name, in: zone, writing: false), in: zone) }
        }
        func create(_ store: RecordStore, _ name: String, _ title: String) throws {
            try store.write { transaction in
                _ = try transaction.createZone(zone)
                try transaction.save(try transaction.storedRecordName(name, in: zone, writing: true), type: "Item", in: zone, changes: [("title", .string(title))])
            }
        }
        clock.now += 60_000
        try create(a, "lamp", "Lamp")
        try sync(a, to: c, zone)
        // M's clock is a minute behind: its creation is stamped before A's.
        clock.now -= 120_000
        try create(m, "lamp", "Mine")
        clock.now += 120_000
        let own = PublicRecordName.qualified("lamp", by: a.replica), stranger = PublicRecordName.qualified("lamp", by: m.replica)
        let mine = try #require(try record(m, stranger)), theirs = try #require(try record(a, own))
        #expect(mine.created < theirs.created)
        try sync(m, to: c, zone)
        try sync(m, to: a, zone)
        try sync(a, to: m, zone)
        for store in [a, c, m] {
            #expect(try record(store, own)?[field: "title"] == "Lamp")
            #expect(try record(store, stranger)?[field: "title"] == "Mine")
        }
        #expect(try resolved(a, "lamp")?[field: "title"] == "Lamp")
        #expect(try resolved(c, "lamp")?[field: "title"] == "Lamp")
        #expect(try resolved(m, "lamp")?[field: "title"] == "Mine")
        // A new device that gets M's first reads M's by the plain name, and holds A's whole beside it.
        let d = try open("d")
        try sync(m, to: d, zone)
        try sync(a, to: d, zone)
        #expect(try resolved(d, "lamp")?[field: "title"] == "Mine")
        #expect(try record(d, own)?[field: "title"] == "Lamp")
        // A modified client that creates a record under A's qualified name, stamped earlier, is refused everywhere.
        let e = try open("e")
        e.ignoresWriteRights = true
        clock.now -= 300_000
        try save(e, own, [("title", "Forged")])
        clock.now += 300_000
        #expect(try sync(e, to: c, zone).recordsRefused == 1)
        #expect(try record(c, own)?[field: "title"] == "Lamp")
        // An honest device's write of a name another device created is refused at once, as before.
        #expect(throws: ReplicaError.self) { try create(c, "lamp", "Taken") }
        // Another device's deleted record of a name leaves it to a creation of one's own.
        let g = try open("g"), h = try open("h")
        try create(g, "vase", "Vase")
        try g.write { _ = try $0.delete([PublicRecordName.qualified("vase", by: g.replica)], in: zone) }
        try sync(g, to: h, zone)
        try create(h, "vase", "Mine")
        #expect(try resolved(h, "vase")?[field: "title"] == "Mine")
        #expect(try record(h, PublicRecordName.qualified("vase", by: g.replica))?.isAlive == false)
    }

    /// A `deleteSelf` reference in a public record follows its creator's
    /// record of that name: deleting it cascades, and a tombstone of the
    /// plain name (a modified client's) or of another creator's record of
    /// that name cascades nothing.
    @Test func aCascadeFollowsTheCreatorsOwnRecordAndNoOneElses() throws {
        let a = try open("a"), m = try open("m")
        func create(_ store: RecordStore, _ name: String, _ changes: [(name: String, value: FieldValue?)]) throws {
            try store.write { transaction in
                _ = try transaction.createZone(zone)
                try transaction.save(try transaction.storedRecordName(name, in: zone, writing: true), type: "Item", in: zone, changes: changes)
            }
            clock.now += 5
        }
        func alive(_ store: RecordStore, _ stored: String) throws -> Bool { try record(store, stored)?.isAlive == true }
        let list = FieldValue.reference(RecordReference(recordName: "list", action: .deleteSelf))
        try create(a, "list", [("title", "List")])
        try create(a, "milk", [("list", list)])
        try create(a, "eggs", [("list", list)])
        let ownList = PublicRecordName.qualified("list", by: a.replica)
        // Another creator's "list", deleted, and a plain "list" a modified client creates and deletes: neither cascades.
        try create(m, "list", [("title", "Theirs")])
        try m.write { _ = try $0.delete([PublicRecordName.qualified("list", by: m.replica)], in: zone) }
        let n = try open("n")
        n.ignoresWriteRights = true
        try save(n, "list", [("title", "Plain")])
        try n.write { _ = try $0.delete(["list"], in: zone) }
        #expect(try sync(m, to: a, zone).recordsRefused == 0)
        #expect(try sync(n, to: a, zone).recordsRefused == 0)
        #expect(try record(a, "list")?.causalLength == 2)
        for name in ["milk", "eggs"] { #expect(try alive(a, PublicRecordName.qualified(name, by: a.replica))) }
        // A's delete of its own list cascades to its items.
        try a.write { _ = try $0.delete([ownList], in: zone) }
        for name in ["milk", "eggs"] { #expect(try !alive(a, PublicRecordName.qualified(name, by: a.replica))) }
    }

    @Test func thePublicDatabaseHasOneZoneThatNoChangeSetDeletes() throws {
        let a = try open("a"), b = try open("b")
        try save(a, "p1", [("title", "Lamp")])
        try sync(a, to: b, zone)
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
