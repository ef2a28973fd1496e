import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// A page of query results, with how it was read.
package struct QueryPageResult {
    package var records: [RecordState]
    package var next: QueryPosition?
    package var plan: QueryPlan
    /// What the store read the candidates from, for `query --explain`.
    package var strategy: String
    /// Records read and decoded to make the page.
    package var recordsRead: Int
    /// Rows the read went through: the index entries a walk passed (each a
    /// record's, most not read when the filter's indexes turn them down), or
    /// the records read.
    package var rowsRead: Int
    /// The ways of reading considered, each with the rows it was estimated to
    /// read; the one taken first. Empty when there was no choice.
    package var estimates: [QueryAccessEstimate]
}

/// How a query may read its candidates when the sort's index and the filter's both could.
package enum QueryAccess: String, Sendable, CaseIterable {
    /// The sort key's index, in order, until the page is full.
    case walk
    /// Every candidate the filter's indexes find, then sorted.
    case candidates
    /// Every record of the type, then filtered and sorted.
    case scan
}

/// One way of reading a query, with the rows it would read by the counts of its indexes.
package struct QueryAccessEstimate: Hashable, Sendable {
    package var access: QueryAccess
    package var rows: Int
    /// Whether a count stopped at its cap: the estimate is at least `rows`.
    package var atLeast: Bool
}

extension StoreSnapshot {
    /// One page of `engine`'s query in a zone after `cursor`, read through
    /// the schema's indexes where they help. The page is the one a scan of
    /// every record would give: indexes only decide how much is read.
    ///
    /// When the sort's index could be walked and the filter's indexes narrow
    /// the candidates, the rows each way would read are estimated from counts
    /// of the indexes (`QueryAccessEstimate`) and the least is taken;
    /// `forcing` takes the given one instead (tests compare them).
    package func queryPage(_ engine: QueryEngine, in key: ZoneKey, after cursor: QueryPosition?, limit: Int, forcing: QueryAccess? = nil) throws -> QueryPageResult {
        let schema = try schema()
        var plan = QueryPlanner.plan(engine, schema: schema)
        if key.scope == .public {
            plan.filter = plan.filter?.withoutRecordNames
            // Stored names carry their creator, so their order is not the plain names' (`a-b/…` before `a/…`):
            // the engine orders the candidates itself.
            if case .recordName = plan.order {
                plan.order = .none
                plan.orderIsComplete = false
            }
        }
        guard let zone = try zoneRow(key) else {
            return QueryPageResult(records: [], next: nil, plan: plan, strategy: "the zone does not exist here", recordsRead: 0, rowsRead: 0, estimates: [])
        }
        // A plan that reads field indexes has them: the planner pushes only indexed fields.
        let index = plan.readsTypeIndex ? TypeIndex(recordType: engine.recordType, schema: schema) : nil
        var builder = QuerySQL(index: index, zone: zone.id, recordType: engine.recordType)
        var estimates: [QueryAccessEstimate] = []
        if case .field(let field, _) = plan.order, let filter = plan.filter, !filter.fields.isEmpty {
            estimates = try builder.estimates(plan, sortField: field, limit: limit, db: db)
            let chosen = forcing ?? estimates[0].access
            switch chosen {
            case .walk:
                break
            case .candidates:
                plan.order = .none
                plan.orderIsComplete = false
            case .scan:
                plan.order = .none
                plan.orderIsComplete = false
                plan.filter = nil
                builder = QuerySQL(index: nil, zone: zone.id, recordType: engine.recordType)
            }
        }
        var strategy = plan.filter == nil && plan.order == .none ? "scan: every record of the type is read, filtered and sorted" : plan.summary
        if !estimates.isEmpty {
            strategy += " (estimated rows: " + estimates.map { "\($0.access.rawValue) \($0.atLeast ? "≥ " : "")\($0.rows)" }.joined(separator: ", ") + ")"
        }
        var collector = QueryPageCollector(engine: engine, plan: plan, cursor: cursor, limit: limit)
        var rows = 0
        passes: for pass in builder.passes(plan, cursor: cursor) {
            let cursor = try Row.fetchCursor(db, sql: pass.sql, arguments: pass.arguments)
            while let row = try cursor.next() {
                rows += 1
                // A walk's row whose index entries the filter turned down: its record is not read.
                guard let blob = row[0] as Data? else { continue }
                if !collector.offer(try decode(blob)) { break passes }
            }
        }
        let (records, next) = collector.finish()
        return QueryPageResult(records: records, next: next, plan: plan, strategy: strategy, recordsRead: collector.candidatesRead, rowsRead: rows, estimates: estimates)
    }

