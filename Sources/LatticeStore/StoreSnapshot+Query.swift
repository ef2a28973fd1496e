import Foundation
import GRDB
import LatticeCore

/// A page of query results, with how it was read.
public struct QueryPageResult {
    public var records: [RecordState]
    public var next: QueryPosition?
    public var plan: QueryPlan
    /// What the store read the candidates from, for `query --explain`.
    public var strategy: String
    /// Records read and decoded to make the page.
    public var recordsRead: Int
}

extension StoreSnapshot {
    /// One page of `engine`'s query in a zone after `cursor`, read through
    /// the schema's indexes where they help. The page is the one a scan of
    /// every record would give: indexes only decide how much is read.
    ///
    /// `selectiveFilter`: below this many candidates from the filter's index,
    /// they are all read and sorted rather than walking the sort's index.
    public func queryPage(
        _ engine: QueryEngine, in key: ZoneKey, after cursor: QueryPosition?, limit: Int, selectiveFilter: Int = StoreSnapshot.selectiveFilterCandidates
    ) throws -> QueryPageResult {
        let schema = try schema()
        var plan = QueryPlanner.plan(engine, schema: schema)
        guard let zone = try zoneRow(key) else {
            return QueryPageResult(records: [], next: nil, plan: plan, strategy: "the zone does not exist here", recordsRead: 0)
        }
        // A plan that reads field indexes has them: the planner pushes only indexed fields.
        let index = plan.readsTypeIndex ? TypeIndex(recordType: engine.recordType, schema: schema) : nil
        let builder = QuerySQL(index: index, zone: zone.id, recordType: engine.recordType)
        var strategy = plan.summary
        // A selective filter beats walking the sort order: when the filter's
        // index finds few candidates, read them all and sort them.
        if selectiveFilter > 0, case .field = plan.order, let filter = plan.filter, !filter.fields.isEmpty {
            let count = try builder.countCandidates(filter, upTo: selectiveFilter, db: db)
            if count < selectiveFilter {
                plan.order = .none
                plan.orderIsComplete = false
                strategy = "the index on \(filter.fields.sorted().joined(separator: ", ")) finds \(count) candidates (fewer than \(selectiveFilter)): all are read and sorted"
            }
        }
        var collector = QueryPageCollector(engine: engine, plan: plan, cursor: cursor, limit: limit)
        passes: for pass in builder.passes(plan, cursor: cursor) {
            let rows = try Data.fetchCursor(db, sql: pass.sql, arguments: pass.arguments)
            while let blob = try rows.next() {
                if !collector.offer(try decode(blob)) { break passes }
            }
        }
        let (records, next) = collector.finish()
        return QueryPageResult(records: records, next: next, plan: plan, strategy: strategy, recordsRead: collector.candidatesRead)
    }

    /// Below this many candidates a filter's index is used instead of the sort's.
    public static let selectiveFilterCandidates = 1_000
}

/// The SQL that reads a plan's candidates: from the type's index table when
/// the plan uses field indexes, else from the records table.
struct QuerySQL {
    let index: TypeIndex?
    let zone: Int64
    let recordType: String

    struct Pass {
        var sql: String
        var arguments: StatementArguments
    }

    /// The read walks the records table by name (else the index table leads).
    var byName = false

    private var nameColumn: String { index == nil || byName ? "r.name" : "q.name" }

    /// CROSS JOIN fixes which table SQLite walks: the one whose order or
    /// index the plan chose.
    private func source(_ conditions: inout [String], _ arguments: inout [DatabaseValueConvertible?], readsRecords: Bool = true) -> String {
        if let index, !byName {
            conditions.append("q.zone = ?")
            arguments.append(zone)
            return readsRecords ? "FROM \(index.table) q CROSS JOIN records r ON r.id = q.rid" : "FROM \(index.table) q"
        }
        // The unary plus keeps SQLite on the (zone, name) index, which gives the order.
        conditions.append("r.zone = ? AND +r.type = ? AND +r.alive = 1")
        arguments += [zone, recordType]
        return index.map { "FROM records r CROSS JOIN \($0.table) q ON q.rid = r.id" } ?? "FROM records r"
    }

