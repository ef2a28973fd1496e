import Foundation
import GRDB
@testable import LatticeCore
@testable import LatticeStore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCore

/// Indexes of list members and of locations: a query through them returns
/// the page a scan returns, and reads only the records near its answer.
@Suite struct ListAndLocationIndexTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))
    let directory = TemporaryDirectory("lattice-list-index")

    static let tags = ["noir", "no", "", "drama", "Drama", "é", "e\u{301}", "z\u{10FFFF}", "noir 2", "n"]
    static let prefixes = ["no", "", "n", "e", "é", "D", "z\u{10FFFF}", "noir"]

    func makeStore() throws -> RecordStore { try directory.store(zones: [zone]) }

    /// Places near the poles, the antimeridian, and two cities.
    func randomPlace(_ random: inout SeededGenerator) -> Location {
        let spots: [(Double, Double)] = [(90, 0), (-89.99, 45), (0, 180), (0, -179.999), (10, 179.5), (48.85, 2.35), (-33.9, 151.2)]
        let (latitude, longitude) = spots.randomElement(using: &random)!
        let jitter = [0, 0.0001, 0.01, 1, 20].randomElement(using: &random)!
        return Location(latitude: min(90, max(-90, latitude + Double.random(in: -jitter...jitter, using: &random))),
                        longitude: min(180, max(-180, longitude + Double.random(in: -jitter...jitter, using: &random))))
    }

    func randomWrite(_ store: RecordStore, _ random: inout SeededGenerator) throws {
        let name = "r\(Int.random(in: 0..<120, using: &random))"
        try store.write { transaction in
            if Int.random(in: 0..<8, using: &random) == 0 {
                _ = try transaction.delete([name], in: zone)
                return
            }
            func maybe(_ value: @autoclosure () -> FieldValue) -> FieldValue? { Int.random(in: 0..<5, using: &random) == 0 ? nil : value() }
            _ = try transaction.save(name, type: "Item", in: zone, changes: [
                ("tags", maybe(.list((0..<Int.random(in: 0...4, using: &random)).map { _ in .string(Self.tags.randomElement(using: &random)!) }))),
                ("nums", maybe(.list((0..<Int.random(in: 1...3, using: &random)).map { _ in .int64(Int64.random(in: -3...3, using: &random)) }))),
                ("place", maybe(.location(randomPlace(&random)))),
                ("rank", maybe(.int64(Int64.random(in: 0...9, using: &random)))),
            ])
        }
    }

    /// A condition the list or location indexes can narrow, with the field they read.
    func randomCondition(_ random: inout SeededGenerator) -> QueryCondition {
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return QueryCondition(.field("tags"), .listContains, .string(Self.tags.randomElement(using: &random)!))
        case 1: return QueryCondition(.field("tags"), [.listContainsAny, .listContainsAll].randomElement(using: &random)!,
                                      .list((0..<Int.random(in: 1...3, using: &random)).map { _ in .string(Self.tags.randomElement(using: &random)!) }))
        case 2: return QueryCondition(.field("tags"), .listMemberBeginsWith, .string(Self.prefixes.randomElement(using: &random)!))
        case 3:
            // Doubles equal to whole numbers find them, as in a scan.
            if Bool.random(using: &random) { return QueryCondition(.field("nums"), .listContains, [.int64(2), .double(2.0), .double(-1.5)].randomElement(using: &random)!) }
            return QueryCondition(.field("nums"), [.listContainsAny, .listContainsAll].randomElement(using: &random)!,
                                  [.list([.int64(-1), .double(3.0)]), .list([.int64(0), .int64(1)]), .list([.double(0.5)])].randomElement(using: &random)!)
        default:
            let meters = [0.5, 10, 2_000, 150_000, 1_500_000, 9_000_000].randomElement(using: &random)!
            return QueryCondition(.field("place"), .near, .location(randomPlace(&random)), distance: meters)
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4])
    func listAndLocationIndexesAgreeWithScans(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let store = try makeStore()
        for _ in 0..<100 { try randomWrite(store, &random) }
        try store.write { _ = try $0.save("seed", type: "Item", in: zone, changes: [
            ("tags", .list(["noir"])), ("nums", .list([.int64(1)])), ("place", .location(Location(latitude: 0, longitude: 0))), ("rank", .int64(0)),
        ]) }
        try store.write { transaction in
            for field in ["tags", "nums", "place"] { _ = try transaction.addIndex(.queryable, field: field, of: "Item") }
            _ = try transaction.addIndex(.sortable, field: "rank", of: "Item")
        }
        for _ in 0..<120 {
            let condition = randomCondition(&random)
            let predicate: QueryPredicate = Bool.random(using: &random) ? .condition(condition)
                : .and([.condition(condition), .condition(QueryCondition(.field("rank"), .greaterThan, .int64(Int64.random(in: 0...8, using: &random))))])
            let sorts = [[], [QuerySort(.field("rank"), ascending: Bool.random(using: &random))], [QuerySort(.recordName, ascending: false)]].randomElement(using: &random)!
            let engine = QueryEngine(recordType: "Item", predicate: predicate, sorts: sorts)
            let forcing = [nil, QueryAccess.walk, .candidates].randomElement(using: &random)!
            let limit = Int.random(in: 1...12, using: &random)
            var cursor: QueryPosition?
            for _ in 0..<50 {
                if Int.random(in: 0..<4, using: &random) == 0 { try randomWrite(store, &random) }
                let all = try store.read { try $0.records(ofType: "Item", in: zone) }
                let expected = engine.page(all, after: cursor, limit: limit)
                let actual = try store.read { try $0.queryPage(engine, in: zone, after: cursor, limit: limit, forcing: forcing) }
                #expect(actual.records.map(\.recordName) == expected.records.map(\.recordName), "seed \(seed): \(predicate) sorted by \(sorts) (\(actual.strategy))")
                #expect(actual.next == expected.next)
                // The planner narrows every one of these conditions by its index, except a NEAR that spans most of the Earth
                // (the store may still find a scan cheaper).
                let field = { if case .field(let name) = condition.key { return name } else { return "" } }()
                if condition.comparator != .near || condition.distance! < 5_000_000 {
                    let planned = QueryPlanner.plan(engine, schema: try store.read { try $0.schema() })
                    #expect(planned.filter?.fields.contains(field) == true, "\(condition) was not narrowed by its index: \(planned)")
                }
                guard let next = expected.next, actual.next == expected.next else { break }
                cursor = next
            }
        }
    }

    @Test func aListOrLocationQueryReadsOnlyTheRecordsItReturns() throws {
        let store = try makeStore()
        try store.write { transaction in
            for i in 0..<4_000 {
                // One record in 100 is tagged "rare"; places spread a degree apart along the equator.
                let tags: [FieldValue] = i % 100 == 7 ? ["common", "rare"] : ["common", .string("t\(i % 50)")]
                try transaction.save(String(format: "m%05d", i), type: "Place", in: zone, changes: [
                    ("tags", .list(tags)), ("where", .location(Location(latitude: 0, longitude: Double(i % 360) - 180 + 0.5))),
                ])
            }
        }
        func page(_ condition: QueryCondition) throws -> QueryPageResult {
            try store.read { try $0.queryPage(QueryEngine(recordType: "Place", predicate: .condition(condition), sorts: []), in: zone, after: nil, limit: 1_000) }
        }
        let rare = QueryCondition(.field("tags"), .listContains, .string("rare"))
        let near = QueryCondition(.field("where"), .near, .location(Location(latitude: 0, longitude: 0)), distance: 200_000)
        let prefix = QueryCondition(.field("tags"), .listMemberBeginsWith, .string("t4"))
        #expect(try page(rare).recordsRead == 4_000)
        try store.write { _ = try $0.addIndex(.queryable, field: "tags", of: "Place") }
        try store.write { _ = try $0.addIndex(.queryable, field: "where", of: "Place") }
        let rarePage = try page(rare)
        #expect(rarePage.records.count == 40)
        #expect(rarePage.recordsRead == 40)
        // Longitudes -1.5, -0.5, 0.5 and 1.5 lie within 200 km of (0, 0), 11 records at each.
        let nearPage = try page(near)
        #expect(nearPage.records.count == 44)
        #expect(nearPage.recordsRead == 44)
        // "t4" and "t40"…"t49": 11 of the 50 tags, on records without "rare".
        let prefixPage = try page(prefix)
        #expect(prefixPage.records.count == prefixPage.recordsRead)
        let tagged = (0..<4_000).filter { (i: Int) -> Bool in
            let tag = i % 50
            return i % 100 != 7 && (tag == 4 || tag >= 40)
        }
        #expect(prefixPage.records.count == tagged.count)
    }

    /// A store of an earlier build whose schema carried a list field's index
    /// kinds (from a peer) held them in an empty column: opening it builds
    /// the member table from the records.
    @Test func aStoreFromAnEarlierBuildGetsItsListIndexAtUpgrade() throws {
        do {
            let store = try makeStore()
            try store.write { transaction in
                for i in 0..<20 { try transaction.save("m\(i)", type: "Movie", in: zone, changes: [("tags", .list([.string("t\(i % 4)")]))]) }
            }
        }
        // What an earlier build left: the kinds recorded, no member table, no v14.
        try DatabaseQueue(path: directory.url.appendingPathComponent("store/lattice.sqlite").path).write { db in
            try db.execute(sql: "INSERT INTO schema_indexes (record_type, field, kinds) VALUES ('Movie', 'tags', 1)")
            try db.execute(sql: "DROP TABLE index_removals")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v14: index removals'")
        }
        let reopened = try RecordStore(directory: directory.url.appendingPathComponent("store"))
        let query = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("tags"), .listContains, .string("t1"))), sorts: [])
        let page = try reopened.read { try $0.queryPage(query, in: zone, after: nil, limit: 50) }
        #expect(page.records.map(\.recordName) == ["m1", "m13", "m17", "m5", "m9"])
        #expect(page.recordsRead == 5, "\(page.strategy)")
    }

    /// The boxes a NEAR reads hold every location within its distance,
    /// around the poles and across the antimeridian too.
    @Test func nearBoxesHoldEveryLocationWithinTheDistance() {
        var random = SeededGenerator(seed: 42)
        var inside = 0
        for _ in 0..<200_000 {
            let center = randomPlace(&random)
            let meters = [1, 1_000, 100_000, 2_000_000, 9_000_000].randomElement(using: &random)! * Double.random(in: 0.5...1.5, using: &random)
            guard let boxes = GeoBounds.boxes(around: center, within: meters) else {
                #expect(meters > 9_000_000, "no boxes for \(meters) m")
                continue
            }
            // Points on the circle's edge and inside it, at random bearings.
            let angle = meters / 6_371_008.8 * Double.random(in: 0.9...1, using: &random)
            let bearing = Double.random(in: 0..<(2 * .pi), using: &random)
            let φ1 = center.latitude * .pi / 180, λ1 = center.longitude * .pi / 180
            let φ2 = asin(sin(φ1) * cos(angle) + cos(φ1) * sin(angle) * cos(bearing))
            var λ2 = λ1 + atan2(sin(bearing) * sin(angle) * cos(φ1), cos(angle) - sin(φ1) * sin(φ2))
            λ2 = (λ2 + 3 * .pi).truncatingRemainder(dividingBy: 2 * .pi) - .pi
            let point = Location(latitude: min(90, max(-90, φ2 * 180 / .pi)), longitude: min(180, max(-180, λ2 * 180 / .pi)))
            guard point.distance(to: center) <= meters else { continue }
            inside += 1
            #expect(boxes.contains { $0.contains(point) }, "\(point) is \(point.distance(to: center)) m from \(center), outside \(boxes)")
        }
        #expect(inside > 150_000)
        #expect(GeoBounds.boxes(around: Location(latitude: 0, longitude: 0), within: 11_000_000) == nil)
        #expect(GeoBounds.boxes(around: Location(latitude: 95, longitude: 0), within: 10) == nil)
    }
}