    /// Counts stop here: past it, a way of reading is only known to read at least this many rows.
    package static let estimateCountCap = 4_096
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
    private func source(_ conditions: inout [String], _ arguments: inout [DatabaseValueConvertible?], filter: IndexFilter?, readsRecords: Bool = true) -> String {
        if let index, !byName {
            // Without statistics SQLite would rather walk the zone's rows and
            // probe a token, member or location table for each; the unary plus
            // makes it read that table's few rows and look each record up.
            conditions.append(filter.map(Self.drivenBySideTable) == true ? "+q.zone = ?" : "q.zone = ?")
            arguments.append(zone)
            return readsRecords ? "FROM \(index.table) q CROSS JOIN records r ON r.id = q.rid" : "FROM \(index.table) q"
        }
        // The unary plus keeps SQLite on the (zone, name) index, which gives the order.
        conditions.append("r.zone = ? AND +r.type = ? AND +r.alive = 1")
        arguments += [zone, recordType]
        return index.map { "FROM records r CROSS JOIN \($0.table) q ON q.rid = r.id" } ?? "FROM records r"
    }

    /// Whether a table beside the type's (tokens, list members, places)
    /// should drive the read: it narrows every candidate, and no condition
    /// on a column of the type's table could use that column's index instead.
    static func drivenBySideTable(_ filter: IndexFilter) -> Bool {
        switch filter {
        case .tokens, .members, .memberPrefix, .within: return true
        case .compare, .oneOf, .prefix: return false
        case .or(let parts): return parts.allSatisfy(drivenBySideTable)
        case .and(let parts): return parts.contains(where: drivenBySideTable) && !parts.contains(where: readsColumn)
        }
    }

    private static func readsColumn(_ filter: IndexFilter) -> Bool {
        switch filter {
        case .compare(.field, _, _), .oneOf(.field, _), .prefix(.field, _): return true
        case .compare, .oneOf, .prefix, .tokens, .members, .memberPrefix, .within: return false
        case .and(let parts), .or(let parts): return parts.contains(where: readsColumn)
        }
    }