    /// Counts candidates the filter lets through, stopping at `limit`.
    func countCandidates(_ filter: IndexFilter, upTo limit: Int, db: GRDB.Database) throws -> Int {
        var conditions: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        let from = source(&conditions, &arguments, readsRecords: false)
        conditions.append(sql(filter, &arguments, indexed: true))
        arguments.append(limit)
        let inner = "SELECT 1 \(from) WHERE \(conditions.joined(separator: " AND ")) LIMIT ?"
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(inner))", arguments: StatementArguments(arguments)) ?? 0
    }

    /// The statements to run in turn. An order by a field reads the records
    /// with a value first, then those without (which sort last).
    func passes(_ plan: QueryPlan, cursor: QueryPosition?) -> [Pass] {
        // The cursor's first sort value, and whether it lies among the records without one.
        let cursorValue = cursor?.values.first ?? nil
        let cursorAmongMissing = cursor != nil && cursorValue == nil
        switch plan.order {
        case .none:
            return [pass(plan.filter, indexedFilter: true, extra: [], order: "")]
        case .recordName(let ascending):
            var walk = self
            walk.byName = true
            var extra: [(String, [DatabaseValueConvertible?])] = []
            if let cursor { extra.append(("r.name \(ascending ? ">" : "<") ?", [cursor.recordName])) }
            return [walk.pass(plan.filter, indexedFilter: false, extra: extra, order: "ORDER BY r.name \(ascending ? "ASC" : "DESC")")]
        case .field(let field, let ascending):
            guard let column = index?.column(of: field).map({ "q.\($0)" }) else { return [] }
            var result: [Pass] = []
            // Records with a value, unless the cursor is already among those without.
            if !cursorAmongMissing {
                var extra: [(String, [DatabaseValueConvertible?])] = [("\(column) IS NOT NULL", [])]
                if let cursor, let value = cursorValue, QueryPlanner.isOrderable(value), let bound = TypeIndex.sqlValue(value) {
                    extra.append(("\(column) \(ascending ? ">=" : "<=") ?", [bound]))
                    if plan.orderIsComplete { extra.append(("(\(column) <> ? OR q.name > ?)", [bound, cursor.recordName])) }
                }
                result.append(pass(plan.filter, indexedFilter: false, extra: extra, order: "ORDER BY \(column) \(ascending ? "ASC" : "DESC"), q.name ASC"))
            }
            var extra: [(String, [DatabaseValueConvertible?])] = [("\(column) IS NULL", [])]
            if plan.orderIsComplete, let cursor, cursorAmongMissing { extra.append(("q.name > ?", [cursor.recordName])) }
            result.append(pass(plan.filter, indexedFilter: false, extra: extra, order: "ORDER BY q.name ASC"))
            return result
        }
    }

    /// `indexedFilter`: whether SQLite may drive the read from the filter's
    /// indexes (else they are checked row by row along the order's index).
    private func pass(_ filter: IndexFilter?, indexedFilter: Bool, extra: [(String, [DatabaseValueConvertible?])], order: String) -> Pass {
        var conditions: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        let from = source(&conditions, &arguments)
        if let filter { conditions.append(sql(filter, &arguments, indexed: indexedFilter)) }
        for (condition, values) in extra {
            conditions.append(condition)
            arguments += values
        }
        return Pass(sql: "SELECT r.state \(from) WHERE \(conditions.joined(separator: " AND ")) \(order)", arguments: StatementArguments(arguments))
    }

    private func column(_ column: IndexColumn, indexed: Bool) -> String {
        let name: String
        switch column {
        case .recordName: name = nameColumn
        case .field(let field): name = index?.column(of: field).map { "q.\($0)" } ?? "NULL"
        }
        return indexed ? name : "+" + name
    }

    private func sql(_ filter: IndexFilter, _ arguments: inout [DatabaseValueConvertible?], indexed: Bool) -> String {
        switch filter {
        case .compare(let key, let comparison, let value):
            arguments.append(TypeIndex.sqlValue(value))
            return "\(column(key, indexed: indexed)) \(comparison.rawValue) ?"
        case .oneOf(let key, let values):
            arguments += values.map(TypeIndex.sqlValue)
            return "\(column(key, indexed: indexed)) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))"
        case .prefix(let key, let prefix):
            let name = column(key, indexed: indexed)
            arguments.append(prefix)
            guard let upper = Self.successor(ofPrefix: prefix) else { return "\(name) >= ?" }
            arguments.append(upper)
            return "(\(name) >= ? AND \(name) < ?)"
        case .tokens(let field, let tokens, let all):
            guard let index else { return "1" }
            let rid = indexed ? "q.rid" : "+q.rid"
            if all {
                return tokens.map { token in
                    arguments += [field, token]
                    return "\(rid) IN (SELECT rid FROM \(index.tokenTable) WHERE field = ? AND token = ?)"
                }.joined(separator: " AND ")
            }
            arguments.append(field)
            arguments += tokens
            return "\(rid) IN (SELECT rid FROM \(index.tokenTable) WHERE field = ? AND token IN (\(Array(repeating: "?", count: tokens.count).joined(separator: ", "))))"
        case .and(let parts):
            return "(" + parts.map { sql($0, &arguments, indexed: indexed) }.joined(separator: " AND ") + ")"
        case .or(let parts):
            return "(" + parts.map { sql($0, &arguments, indexed: indexed) }.joined(separator: " OR ") + ")"
        }
    }

    /// The least string above every string that begins with `prefix` (by
    /// UTF-8 bytes, which order as code points); nil when there is none.
    static func successor(ofPrefix prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            var next = last.value + 1
            if (0xD800...0xDFFF).contains(next) { next = 0xE000 }
            if let scalar = Unicode.Scalar(next) {
                scalars.append(scalar)
                var result = ""
                result.unicodeScalars.append(contentsOf: scalars)
                return result
            }
        }
        return nil
    }
}
