import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@testable import LatticeStore
import GRDB
import LatticeTestSupport
import Testing

/// The store persists exactly what the core's merge decides: the same change
/// sets applied to a store on disk and to an in-memory replica give the same
/// record states, and the store's deltas carry only what a peer lacks.
@Suite struct StoreMergeTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))


    @Test(arguments: 0..<20 as Range<UInt64>) func storeAndMemoryAgreeOnRandomHistories(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let (writers, genesis) = try writersSharing(zone, clock: clock)
        let directory = TemporaryDirectory()
        let store = try directory.store()
        let mirror = try MemoryReplica(identity: store.identity, wallClock: { clock.now })
        var deliveries: [[UInt8]] = [genesis]
        for _ in 0..<40 {
            clock.now += UInt64.random(in: 0...2, using: &rng)
            let writer = writers.randomElement(using: &rng)!
            let name = "r\(Int.random(in: 0..<5, using: &rng))"
            if Bool.random(using: &rng), writer.record(name, in: zone)?.isAlive == true {
                try writer.delete(name, in: zone)
            } else {
                try writer.save(name, type: "T", in: zone, changes: [("f\(Int.random(in: 0..<3, using: &rng))", .int64(Int64.random(in: 0...9, using: &rng)))])
            }
            if Int.random(in: 0..<3, using: &rng) == 0 {
                let other = writers.randomElement(using: &rng)!
                if other !== writer { try other.apply(try writer.makeChangeSet(for: zone, since: other.syncState(of: zone)!.vector)) }
            }
            deliveries.append(try writer.makeChangeSet(for: zone, since: VersionVector()))
        }
        for bytes in deliveries.shuffled(using: &rng) {
            let stored = try store.apply(bytes)
            let remembered = try mirror.apply(bytes)
            #expect(stored.recordsChanged == remembered.recordsChanged, "seed \(seed): the store and memory disagree on what changed")
        }
        let fromStore = try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
        #expect(fromStore == mirror.records(in: zone), "seed \(seed): store and memory hold different records")
        #expect(try store.read { try $0.syncState(of: zone) } == mirror.syncState(of: zone))
    }

    /// An initial sync merges into a zone that held nothing without looking
    /// each name up; a name that comes again in the same transaction (many
    /// change sets of one zone in one bundle) must still merge with what
    /// came before it, as memory does.
    @Test(arguments: 0..<10 as Range<UInt64>) func manyChangeSetsOfAnEmptyZoneInOneTransactionMergeAsInMemory(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let (writers, genesis) = try writersSharing(zone, clock: clock)
        var deliveries: [[UInt8]] = []
        for _ in 0..<30 {
            clock.now += UInt64.random(in: 0...2, using: &rng)
            let writer = writers.randomElement(using: &rng)!
            try writer.save("r\(Int.random(in: 0..<6, using: &rng))", type: "T", in: zone, changes: [("f\(Int.random(in: 0..<3, using: &rng))", .int64(Int64.random(in: 0...9, using: &rng)))])
            deliveries.append(try writer.makeChangeSet(for: zone, since: VersionVector()))
        }
        let bundle = genesis + deliveries.shuffled(using: &rng).joined()
        let directory = TemporaryDirectory()
        let store = try directory.store()
        let mirror = try MemoryReplica(identity: store.identity, wallClock: { clock.now })
        let stored = try store.apply(bundle)
        let remembered = try mirror.apply(bundle)
        #expect(stored.changeSets == deliveries.count + 1 && stored.recordsChanged == remembered.recordsChanged)
        let fromStore = try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
        #expect(!fromStore.isEmpty && fromStore == mirror.records(in: zone), "seed \(seed): store and memory hold different records")
    }

    @Test func deltasCarryOnlyWhatThePeerLacks() throws {
        let directory = TemporaryDirectory()
        let a = try directory.store("a", zones: [zone])
        let b = try directory.store("b")
        func save(_ name: String, on store: RecordStore) throws {
            try store.write { try $0.save(name, type: "T", in: zone, changes: [("v", .string("\(name) \(UUID())"))]) }
        }
        for index in 0..<100 { try save("r\(index)", on: a) }
        var summary = try b.apply(try a.changeSet(for: zone, since: VersionVector()))
        #expect(summary.recordsChanged == 100 && summary.claimTaken)
        try save("r5", on: a)
        try save("new", on: a)
        let vector = try b.read { try $0.syncState(of: zone)!.vector }
        var names: [String] = []
        var reader = ChangeSetReader(source: ArrayByteSource(try a.changeSet(for: zone, since: vector)))
        _ = try reader.readHeader()
        while let record = try reader.nextRecord() { names.append(record.recordName) }
        #expect(names.sorted() == ["new", "r5"])
        summary = try b.apply(try a.changeSet(for: zone, since: vector))
        #expect(summary.recordsChanged == 2)
        // Nothing at all once the peer is up to date.
        let upToDate = try b.read { try $0.syncState(of: zone)!.vector }
        #expect(try b.apply(try a.changeSet(for: zone, since: upToDate)).recordsReceived == 0)
    }
}

/// A store made by a build that kept a local conflict log opens with the
/// logged losers folded into its records, and without the log table.
@Suite struct StoreMigrationTests {
    @Test func theV1ConflictLogIsFoldedIntoRecords() throws {
        let directory = TemporaryDirectory("lattice-migration")
        let url = directory.url
        let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))
        var stamps: [Stamp] = []
        do {
            let store = try RecordStore(directory: url)
            try store.write { _ = try $0.createZone(zone) }
            for rating in [1, 2] as [Int64] {
                let saved = try store.write { try $0.save("m", type: "T", in: zone, changes: [("rating", .int64(rating))]) }
                stamps.append(saved.state.register(named: "rating")!.stamp)
            }
        }
        // Put the store back to v1: the log table with one entry, the v2 migration not yet run.
        let logged = FieldConflict(recordName: "m", field: "rating", losingValue: .int64(1), losingStamp: stamps[0], winningValue: .int64(2), winningStamp: stamps[1])
        let database = try DatabaseQueue(path: url.appendingPathComponent(RecordStore.databaseFileName).path)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE conflicts (id INTEGER PRIMARY KEY, zone INTEGER NOT NULL, record TEXT NOT NULL, entries BLOB NOT NULL)")
            try db.execute(sql: "INSERT INTO conflicts (zone, record, entries) VALUES ((SELECT id FROM zones), 'm', ?)", arguments: [Data(ConflictCodec.encode([logged]))])
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v2%'")
        }
        try database.close()
        let store = try RecordStore(directory: url)
        let record = try #require(try store.read { try $0.record("m", in: zone) })
        #expect(record.conflicts == [logged])
        #expect(try store.read { snapshot in try snapshot.conflicts(of: "m", in: zone) } == [logged])
    }
}
