import Foundation
import Lattice
import LatticeTestSupport
import Testing

@Suite struct QueryTests {
    let directory = TemporaryDirectory()

    func seeded() throws -> Database {
        let database = try directory.container().privateCloudDatabase
        let rows: [(String, FieldValue, Int64, Double, [FieldValue], Location)] = [
            ("Toy Story", "Lasseter", 5, 8.3, ["pixar", "toys"], Location(latitude: 37.8, longitude: -122.3)),
            ("Toy Story 2", "Lasseter", 4, 7.9, ["pixar", "toys", "sequel"], Location(latitude: 37.8, longitude: -122.2)),
            ("Up", "Docter", 5, 8.2, ["pixar", "balloon"], Location(latitude: 48.8, longitude: 2.3)),
            ("Cars", "Lasseter", 3, 7.1, ["cars"], Location(latitude: 35.0, longitude: -110.0)),
            ("Coco", "Unkrich", 4, 8.4, ["music"], Location(latitude: 19.4, longitude: -99.1)),
        ]
        let records = rows.enumerated().map { index, row in
            movie("m\(index)", ["title": .string(row.0), "director": row.1, "rating": .int64(row.2), "score": .double(row.3), "tags": .list(row.4), "where": .location(row.5)])
        }
        _ = try database.modifyRecords(saving: records, deleting: [])
        return database
    }

    func titles(_ database: Database, _ predicate: QueryPredicate, sort: [QuerySort] = [QuerySort(.field("title"))]) throws -> [String] {
        try database.records(matching: Query(recordType: "Movie", predicate: predicate, sortDescriptors: sort)).matchResults.map { $0["title"]!.stringValue! }
    }

    @Test func everyComparator() throws {
        let db = try seeded()
        func c(_ key: String, _ op: QueryComparator, _ value: FieldValue, distance: Double? = nil) -> QueryPredicate {
            .condition(QueryCondition(QueryKey(name: key), op, value, distance: distance))
        }
        #expect(try titles(db, c("rating", .equals, 5)) == ["Toy Story", "Up"])
        #expect(try titles(db, c("rating", .notEquals, 5)) == ["Cars", "Coco", "Toy Story 2"])
        #expect(try titles(db, c("rating", .lessThan, 4)) == ["Cars"])
        #expect(try titles(db, c("rating", .lessThanOrEquals, 4)) == ["Cars", "Coco", "Toy Story 2"])
        #expect(try titles(db, c("score", .greaterThan, 8.2)) == ["Coco", "Toy Story"])
        #expect(try titles(db, c("score", .greaterThanOrEquals, 8)) == ["Coco", "Toy Story", "Up"])
        #expect(try titles(db, c("title", .beginsWith, "Toy")) == ["Toy Story", "Toy Story 2"])
        #expect(try titles(db, c("title", .notBeginsWith, "Toy")) == ["Cars", "Coco", "Up"])
        #expect(try titles(db, c("director", .in, .list(["Docter", "Unkrich"]))) == ["Coco", "Up"])
        #expect(try titles(db, c("director", .notIn, .list(["Lasseter"]))) == ["Coco", "Up"])
        #expect(try titles(db, c("tags", .listContains, "sequel")) == ["Toy Story 2"])
        #expect(try titles(db, c("tags", .notListContains, "pixar")) == ["Cars", "Coco"])
        #expect(try titles(db, c("tags", .listContainsAny, .list(["music", "cars"]))) == ["Cars", "Coco"])
        #expect(try titles(db, c("tags", .notListContainsAny, .list(["pixar"]))) == ["Cars", "Coco"])
        #expect(try titles(db, c("tags", .listContainsAll, .list(["pixar", "toys"]))) == ["Toy Story", "Toy Story 2"])
        #expect(try titles(db, c("tags", .notListContainsAll, .list(["pixar", "toys"]))) == ["Cars", "Coco", "Up"])
        #expect(try titles(db, c("tags", .listMemberBeginsWith, "ball")) == ["Up"])
        #expect(try titles(db, c("tags", .notListMemberBeginsWith, "t")) == ["Cars", "Coco", "Up"])
        #expect(try titles(db, c("title", .containsAllTokens, "story toy")) == ["Toy Story", "Toy Story 2"])
        #expect(try titles(db, c("title", .containsAnyTokens, "up coco")) == ["Coco", "Up"])
        #expect(try titles(db, c("self", .containsAllTokens, "lasseter cars")) == ["Cars"])
        #expect(try titles(db, c("where", .near, .location(Location(latitude: 37.8, longitude: -122.25)), distance: 10_000)) == ["Toy Story", "Toy Story 2"])
        #expect(try titles(db, c("recordName", .equals, "m2")) == ["Up"])
    }

