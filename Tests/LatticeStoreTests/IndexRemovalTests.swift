import Foundation
import GRDB
@testable import LatticeCore
@testable import LatticeStore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCore

/// Removing an index is a device's own choice: its tables go, queries give
/// the same pages, a peer's schema does not bring it back, and the removal
/// is not sent; adding the index again here brings it back.
@Suite struct IndexRemovalTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))
    let directory = TemporaryDirectory("lattice-index-removal")

    func makeStore(_ name: String) throws -> RecordStore { try directory.store(name, zones: [zone]) }

    func tables(_ store: RecordStore) throws -> [String] {
        try store.read { try String.fetchAll($0.db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'ix%' OR name LIKE 'gx%' OR name LIKE 'lm%' OR name LIKE 'tk%' ORDER BY name") }
    }

    @Test func aRemovedIndexStaysOffHereAndOnlyHere() throws {
        let a = try makeStore("a")
        let b = try makeStore("b")
        try a.write { transaction in
            for i in 0..<200 {
                try transaction.save("m\(i)", type: "Movie", in: zone, changes: [
                    ("rating", .int64(Int64(i % 10))), ("tags", .list([.string("t\(i % 7)")])), ("where", .location(Location(latitude: Double(i % 80), longitude: 0))),
                ])
            }
            _ = try transaction.addIndex([.queryable, .sortable], field: "rating", of: "Movie")
            _ = try transaction.addIndex(.queryable, field: "tags", of: "Movie")
            _ = try transaction.addIndex(.queryable, field: "where", of: "Movie")
        }
        try sync(a, to: b, zone)
        let query = QueryEngine(recordType: "Movie", predicate: .and([
            .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(8))),
            .condition(QueryCondition(.field("where"), .near, .location(Location(latitude: 10, longitude: 0)), distance: 2_000_000)),
        ]), sorts: [QuerySort(.field("rating"), ascending: false)])
        let indexed = try b.read { try $0.queryPage(query, in: zone, after: nil, limit: 7) }
        #expect(indexed.plan.filter?.fields == ["rating", "where"])
        let tablesBefore = try tables(b)
        #expect(tablesBefore.contains { $0.hasPrefix("gx_") })

        #expect(try b.write { try $0.removeIndex(.all, field: "where", of: "Movie") } == .queryable)
        #expect(try b.write { try $0.removeIndex(.sortable, field: "rating", of: "Movie") } == .sortable)
        #expect(try b.write { try $0.removeIndex(.sortable, field: "rating", of: "Movie") } == [])
        let schema = try b.read { try $0.schema() }
        #expect(schema.indexKinds("where", of: "Movie") == [] && schema.indexKinds("rating", of: "Movie") == .queryable)
        #expect(try !tables(b).contains { $0.hasPrefix("gx_") }, "the location index's R*Tree is dropped")
        let unindexed = try b.read { try $0.queryPage(query, in: zone, after: nil, limit: 7) }
        #expect(unindexed.records.map(\.recordName) == indexed.records.map(\.recordName))
        #expect(unindexed.plan.filter?.fields == ["rating"])

        // a's next change sets carry the kinds; b keeps them off. b's own change sets leave them out.
        try a.write { _ = try $0.save("m200", type: "Movie", in: zone, changes: [("rating", .int64(10)), ("where", .location(Location(latitude: 10, longitude: 0)))]) }
        try sync(a, to: b, zone)
        #expect(try b.read { try $0.schema() }.indexKinds("where", of: "Movie") == [])
        #expect(try b.read { try $0.queryPage(query, in: zone, after: nil, limit: 7) }.records.first?.recordName == "m200")
        let c = try makeStore("c")
        try sync(b, to: c, zone)
        #expect(try c.read { try $0.schema() }.indexKinds("where", of: "Movie") == [])
        #expect(try c.read { try $0.schema() }.indexKinds("tags", of: "Movie") == .queryable)
        try sync(b, to: a, zone)
        #expect(try a.read { try $0.schema() }.indexKinds("where", of: "Movie") == .queryable, "a removal is not sent")

        // It holds across a reopening, and adding the kind here brings the index back, filled.
        let reopened = try RecordStore(directory: directory.url.appendingPathComponent("b"))
        #expect(try reopened.read { try $0.schema() }.indexKinds("where", of: "Movie") == [])
        #expect(try reopened.write { try $0.addIndex(.queryable, field: "where", of: "Movie") } == .queryable)
        let restored = try reopened.read { try $0.queryPage(query, in: zone, after: nil, limit: 7) }
        #expect(restored.plan.filter?.fields == ["rating", "where"])
        #expect(restored.records.map(\.recordName) == ["m200"] + indexed.records.map(\.recordName).prefix(6))
        let rtree = try #require(try tables(reopened).first { $0.hasPrefix("gx_") && !$0.contains("_node") && !$0.contains("_parent") && !$0.contains("_rowid") })
        #expect(try reopened.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM \"\(rtree)\"") } == 201)
        // A location can only be queryable: nothing else was kept off, so nothing is left kept off.
        #expect(try reopened.read { try $0.schema() }.removedIndexes[Schema.Key(recordType: "Movie", field: "where")] == nil)
        // Removing an index of a field nobody defined is an error, not a silent record.
        #expect(throws: ReplicaError.self) { try reopened.write { _ = try $0.removeIndex(.all, field: "nope", of: "Movie") } }
    }

    /// An index can arrive before its field's definition (a peer's definition
    /// held back by the clock-skew bound, say): the field's first definition
    /// then decides how its index is held, and the index is rebuilt for it.
    @Test func anIndexWhoseFieldIsDefinedLaterIsRebuiltForTheFieldsType() throws {
        let store = try makeStore("s")
        var asked = Schema()
        asked.merge(index: .queryable, field: "tags", of: "Movie")
        asked.merge(index: .queryable, field: "where", of: "Movie")
        try store.write { _ = try $0.mergeSchema(asked) }
        try store.write { transaction in
            for i in 0..<30 {
                try transaction.save("m\(i)", type: "Movie", in: zone, changes: [
                    ("tags", .list([.string("t\(i % 3)")])), ("where", .location(Location(latitude: Double(i), longitude: 0))),
                ])
            }
        }
        let query = QueryEngine(recordType: "Movie", predicate: .and([
            .condition(QueryCondition(.field("tags"), .listContains, .string("t1"))),
            // m7 and m13 lie 334 km from the center, m4 and m16 667 km.
            .condition(QueryCondition(.field("where"), .near, .location(Location(latitude: 10, longitude: 0)), distance: 350_000)),
        ]), sorts: [])
        let page = try store.read { try $0.queryPage(query, in: zone, after: nil, limit: 50) }
        #expect(page.plan.filter?.fields == ["tags", "where"])
        #expect(page.records.map(\.recordName) == ["m10", "m13", "m7"])
        #expect(page.recordsRead == 3)
    }

    /// The in-memory replica keeps the same rule, so the fuzzer's twin agrees with the store.
    @Test func theInMemoryReplicaKeepsARemovalAsTheStoreDoes() throws {
        let memory = MemoryReplica(replica: ReplicaID(bytes: [UInt8](repeating: 3, count: 16)), wallClock: { 1_000 })
        memory.createZone(zone)
        try memory.save("m", type: "Movie", in: zone, changes: [("rating", .int64(1))])
        try memory.addIndex(.sortable, field: "rating", of: "Movie")
        #expect(try memory.removeIndex(.all, field: "rating", of: "Movie") == .sortable)
        var peer = Schema()
        peer.merge(index: [.queryable, .sortable], field: "rating", of: "Movie")
        try memory.transaction { _ = try (memory as any ReplicaStorage).mergeSchema(peer) }
        #expect(memory.schema().indexKinds("rating", of: "Movie") == [])
        #expect(try memory.addIndex(.queryable, field: "rating", of: "Movie") == .queryable)
        #expect(memory.schema().indexKinds("rating", of: "Movie") == .queryable)
    }
}