    /// Counts the index rows `filter` lets through (nil: every row of the
    /// type), with `extra` conditions, stopping at `limit`.
    func countRows(_ filter: IndexFilter?, extra: [(String, [DatabaseValueConvertible?])] = [], upTo limit: Int, db: GRDB.Database) throws -> Int {
        var conditions: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        let from = source(&conditions, &arguments, filter: filter, readsRecords: false)
        if let filter { conditions.append(sql(filter, &arguments, indexed: true)) }
        for (condition, values) in extra {
            conditions.append(condition)
            arguments += values
        }
        arguments.append(limit)
        let inner = "SELECT 1 \(from) WHERE \(conditions.joined(separator: " AND ")) LIMIT ?"
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(inner))", arguments: StatementArguments(arguments)) ?? 0
    }

    /// The rows each way of reading `plan` (a walk of `sortField`'s index
    /// with a filter) would read, least first: a walk passes the entries in
    /// its range (the sort key's values the filter allows) until the page is
    /// full, which takes as many more entries than the page as the range
    /// holds per candidate; the candidates are read all; a scan reads every
    /// record of the type.
    func estimates(_ plan: QueryPlan, sortField: String, limit: Int, db: GRDB.Database) throws -> [QueryAccessEstimate] {
        guard let filter = plan.filter, let column = index?.column(of: sortField).map({ "q.\($0)" }) else { return [] }
        let cap = StoreSnapshot.estimateCountCap
        let candidates = try countRows(filter, upTo: cap, db: db)
        var range: [(String, [DatabaseValueConvertible?])] = [("\(column) IS NOT NULL", [])]
        for bound in Self.bounds(of: filter, on: sortField) {
            var arguments: [DatabaseValueConvertible?] = []
            range.append((sql(bound, &arguments, indexed: true), arguments))
        }
        let walked = try countRows(nil, extra: range, upTo: cap, db: db)
        var scan = QuerySQL(index: nil, zone: zone, recordType: recordType)
        scan.byName = true
        let all = try scan.countRows(nil, upTo: cap, db: db)
        let page = limit + 1
        // Candidates spread evenly over the range: the walk passes `walked / candidates` entries per candidate.
        var walk = candidates == 0 ? walked : min(walked, Int((Double(page) * Double(walked) / Double(candidates)).rounded(.up)))
        var walkCapped = walked >= cap && candidates < cap
        if walkCapped, walk < candidates, case .field(_, let ascending) = plan.order {
            // The range holds more entries than were counted, so the spread is
            // unknown: how many candidates the walk's first `cap` entries hold
            // says how far it goes (and catches a filter that shuns the start).
            // Only asked when the walk would otherwise win.
            let found = try candidatesAmongFirst(cap, of: range, filter: filter, column: column, ascending: ascending, db: db)
            walk = Int((Double(page) * Double(cap) / Double(max(found, 1))).rounded(.up))
            walkCapped = found < page
        }
        return [
            QueryAccessEstimate(access: .walk, rows: walk, atLeast: walkCapped),
            QueryAccessEstimate(access: .candidates, rows: candidates, atLeast: candidates >= cap),
            QueryAccessEstimate(access: .scan, rows: all, atLeast: all >= cap),
        ].enumerated().sorted { lhs, rhs in
            // The least; a walk first among equals, as it stops when the page is full.
            (lhs.element.rows, lhs.offset) < (rhs.element.rows, rhs.offset)
        }.map(\.element)
    }

    /// How many of the first `count` entries of a walk of `range` (in the
    /// walk's order) the filter lets through.
    private func candidatesAmongFirst(_ count: Int, of range: [(String, [DatabaseValueConvertible?])], filter: IndexFilter, column: String,
                                      ascending: Bool, db: GRDB.Database) throws -> Int {
        guard index != nil else { return 0 }
        let sample = walk(filter, extra: range, order: Self.walkOrder(column, ascending: ascending), selecting: "r.id")
        return try Int.fetchOne(db, sql: "SELECT COUNT(id) FROM (\(sample.sql) LIMIT ?)", arguments: sample.arguments + [count]) ?? 0
    }

    /// A walk's order: by the sort key's column, then by record name.
    private static func walkOrder(_ column: String, ascending: Bool) -> String {
        "ORDER BY \(column) \(ascending ? "ASC" : "DESC"), q.name ASC"
    }

    /// The filter's conditions on `field` that every candidate meets (the
    /// filter's own, or its conjunction's parts): they bound a walk of the field's index.
    static func bounds(of filter: IndexFilter, on field: String) -> [IndexFilter] {
        switch filter {
        case .compare(.field(let name), let comparison, _) where name == field && comparison != .equals:
            return [filter]
        case .compare(.field(let name), .equals, _) where name == field:
            return [filter]
        case .prefix(.field(let name), _) where name == field:
            return [filter]
        case .oneOf(.field(let name), _) where name == field:
            return [filter]
        case .and(let parts):
            return parts.flatMap { bounds(of: $0, on: field) }
        default:
            return []
        }
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
            // The filter's own conditions on the sort key bound the walk: SQLite seeks to where they begin.
            let bounds = plan.filter.map { Self.bounds(of: $0, on: field) } ?? []
            // Records with a value, unless the cursor is already among those without.
            if !cursorAmongMissing {
                var extra: [(String, [DatabaseValueConvertible?])] = [("\(column) IS NOT NULL", [])]
                for bound in bounds {
                    var arguments: [DatabaseValueConvertible?] = []
                    extra.append((sql(bound, &arguments, indexed: true), arguments))
                }
                if let cursor, let value = cursorValue, QueryPlanner.isOrderable(value), let bound = TypeIndex.sqlValue(value) {
                    extra.append(("\(column) \(ascending ? ">=" : "<=") ?", [bound]))
                    if plan.orderIsComplete { extra.append(("(\(column) <> ? OR q.name > ?)", [bound, cursor.recordName])) }
                }
                result.append(walk(plan.filter, extra: extra, order: Self.walkOrder(column, ascending: ascending)))
            }
            // A record without a value meets no condition on the sort key: with one, there is nothing more to walk.
            guard bounds.isEmpty else { return result }
            var extra: [(String, [DatabaseValueConvertible?])] = [("\(column) IS NULL", [])]
            if plan.orderIsComplete, let cursor, cursorAmongMissing { extra.append(("q.name > ?", [cursor.recordName])) }
            result.append(walk(plan.filter, extra: extra, order: "ORDER BY q.name ASC"))
            return result
        }
    }

    /// A walk of the type's index table in `order`: a row for every entry it
    /// passes, with the record's state when the filter's indexes let it
    /// through (else NULL, and the record is not looked up), so the rows say
    /// how far the walk went. `selecting`: what of the record each row holds.
    private func walk(_ filter: IndexFilter?, extra: [(String, [DatabaseValueConvertible?])], order: String, selecting: String = "r.state") -> Pass {
        guard let index else { return pass(filter, indexedFilter: false, extra: extra, order: order) }
        var arguments: [DatabaseValueConvertible?] = []
        let admits = filter.map { sql($0, &arguments, indexed: false) } ?? "1"
        var conditions = ["q.zone = ?"]
        arguments.append(zone)
        for (condition, values) in extra {
            conditions.append(condition)
            arguments += values
        }
        return Pass(
            sql: "SELECT \(selecting) FROM \(index.table) q LEFT JOIN records r ON r.id = q.rid AND \(admits) WHERE \(conditions.joined(separator: " AND ")) \(order)",
            arguments: StatementArguments(arguments))
    }

    /// `indexedFilter`: whether SQLite may drive the read from the filter's
    /// indexes (else they are checked row by row along the order's index).
    private func pass(_ filter: IndexFilter?, indexedFilter: Bool, extra: [(String, [DatabaseValueConvertible?])], order: String) -> Pass {
        var conditions: [String] = []
        var arguments: [DatabaseValueConvertible?] = []
        let from = source(&conditions, &arguments, filter: filter)
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
            return Self.holding(tokens, all: all, field: field, in: index.tokenTable, column: "token", rid: indexed ? "q.rid" : "+q.rid", &arguments)
        case .members(let field, let values, let all):
            guard let index else { return "1" }
            return Self.holding(values.map(TypeIndex.sqlValue), all: all, field: field, in: index.memberTable, column: "value", rid: indexed ? "q.rid" : "+q.rid", &arguments)
        case .memberPrefix(let field, let prefix):
            guard let index else { return "1" }
            let rid = indexed ? "q.rid" : "+q.rid"
            arguments += [field, prefix]
            guard let upper = Self.successor(ofPrefix: prefix) else {
                return "\(rid) IN (SELECT rid FROM \(index.memberTable) WHERE field = ? AND value >= ?)"
            }
            arguments.append(upper)
            return "\(rid) IN (SELECT rid FROM \(index.memberTable) WHERE field = ? AND value >= ? AND value < ?)"
        case .within(let field, let boxes):
            guard let table = index?.locationTable(of: field) else { return "1" }
            let rid = indexed ? "q.rid" : "+q.rid"
            // One SELECT per box: the R*Tree answers a box at a time, not an OR of them.
            let overlaps = boxes.map { box in
                arguments += [box.maxLatitude, box.minLatitude, box.maxLongitude, box.minLongitude]
                return "SELECT id FROM \(table) WHERE min_lat <= ? AND max_lat >= ? AND min_lon <= ? AND max_lon >= ?"
            }
            return "\(rid) IN (\(overlaps.joined(separator: " UNION ALL ")))"
        case .and(let parts):
            return "(" + parts.map { sql($0, &arguments, indexed: indexed) }.joined(separator: " AND ") + ")"
        case .or(let parts):
            return "(" + parts.map { sql($0, &arguments, indexed: indexed) }.joined(separator: " OR ") + ")"
        }
    }

    /// Records whose rows of `table` (field, `column`, rid) hold all (or
    /// any) of `values` for `field`: a token or a list member index.
    private static func holding(_ values: [DatabaseValueConvertible?], all: Bool, field: String, in table: String, column: String, rid: String,
                                _ arguments: inout [DatabaseValueConvertible?]) -> String {
        if all {
            return values.map { value in
                arguments += [field, value]
                return "\(rid) IN (SELECT rid FROM \(table) WHERE field = ? AND \(column) = ?)"
            }.joined(separator: " AND ")
        }
        arguments.append(field)
        arguments += values
        return "\(rid) IN (SELECT rid FROM \(table) WHERE field = ? AND \(column) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", "))))"
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
