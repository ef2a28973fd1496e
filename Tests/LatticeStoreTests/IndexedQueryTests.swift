import Foundation
import GRDB
@testable import LatticeCore
@testable import LatticeStore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCore

/// Field indexes on disk: whatever plan a query takes, its pages are the ones
/// a scan of every record gives, through writes, deletes, type changes,
/// zones and merges; and an indexed query reads only what it returns.
@Suite struct IndexedQueryTests {
    let zones = [ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "A")), ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "B"))]
    let directory = TemporaryDirectory("lattice-index")

    // Canonically equivalent spellings ("é" and "e" + U+0301) are different text to an index and to the engine.
    static let titles = ["Toy", "Toy Story", "Toy Story 2", "toy", "Up", "Über", "école", "e\u{301}cole", "", "Z", "Zebra \u{10FFFF}", "Cars", "Coco", "Café", "Cafe\u{301}"]
    static let words = ["toy story", "story of a toy", "cars", "up up and away", "Coco music", "", "école et toy", "e\u{301}cole café", "cafe\u{301}"]
    static let big: Int64 = 9_007_199_254_740_992 // 2^53: doubles round the integers around it

    func makeStore(_ name: String) throws -> RecordStore { try directory.store(name, zones: zones) }

    func randomFields(_ random: inout SeededGenerator) -> [(name: String, value: FieldValue?)] {
        func maybe(_ value: @autoclosure () -> FieldValue) -> FieldValue? { Int.random(in: 0..<5, using: &random) == 0 ? nil : value() }
        return [
            ("title", maybe(.string(Self.titles.randomElement(using: &random)!))),
            ("rating", maybe(.int64(Int64.random(in: 0...9, using: &random)))),
            ("score", maybe(.double(Double(Int.random(in: -20...20, using: &random)) / 4))),
            ("flag", maybe(.bool(Bool.random(using: &random)))),
            ("words", maybe(.string(Self.words.randomElement(using: &random)!))),
            ("when", maybe(.date(Int64.random(in: 0...5, using: &random) * 86_400_000))),
            ("blob", maybe(.bytes([[1, 2], [5], [1], [], [0xFF, 0]].randomElement(using: &random)!))),
            ("owner", maybe(.reference(RecordReference(recordName: ["bb", "bc", "c", "é", "e\u{301}"].randomElement(using: &random)!)))),
            ("big", maybe(.int64(Self.big + Int64.random(in: -2...2, using: &random)))),
            ("tags", maybe(.list((0..<Int.random(in: 0...3, using: &random)).map { _ in .string(Self.tags.randomElement(using: &random)!) }))),
            // Never empty: an empty list would define the field as a list of strings.
            ("nums", maybe(.list((0..<Int.random(in: 1...3, using: &random)).map { _ in .int64(Int64.random(in: -2...4, using: &random)) }))),
            ("place", maybe(.location(randomPlace(&random)))),
        ]
    }

    static let tags = ["noir", "no", "", "drama", "Drama", "é", "e\u{301}", "z\u{10FFFF}", "noir 2"]
    /// Places that crowd the poles, the antimeridian and a few spots.
    static let spots: [(Double, Double)] = [(90, 0), (-90, 180), (89.9, 179.9), (0, 180), (0, -180), (0, 179.99), (48.85, 2.35), (-33.9, 151.2), (0, 0)]

    func randomPlace(_ random: inout SeededGenerator) -> Location {
        let (latitude, longitude) = Self.spots.randomElement(using: &random)!
        let jitter = [0, 0.001, 0.5, 5].randomElement(using: &random)!
        return Location(latitude: min(90, max(-90, latitude + Double.random(in: -jitter...jitter, using: &random))),
                        longitude: min(180, max(-180, longitude + Double.random(in: -jitter...jitter, using: &random))))
    }

    /// Random saves, re-saves that drop fields, deletes, and re-creations as another type.
    func randomWrite(_ store: RecordStore, _ random: inout SeededGenerator) throws {
        let zone = zones.randomElement(using: &random)!
        let name = "r\(Int.random(in: 0..<60, using: &random))"
        try store.write { transaction in
            let existing = try transaction.record(named: name, in: zone)
            if let existing, existing.isAlive, Int.random(in: 0..<6, using: &random) == 0 {
                _ = try transaction.delete([name], in: zone)
                return
            }
            let type = existing?.isAlive == true ? existing!.recordType : (Int.random(in: 0..<5, using: &random) == 0 ? "Other" : "Item")
            _ = try transaction.save(name, type: type, in: zone, changes: randomFields(&random))
        }
    }

    func randomCondition(_ random: inout SeededGenerator) -> QueryPredicate {
        let condition: QueryCondition
        switch Int.random(in: 0..<21, using: &random) {
        case 0: condition = QueryCondition(.field("title"), .beginsWith, .string(["Toy", "e", "é", "Z", "", "toy S"].randomElement(using: &random)!))
        case 1: condition = QueryCondition(.field("title"), .equals, .string(Self.titles.randomElement(using: &random)!))
        case 2: condition = QueryCondition(.field("title"), [.lessThan, .greaterThanOrEquals].randomElement(using: &random)!, .string(Self.titles.randomElement(using: &random)!))
        case 3: condition = QueryCondition(.field("rating"), [.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals, .equals, .notEquals].randomElement(using: &random)!, .int64(Int64.random(in: 0...9, using: &random)))
        case 4: condition = QueryCondition(.field("rating"), .in, .list([.int64(Int64.random(in: 0...9, using: &random)), .double(2.0), .int64(7)]))
        case 5: condition = QueryCondition(.field("score"), [.lessThan, .greaterThan].randomElement(using: &random)!, .int64(Int64.random(in: -5...5, using: &random)))
        case 6: condition = QueryCondition(.field("flag"), .equals, .bool(Bool.random(using: &random)))
        case 7: condition = QueryCondition(.field("words"), [.containsAllTokens, .containsAnyTokens].randomElement(using: &random)!, .string(["toy", "story toy", "up cars", "école", "nothing", "café", "cafe\u{301} café", "e\u{301}cole"].randomElement(using: &random)!))
        case 8: condition = QueryCondition(.recordName, [.beginsWith, .greaterThan].randomElement(using: &random)!, .string(["r1", "r3", "r"].randomElement(using: &random)!))
        case 9: condition = QueryCondition(.field("when"), .greaterThanOrEquals, .date(Int64.random(in: 0...5, using: &random) * 86_400_000))
        case 10: condition = QueryCondition(.field("blob"), .equals, .bytes([[1, 2], [5], []].randomElement(using: &random)!))
        case 11: condition = QueryCondition(.field("owner"), .equals, [.string("é"), .string("e\u{301}"), .reference(RecordReference(recordName: "bb"))].randomElement(using: &random)!)
        case 12: condition = QueryCondition(.field("big"), [.lessThanOrEquals, .equals, .greaterThan].randomElement(using: &random)!, .double(Double(Self.big) + [0, 2, -2].randomElement(using: &random)!))
        case 13: condition = QueryCondition(.field("rating"), .in, .list((0..<600).map { .int64(Int64($0 % 7)) }))
        case 14: condition = QueryCondition(.field("tags"), [.listContains, .notListContains].randomElement(using: &random)!, .string(Self.tags.randomElement(using: &random)!))
        case 15: condition = QueryCondition(.field("tags"), [.listContainsAny, .listContainsAll, .notListContainsAll].randomElement(using: &random)!,
                                            .list((0..<Int.random(in: 0...2, using: &random)).map { _ in .string(Self.tags.randomElement(using: &random)!) }))
        case 16: condition = QueryCondition(.field("tags"), [.listMemberBeginsWith, .listMemberBeginsWith, .notListMemberBeginsWith].randomElement(using: &random)!,
                                            .string(["no", "", "e", "é", "D", "z\u{10FFFF}"].randomElement(using: &random)!))
        case 17: condition = QueryCondition(.field("nums"), [.listContains, .listContainsAny, .listContainsAll].randomElement(using: &random)!,
                                            [.int64(2), .double(2.0), .double(2.5), .list([.int64(-1), .double(3.0)]), .list([.int64(4)])].randomElement(using: &random)!)
        case 18, 19:
            // Radii from a meter to a quarter of the Earth, about a place near the crowded ones.
            let meters = [1.0, 500, 60_000, 600_000, 5_000_000, 10_000_000].randomElement(using: &random)!
            condition = QueryCondition(.field("place"), .near, .location(randomPlace(&random)), distance: meters)
        default: condition = QueryCondition(.field("title"), .notBeginsWith, .string("Toy"))
        }
        return .condition(condition)
    }

    func randomPredicate(_ random: inout SeededGenerator, depth: Int = 0) -> QueryPredicate {
        switch depth < 2 ? Int.random(in: 0..<7, using: &random) : 6 {
        case 0: return .all
        case 1, 2: return .and((0..<Int.random(in: 1...3, using: &random)).map { _ in randomPredicate(&random, depth: depth + 1) })
        case 3: return .or((0..<Int.random(in: 1...3, using: &random)).map { _ in randomPredicate(&random, depth: depth + 1) })
        case 4: return .not(randomPredicate(&random, depth: depth + 1))
        default: return randomCondition(&random)
        }
    }

    func randomSorts(_ random: inout SeededGenerator) -> [QuerySort] {
        let keys: [QueryKey] = [.field("title"), .field("rating"), .field("score"), .field("flag"), .field("when"), .recordName, .field("words"), .field("blob"), .field("owner"), .field("big")]
        return (0..<Int.random(in: 0...2, using: &random)).map { _ in QuerySort(keys.randomElement(using: &random)!, ascending: Bool.random(using: &random)) }
    }

    func expectedPage(_ store: RecordStore, _ engine: QueryEngine, _ zone: ZoneKey, after cursor: QueryPosition?, limit: Int) throws -> (records: [RecordState], next: QueryPosition?) {
        let all = try store.read { try $0.records(ofType: engine.recordType, in: zone) }
        return engine.page(all, after: cursor, limit: limit)
    }

    /// Index rows agree with the records: one row per live record of the type.
    func checkIndexRows(_ store: RecordStore, type: String) throws {
        try store.read { snapshot in
            let indexed = try Int.fetchOne(snapshot.db, sql: "SELECT COUNT(*) FROM \(TypeIndex.table(type))") ?? -1
            let live = try Int.fetchOne(snapshot.db, sql: "SELECT COUNT(*) FROM records WHERE type = ? AND alive = 1", arguments: [type]) ?? -2
            #expect(indexed == live)
            let index = try #require(TypeIndex(recordType: type, schema: try snapshot.schema()))
            var members = 0, places = 0
            for record in try snapshot.records(ofType: type, in: zones[0]) + snapshot.records(ofType: type, in: zones[1]) {
                for field in index.listed {
                    // Distinct by bytes, as SQLite tells members apart (Swift equates canonically equivalent text).
                    if case .list(let items)? = record[field: field] {
                        members += Set(items.map { item -> [UInt8] in
                            switch item {
                            case .string(let text): return [0] + Array(text.utf8)
                            case .int64(let number): return [1] + withUnsafeBytes(of: number, Array.init)
                            default: Issue.record("unexpected member \(item)"); return []
                            }
                        }).count
                    }
                }
                for (field, _) in index.located { if case .location? = record[field: field] { places += 1 } }
            }
            if !index.listed.isEmpty { #expect(try Int.fetchOne(snapshot.db, sql: "SELECT COUNT(*) FROM \(index.memberTable)") == members) }
            let located = try index.located.reduce(0) { $0 + (try Int.fetchOne(snapshot.db, sql: "SELECT COUNT(*) FROM \($1.table)") ?? 0) }
            #expect(located == places)
        }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func everyPlanPagesExactlyAsAScan(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let store = try makeStore("s")
        // Index some fields before any record (maintenance), others after (backfill).
        let early = Int.random(in: 0...1, using: &random) == 0
        func addIndexes() throws {
            try store.write { transaction in
                _ = try transaction.addIndex([.sortable, .searchable], field: "title", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "rating", of: "Item")
                _ = try transaction.addIndex(.sortable, field: "score", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "flag", of: "Item")
                _ = try transaction.addIndex(.searchable, field: "words", of: "Item")
                _ = try transaction.addIndex(.sortable, field: "when", of: "Item")
                // Queryable only: an index on them filters but never orders.
                _ = try transaction.addIndex(.queryable, field: "blob", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "owner", of: "Item")
                _ = try transaction.addIndex([.queryable, .sortable], field: "big", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "tags", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "nums", of: "Item")
                _ = try transaction.addIndex(.queryable, field: "place", of: "Item")
            }
        }
        for _ in 0..<8 { try randomWrite(store, &random) }
        if early {
            // Fields must exist before they are indexed: write one of each.
            try store.write { _ = try $0.save("seed", type: "Item", in: zones[0], changes: [
                ("title", "Toy"), ("rating", .int64(1)), ("score", .double(0.5)), ("flag", .bool(true)), ("words", "toy"), ("when", .date(0)),
                ("blob", .bytes([1])), ("owner", .reference(RecordReference(recordName: "c"))), ("big", .int64(Self.big)),
                ("tags", .list(["noir"])), ("nums", .list([.int64(1)])), ("place", .location(Location(latitude: 1, longitude: 2))),
            ]) }
            try addIndexes()
        }
        for _ in 0..<150 { try randomWrite(store, &random) }
        if !early {
            try store.write { _ = try $0.save("seed", type: "Item", in: zones[0], changes: [
                ("title", "Toy"), ("rating", .int64(1)), ("score", .double(0.5)), ("flag", .bool(true)), ("words", "toy"), ("when", .date(0)),
                ("blob", .bytes([1])), ("owner", .reference(RecordReference(recordName: "c"))), ("big", .int64(Self.big)),
                ("tags", .list(["noir"])), ("nums", .list([.int64(1)])), ("place", .location(Location(latitude: 1, longitude: 2))),
            ]) }
            try addIndexes()
        }
        try checkIndexRows(store, type: "Item")
        for _ in 0..<60 {
            let engine = QueryEngine(recordType: "Item", predicate: randomPredicate(&random), sorts: randomSorts(&random))
            let zone = zones.randomElement(using: &random)!
            let limit = Int.random(in: 1...9, using: &random)
            let forcing = [nil, QueryAccess.walk, .candidates, .scan].randomElement(using: &random)!
            var cursor: QueryPosition?
            for _ in 0..<100 {
                if Int.random(in: 0..<3, using: &random) == 0 { try randomWrite(store, &random) }
                let expected = try expectedPage(store, engine, zone, after: cursor, limit: limit)
                let actual = try store.read { try $0.queryPage(engine, in: zone, after: cursor, limit: limit, forcing: forcing) }
                #expect(actual.records.map(\.recordName) == expected.records.map(\.recordName), "seed \(seed): \(engine.predicate) sorted by \(engine.sorts) (\(actual.strategy))")
                #expect(actual.next == expected.next)
                guard let next = expected.next, actual.next == expected.next else { break }
                cursor = next
            }
        }
        try checkIndexRows(store, type: "Item")
        try store.write { try $0.deleteZone(zones[0]) }
        try checkIndexRows(store, type: "Item")
    }

    @Test func aQueryWhoseFilterAndSortAreIndexedReadsOnlyWhatItReturns() throws {
        let store = try makeStore("s")
        try store.write { transaction in
            for i in 0..<3_000 {
                try transaction.save(String(format: "m%05d", i), type: "Movie", in: zones[0], changes: [
                    ("title", .string("title \((i * 7919) % 3_000)")), ("rating", .int64(Int64(i % 10))),
                ])
            }
        }
        let query = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(5))), sorts: [QuerySort(.field("title"))])
        let before = try store.read { try $0.queryPage(query, in: zones[0], after: nil, limit: 20) }
        #expect(before.recordsRead == 3_000)
        #expect(before.plan.suggestions.map(\.field) == ["title", "rating"])

        try store.write { _ = try $0.addIndex(.sortable, field: "title", of: "Movie") }
        try store.write { _ = try $0.addIndex(.queryable, field: "rating", of: "Movie") }
        let first = try store.read { try $0.queryPage(query, in: zones[0], after: nil, limit: 20) }
        #expect(first.records.map(\.recordName) == before.records.map(\.recordName))
        #expect(first.recordsRead == 21)
        #expect(first.plan.suggestions.isEmpty)
        let second = try store.read { try $0.queryPage(query, in: zones[0], after: first.next, limit: 20) }
        #expect(second.recordsRead == 21)
        #expect(second.records.count == 20)

        // A filter that few records pass is read through its own index.
        let rare = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("title"), .beginsWith, .string("title 12"))), sorts: [QuerySort(.field("rating"), ascending: false)])
        try store.write { _ = try $0.addIndex(.queryable, field: "title", of: "Movie") }
        let narrow = try store.read { try $0.queryPage(rare, in: zones[0], after: nil, limit: 5) }
        #expect(narrow.recordsRead == 111) // "title 12" and "title 120"…"title 1299"
        #expect(narrow.records.count == 5)
    }

    @Test func indexesTravelWithTheSchema() throws {
        let a = try makeStore("a")
        let b = try makeStore("b")
        try a.write { transaction in
            for i in 0..<50 { try transaction.save("m\(i)", type: "Movie", in: zones[0], changes: [("rating", .int64(Int64(i % 5)))]) }
        }
        try a.write { _ = try $0.addIndex(.sortable, field: "rating", of: "Movie") }
        try a.write { _ = try $0.save("m50", type: "Movie", in: zones[0], changes: [("rating", .int64(9))]) }
        let indexed = try a.changeSet(for: zones[0], since: VersionVector())
        #expect(indexed[4] == ChangeSetFormat.version)
        try b.apply(indexed)
        #expect(try b.read { try $0.schema() }.indexKinds("rating", of: "Movie") == .sortable)
        try checkIndexRows(b, type: "Movie")
        let query = QueryEngine(recordType: "Movie", predicate: .all, sorts: [QuerySort(.field("rating"), ascending: false)])
        let page = try b.read { try $0.queryPage(query, in: zones[0], after: nil, limit: 3) }
        #expect(page.records.first?.recordName == "m50")
        #expect(page.recordsRead == 3 + 1)
    }

    @Test func aMergedSpellingThatSwiftCallsEqualStillReachesTheIndex() throws {
        let clock = ManualClock()
        func store(_ name: String) throws -> RecordStore {
            let store = try RecordStore(directory: directory.url.appendingPathComponent(name), wallClock: { clock.now })
            try store.write { _ = try $0.createZone(zones[0]) }
            return store
        }
        let (a, b, c) = (try store("a"), try store("b"), try store("c"))
        try a.write { _ = try $0.save("seed", type: "Note", in: zones[0], changes: [("title", "x")]) }
        try a.write { _ = try $0.addIndex([.queryable, .sortable], field: "title", of: "Note") }
        try b.write { _ = try $0.save("n", type: "Note", in: zones[0], changes: [("title", "Café"), ("n", .int64(1))]) }
        clock.now += 1_000
        // c writes the same record later, spelling the title decomposed: Swift's == calls the two equal, SQL does not.
        try c.write { _ = try $0.save("n", type: "Note", in: zones[0], changes: [("title", "Cafe\u{301}"), ("n", .int64(2))]) }
        for from in [b, c] {
            let since = try a.read { try $0.syncState(of: zones[0])?.vector } ?? VersionVector()
            try a.apply(try from.changeSet(for: zones[0], since: since))
        }
        let stored = try #require(try a.read { try $0.record("n", in: zones[0]) })
        #expect(stored[field: "title"].map { if case .string(let text) = $0 { return Array(text.utf8) } else { return [] } } == Array("Cafe\u{301}".utf8))
        for (title, expected) in [("Cafe\u{301}", ["n"]), ("Café", [])] {
            let query = QueryEngine(recordType: "Note", predicate: .condition(QueryCondition(.field("title"), .equals, .string(title))), sorts: [])
            let page = try a.read { try $0.queryPage(query, in: zones[0], after: nil, limit: 10) }
            #expect(page.records.map(\.recordName) == expected, "\(Array(title.utf8)) (\(page.strategy))")
        }
    }

    @Test func aHostileIndexSectionIsRefused() throws {
        var schema = Schema()
        schema.merge(index: .queryable, field: "title", of: "Movie")
        let replica = ReplicaID(bytes: [UInt8](repeating: 7, count: 16))
        let header = ChangeSetHeader(
            zone: zones[0], zoneState: ZoneState(causalLength: 1, stamp: Stamp(time: HLCTimestamp(rawValue: 1), replica: replica)),
            base: VersionVector(), top: VersionVector(), claimsTop: true, replicas: [replica], schema: schema)
        var writer = BinaryWriter()
        try HeaderCodec.encode(header, version: 3, into: &writer)
        var reader = BinaryReader(writer.bytes)
        #expect(try HeaderCodec.decode(from: &reader, version: 3).schema.indexKinds("title", of: "Movie") == .queryable)
        for kinds: UInt8 in [0, 8, 0xFF] {
            var bytes = writer.bytes
            bytes[bytes.count - 1] = kinds
            var hostile = BinaryReader(bytes)
            #expect(throws: BinaryDecodingError.self) { _ = try HeaderCodec.decode(from: &hostile, version: 3) }
        }
        // More indexed fields on one type than its index table may have columns for.
        var crowded = Schema()
        for i in 0...Limits.maximumIndexedFieldsPerType { crowded.merge(index: .queryable, field: "f\(i)", of: "Movie") }
        var crowdedHeader = header
        crowdedHeader.schema = crowded
        var crowdedBytes = BinaryWriter()
        try HeaderCodec.encode(crowdedHeader, version: 3, into: &crowdedBytes)
        var crowdedReader = BinaryReader(crowdedBytes.bytes)
        #expect(throws: BinaryDecodingError.self) { _ = try HeaderCodec.decode(from: &crowdedReader, version: 3) }
        // A version-2 reader of the same bytes finds trailing bytes, not a crash.
        var old = BinaryReader(writer.bytes)
        #expect(throws: BinaryDecodingError.self) { _ = try HeaderCodec.decode(from: &old, version: 2) }
    }

    @Test func anIndexNeedsAFieldOfAnIndexableType() throws {
        let store = try makeStore("s")
        try store.write { _ = try $0.save("m", type: "Movie", in: zones[0], changes: [("tags", .list(["a"])), ("rating", .int64(1))]) }
        try store.write { _ = try $0.save("n", type: "Movie", in: zones[0], changes: [
            ("posters", .list([.asset(AssetReference(hash: [UInt8](repeating: 1, count: 32), size: 1))])),
            ("stops", .list([.location(Location(latitude: 1, longitude: 2))])), ("where", .location(Location(latitude: 1, longitude: 2))),
        ]) }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.sortable, field: "tags", of: "Movie") } }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.queryable, field: "posters", of: "Movie") } }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.queryable, field: "stops", of: "Movie") } }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.sortable, field: "where", of: "Movie") } }
        #expect(try store.write { try $0.addIndex(.queryable, field: "tags", of: "Movie") } == .queryable)
        #expect(try store.write { try $0.addIndex(.queryable, field: "where", of: "Movie") } == .queryable)
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.searchable, field: "rating", of: "Movie") } }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.queryable, field: "missing", of: "Movie") } }
        #expect(throws: ReplicaError.self) { try store.write { _ = try $0.addIndex(.queryable, field: "x", of: "Nope") } }
        let sequence = try store.currentSequence()
        #expect(try store.write { try $0.addIndex(.queryable, field: "rating", of: "Movie") } == .queryable)
        #expect(try store.write { try $0.addIndex(.queryable, field: "rating", of: "Movie") } == [])
        #expect(try store.currentSequence() == sequence) // a schema change is not a record commit
    }
}
