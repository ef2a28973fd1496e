import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore
import LatticeTestSupport
import Testing

/// The planner weighs a walk of the sort key's index, the filter's
/// candidates and a scan by the rows each would read, and takes the least.
@Suite struct QueryPlannerTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let directory = TemporaryDirectory("lattice-planner")

    func makeStore() throws -> RecordStore { try directory.store(zones: [zone]) }

    func page(_ store: RecordStore, _ engine: QueryEngine, limit: Int, forcing: QueryAccess? = nil) throws -> QueryPageResult {
        try store.read { try $0.queryPage(engine, in: zone, after: nil, limit: limit, forcing: forcing) }
    }

    /// `rating >= 990 --sort rating --limit 50`: the filter's own condition on the sort key bounds the
    /// walk, which reads the page and one more, where the candidates (200 here) used to be read and sorted.
    @Test func aFilterOnTheSortKeyBoundsTheWalk() throws {
        let store = try makeStore()
        try store.write { transaction in
            for i in 0..<20_000 {
                try transaction.save(String(format: "m%05d", i), type: "Movie", in: zone, changes: [("rating", .int64(Int64((i * 7_919) % 1_000)))])
            }
            _ = try transaction.addIndex([.queryable, .sortable], field: "rating", of: "Movie")
        }
        let query = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(990))), sorts: [QuerySort(.field("rating"))])
        let chosen = try page(store, query, limit: 50)
        #expect(chosen.estimates.first?.access == .walk, "\(chosen.estimates)")
        #expect(chosen.recordsRead <= 51 && chosen.rowsRead <= 51, "read \(chosen.recordsRead) records, \(chosen.rowsRead) rows: \(chosen.strategy)")
        let scan = try page(store, query, limit: 50, forcing: .scan)
        #expect(chosen.records == scan.records && chosen.next == scan.next)
        #expect(scan.recordsRead == 20_000)
        let candidates = try page(store, query, limit: 50, forcing: .candidates)
        #expect(candidates.records == scan.records)
        #expect(candidates.recordsRead == 200)
        // The next page starts where this one ended, still bounded.
        let second = try store.read { try $0.queryPage(query, in: zone, after: chosen.next, limit: 50) }
        #expect(second.rowsRead <= 51 + 10, "\(second.rowsRead) rows for the second page")
        #expect(second.records.first.map { $0.fields.first { $0.name == "rating" }?.winner.value } == .int64(990) || second.records.count == 50)
    }

    /// A filter whose records all sort late: counted over the whole range (past the counts' cap) the walk
    /// would look short, but the walk's first entries hold no candidate, so the candidates are read.
    @Test func aFilterThatShunsTheStartOfTheWalkIsReadAsCandidates() throws {
        let store = try makeStore()
        try store.write { transaction in
            for i in 0..<12_000 {
                // Only ratings of 900 and more carry the "late" tag: 1,200 records, all at the end of an ascending walk.
                let rating = Int64((i * 7_919) % 1_000)
                try transaction.save(String(format: "m%05d", i), type: "Movie", in: zone, changes: [
                    ("rating", .int64(rating)), ("tags", .list(rating >= 900 && i % 2 == 0 ? ["late", "any"] : ["any"])),
                ])
            }
            _ = try transaction.addIndex([.queryable, .sortable], field: "rating", of: "Movie")
            _ = try transaction.addIndex(.queryable, field: "tags", of: "Movie")
        }
        let query = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("tags"), .listContains, .string("late"))), sorts: [QuerySort(.field("rating"))])
        let chosen = try page(store, query, limit: 20)
        #expect(chosen.estimates.first?.access == .candidates, "\(chosen.estimates)")
        #expect(chosen.rowsRead == 600, "\(chosen.rowsRead) rows: \(chosen.strategy)")
        let walk = try page(store, query, limit: 20, forcing: .walk)
        #expect(walk.records == chosen.records)
        #expect(walk.rowsRead > 10_000, "the walk passes every rating below 900 first")
    }

    /// A rare filter on another field makes a walk of the sort key's index long: its candidates are read instead.
    @Test func aRareFilterIsReadThroughItsOwnIndex() throws {
        let store = try makeStore()
        try store.write { transaction in
            for i in 0..<5_000 {
                try transaction.save(String(format: "m%05d", i), type: "Movie", in: zone, changes: [
                    ("rating", .int64(Int64(i % 1_000))), ("genre", .string(i % 500 == 0 ? "noir" : "comedy")),
                ])
            }
            _ = try transaction.addIndex([.queryable, .sortable], field: "rating", of: "Movie")
            _ = try transaction.addIndex(.queryable, field: "genre", of: "Movie")
        }
        let query = QueryEngine(recordType: "Movie", predicate: .condition(QueryCondition(.field("genre"), .equals, .string("noir"))), sorts: [QuerySort(.field("rating"))])
        let chosen = try page(store, query, limit: 5)
        #expect(chosen.estimates.first?.access == .candidates, "\(chosen.estimates)")
        #expect(chosen.rowsRead == 10)
        let walk = try page(store, query, limit: 5, forcing: .walk)
        #expect(walk.records == chosen.records)
        #expect(walk.rowsRead > 2_000, "the walk passes most of the index: \(walk.rowsRead)")
    }

    /// Over random data, indexes and queries: every way of reading returns the scan's page, and the one
    /// the estimates choose never reads more rows than the best of the others by more than a small factor.
    @Test(arguments: [UInt64(11), 12, 13])
    func theChosenWayReadsAtMostAFewTimesTheLeast(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let store = try makeStore()
        let count = Int.random(in: 1_000...3_000, using: &random)
        let spreads = (0..<3).map { _ in [2, 10, 100, 1_000].randomElement(using: &random)! }
        try store.write { transaction in
            for i in 0..<count {
                var changes: [(String, FieldValue?)] = []
                for (index, field) in ["a", "b", "c"].enumerated() where Int.random(in: 0..<10, using: &random) > 0 {
                    changes.append((field, .int64(Int64.random(in: 0..<Int64(spreads[index]), using: &random))))
                }
                try transaction.save("r\(i)", type: "Item", in: zone, changes: changes.isEmpty ? [("a", .int64(0))] : changes)
            }
            for field in ["a", "b", "c"] { _ = try transaction.addIndex([.queryable, .sortable], field: field, of: "Item") }
        }
        var compared = 0
        for _ in 0..<40 {
            let sortField = ["a", "b", "c"].randomElement(using: &random)!
            var conditions: [QueryPredicate] = []
            for field in ["a", "b", "c"] where Int.random(in: 0..<2, using: &random) == 0 {
                let spread = Int64(spreads[["a", "b", "c"].firstIndex(of: field)!])
                let comparator: QueryComparator = [.equals, .greaterThanOrEquals, .lessThan].randomElement(using: &random)!
                conditions.append(.condition(QueryCondition(.field(field), comparator, .int64(Int64.random(in: 0..<spread, using: &random)))))
            }
            guard !conditions.isEmpty else { continue }
            let engine = QueryEngine(recordType: "Item", predicate: conditions.count == 1 ? conditions[0] : .and(conditions),
                                     sorts: [QuerySort(.field(sortField), ascending: Bool.random(using: &random))])
            let limit = [1, 10, 50].randomElement(using: &random)!
            let chosen = try page(store, engine, limit: limit)
            var least = Int.max
            for access in QueryAccess.allCases {
                let forced = try page(store, engine, limit: limit, forcing: access)
                #expect(forced.records == chosen.records && forced.next == chosen.next, "seed \(seed): \(access) differs for \(engine.predicate) by \(sortField)")
                least = min(least, forced.rowsRead)
            }
            compared += 1
            #expect(chosen.rowsRead <= 4 * least + limit + 1, "seed \(seed): \(engine.predicate) by \(sortField), limit \(limit): chose \(chosen.strategy), read \(chosen.rowsRead) rows, least \(least)")
        }
        #expect(compared > 20)
    }
}