    @Test func andOrNotCombine() throws {
        let db = try seeded()
        let rating4 = QueryPredicate.condition(QueryCondition(.field("rating"), .greaterThanOrEquals, 4))
        let toy = QueryPredicate.condition(QueryCondition(.field("title"), .beginsWith, "Toy"))
        let docter = QueryPredicate.condition(QueryCondition(.field("director"), .equals, "Docter"))
        #expect(try titles(db, .and([rating4, .or([toy, docter])])) == ["Toy Story", "Toy Story 2", "Up"])
        #expect(try titles(db, .and([rating4, .not(toy)])) == ["Coco", "Up"])
    }

    @Test func severalSortKeysThenRecordName() throws {
        let db = try seeded()
        let sorted = try titles(db, .all, sort: [QuerySort(.field("director")), QuerySort(.field("rating"), ascending: false)])
        #expect(sorted == ["Up", "Toy Story", "Toy Story 2", "Cars", "Coco"])
        let byDistance = try titles(db, .all, sort: [QuerySort(.field("where"), relativeLocation: Location(latitude: 48.8, longitude: 2.3))])
        #expect(byDistance.first == "Up")
    }

    @Test func cursorPagesStayCorrectWhileWritesLand() throws {
        let db = try seeded()
        let query = Query(recordType: "Movie", sortDescriptors: [QuerySort(.field("title"))])
        let first = try db.records(matching: query, resultsLimit: 2)
        #expect(first.matchResults.map { $0["title"]!.stringValue! } == ["Cars", "Coco"])
        let cursor = try #require(first.queryCursor)
        // Writes land between pages: one before the cursor, one after, one deleted.
        try db.save(movie("new1", ["title": "A Bug's Life"]))
        try db.save(movie("new2", ["title": "WALL-E"]))
        try db.deleteRecord(withID: Record.ID(recordName: "m2"))
        let rebuilt = try Query.Cursor(stringValue: cursor.stringValue, query: query)
        let rest = try db.records(continuingMatchFrom: rebuilt, resultsLimit: 10)
        #expect(rest.matchResults.map { $0["title"]!.stringValue! } == ["Toy Story", "Toy Story 2", "WALL-E"])
        #expect(rest.queryCursor == nil)
        #expect(throws: LatticeError.self) { try Query.Cursor(stringValue: cursor.stringValue, query: Query(recordType: "Song")) }
        // Nor in another zone.
        #expect(throws: LatticeError.self) { try Query.Cursor(stringValue: cursor.stringValue, query: query, zoneID: Zone.ID(zoneName: "Other")) }
    }

    @Test func invalidPredicatesAreRejected() throws {
        let db = try seeded()
        let bad = QueryPredicate.condition(QueryCondition(.field("tags"), .in, "notAList"))
        expectError(.invalidArguments) { _ = try db.records(matching: Query(recordType: "Movie", predicate: bad)) }
        expectError(.invalidArguments) { _ = try db.records(matching: Query(recordType: "Movie"), resultsLimit: 0) }
    }
}
