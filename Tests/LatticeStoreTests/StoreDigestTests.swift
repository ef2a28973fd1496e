import Foundation
import GRDB
@_spi(Tools) import LatticeCore
import LatticeStore
import Testing

/// The store's digests: kept from the rows as they are, so an edit made
/// behind Lattice's back (another program on the file) shows in them.
@Suite struct StoreDigestTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-digest-\(UUID().uuidString)")

    func digest(_ store: RecordStore) throws -> (DigestSum, [DigestItem]) {
        try store.refreshDigests(of: [zone])
        return try store.read { (try $0.digestSum(of: zone, in: .all), try $0.digestItems(of: zone, in: .all)) }
    }

    @Test func theDigestFollowsTheRowsEvenWhenAnotherProgramEditsThem() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("a")
        let store = try RecordStore(directory: url)
        try store.write { _ = try $0.createZone(zone) }
        for name in ["a", "b", "c", "d"] {
            try store.write { _ = try $0.save(name, type: "Movie", in: zone, changes: [("title", .string(name))], replacement: .changedKeys) }
        }
        let (before, items) = try digest(store)
        #expect(before.count == 5, "four records and the zone's state")
        #expect(items.map(\.key) == [[]] + ["a", "b", "c", "d"].map { Array($0.utf8) })
        // The sum is what a scan of the rows gives.
        let rows = try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }
        let zoneState = try #require(try store.read { try $0.syncState(of: zone) }).zoneState
        #expect(try MemoryDigestSet(zone: zoneState, records: rows).sum(in: .all) == before)

        // Another program deletes a row and copies one record's state over another's.
        let queue = try DatabaseQueue(path: url.appendingPathComponent(RecordStore.databaseFileName).path)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM records WHERE name = 'b'")
            try db.execute(sql: "UPDATE records SET state = (SELECT state FROM records WHERE name = 'd') WHERE name = 'c'")
        }
        try queue.close()
        let (after, changed) = try digest(store)
        #expect(after != before)
        #expect(after.count == 4)
        #expect(!changed.map(\.key).contains(Array("b".utf8)))
        #expect(changed.first { $0.key == Array("c".utf8) }?.hash != items.first { $0.key == Array("c".utf8) }?.hash)

        // Deleting the zone leaves its new state alone in the set.
        try store.write { try $0.deleteZone(zone) }
        let (gone, left) = try digest(store)
        #expect(gone.count == 1 && left.map(\.key) == [[]])
    }
}
