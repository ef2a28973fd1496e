import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// The SQL side of one record type's field indexes.
///
/// A type with indexed fields has a table of its live records (row id, zone,
/// name) with one column per queryable or sortable scalar field, each column
/// in an SQLite index on (zone, value, name). Beside it: its searchable
/// fields' tokens, its list fields' members (one row per distinct member),
/// and one R*Tree per location field. Table and column
/// names are the hex of the type and field names: SQLite folds the case of
/// identifiers, and `Movie` and `movie` are two types.
struct TypeIndex {
    let recordType: String
    /// Fields with an ordered index, with their columns.
    let ordered: [(field: String, column: String)]
    let searchable: [String]
    /// List fields whose members are indexed.
    let listed: [String]
    /// Location fields, with their R*Trees.
    let located: [(field: String, table: String)]

    init?(recordType: String, schema: Schema) {
        let fields = schema.indexedFields(of: recordType)
        guard !fields.isEmpty else { return nil }
        self.recordType = recordType
        let structures = fields.map { (field: $0.field, structure: schema.indexStructure($0.field, of: recordType)) }
        ordered = structures.filter { $0.structure == .column }.map { ($0.field, Self.column($0.field)) }
        listed = structures.filter { $0.structure == .members }.map(\.field)
        located = structures.filter { $0.structure == .location }.map { ($0.field, Self.locationTable(recordType, $0.field)) }
        searchable = fields.filter { $0.kinds.contains(.searchable) }.map(\.field)
    }

    var table: String { Self.table(recordType) }
    var tokenTable: String { "\"tk_\(Self.hex(recordType))\"" }
    var memberTable: String { "\"lm_\(Self.hex(recordType))\"" }

    static func table(_ recordType: String) -> String { "\"ix_\(hex(recordType))\"" }
    static func column(_ field: String) -> String { "\"c_\(hex(field))\"" }
    /// Hex digits never hold an underscore, so the type's part ends at the second one.
    static func locationTable(_ recordType: String, _ field: String) -> String { "\"gx_\(hex(recordType))_\(hex(field))\"" }

    func locationTable(of field: String) -> String? { located.first { $0.field == field }?.table }

    private static func hex(_ text: String) -> String {
        text.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    func column(of field: String) -> String? { ordered.first { $0.field == field }?.column }

    // MARK: Tables

    /// Builds `recordType`'s index afresh for `schema`'s layout (none when
    /// it indexes nothing of the type), from every live record of the type.
    /// Whatever layout made the old tables goes with them: a layout that
    /// gains or loses a field (an index added or removed, a field's type
    /// settled otherwise by a merge) is built again from nothing.
    static func build(_ recordType: String, schema: Schema, in db: GRDB.Database, decode: (Data) throws -> RecordState) throws {
        try drop(recordType, in: db)
        guard let index = TypeIndex(recordType: recordType, schema: schema) else { return }
        try index.create(in: db)
        let writer = try Writer(index, db: db)
        let rows = try Row.fetchCursor(db, sql: "SELECT id, zone, state FROM records WHERE type = ? AND alive = 1", arguments: [recordType])
        while let row = try rows.next() {
            try writer.put(try decode(row[2]), rid: row[0], zone: row[1])
        }
    }

    /// Creates the tables and SQL indexes of this layout. Index rows name
    /// their record by row id without a foreign key: a merge writes them for
    /// every record, and the one place records are dropped (`removeAll`)
    /// drops them too.
    private func create(in db: GRDB.Database) throws {
        let columns = ordered.map { ", \($0.column)" }.joined()
        try db.execute(sql: "CREATE TABLE \(table) (rid INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL\(columns))")
        let base = String(table.dropFirst().dropLast())
        for (_, column) in ordered {
            let name = "\(base)_\(column.dropFirst().dropLast())"
            try db.execute(sql: "CREATE INDEX \"\(name)\" ON \(table) (zone, \(column), name)")
        }
        if !searchable.isEmpty {
            try db.execute(sql: """
                CREATE TABLE \(tokenTable) (
                    field TEXT NOT NULL,
                    token TEXT NOT NULL,
                    rid INTEGER NOT NULL,
                    PRIMARY KEY (field, token, rid)
                ) WITHOUT ROWID
                """)
            try db.execute(sql: "CREATE INDEX \"tk_\(base.dropFirst(3))_rid\" ON \(tokenTable) (rid)")
        }
        if !listed.isEmpty {
            // No type on value: members keep SQLite's own types, which compare as the index columns do.
            try db.execute(sql: """
                CREATE TABLE \(memberTable) (
                    field TEXT NOT NULL,
                    value NOT NULL,
                    rid INTEGER NOT NULL,
                    PRIMARY KEY (field, value, rid)
                ) WITHOUT ROWID
                """)
            try db.execute(sql: "CREATE INDEX \"lm_\(base.dropFirst(3))_rid\" ON \(memberTable) (rid)")
        }
        for (_, locationTable) in located {
            // The R*Tree keeps 32-bit bounds rounded outwards, so a point's box always holds it.
            try db.execute(sql: "CREATE VIRTUAL TABLE \(locationTable) USING rtree(id, min_lat, max_lat, min_lon, max_lon)")
        }
    }

    /// Drops every table of `recordType`'s index, whatever layout made them.
    private static func drop(_ recordType: String, in db: GRDB.Database) throws {
        let type = hex(recordType)
        let names = try String.fetchAll(db, sql: """
            SELECT name FROM sqlite_master WHERE type = 'table' AND (name IN (?, ?, ?) OR substr(name, 1, ?) = ?)
            ORDER BY sql LIKE 'CREATE VIRTUAL TABLE%' DESC
            """, arguments: ["ix_\(type)", "tk_\(type)", "lm_\(type)", type.count + 4, "gx_\(type)_"])
        // An R*Tree first: dropping it drops its shadow tables, which may not go before it.
        for name in names { try db.execute(sql: "DROP TABLE IF EXISTS \"\(name)\"") }
    }

    /// The tables beside the main one that name records by `rid`, with that column.
    private var sideTables: [(table: String, rid: String)] {
        (searchable.isEmpty ? [] : [(tokenTable, "rid")]) + (listed.isEmpty ? [] : [(memberTable, "rid")]) + located.map { ($0.table, "id") }
    }

    /// Drops the index rows of a zone's records, before the records go.
    func removeAll(zone: Int64, in db: GRDB.Database) throws {
        for (side, rid) in sideTables {
            try db.execute(sql: "DELETE FROM \(side) WHERE \(rid) IN (SELECT rid FROM \(table) WHERE zone = ?)", arguments: [zone])
        }
        try db.execute(sql: "DELETE FROM \(table) WHERE zone = ?", arguments: [zone])
    }

    // MARK: Rows

    /// Keeps the index rows of one record up to date, with its statements
    /// prepared once per transaction.
    struct Writer {
        let index: TypeIndex
        private let upsert: Statement
        private let delete: Statement
        private let deleteTokens: Statement?
        private let insertToken: Statement?
        private let deleteMembers: Statement?
        private let insertMember: Statement?
        /// Per location field: its R*Tree's delete and insert.
        private let locations: [(field: String, delete: Statement, insert: Statement)]

        init(_ index: TypeIndex, db: GRDB.Database) throws {
            self.index = index
            let columns = index.ordered.map(\.column)
            let values = Array(repeating: "?", count: columns.count + 3).joined(separator: ", ")
            let updates = (["zone", "name"] + columns).map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            upsert = try db.makeStatement(sql: """
                INSERT INTO \(index.table) (\((["rid", "zone", "name"] + columns).joined(separator: ", "))) VALUES (\(values))
                ON CONFLICT (rid) DO UPDATE SET \(updates)
                """)
            delete = try db.makeStatement(sql: "DELETE FROM \(index.table) WHERE rid = ?")
            if index.searchable.isEmpty {
                deleteTokens = nil
                insertToken = nil
            } else {
                deleteTokens = try db.makeStatement(sql: "DELETE FROM \(index.tokenTable) WHERE rid = ?")
                insertToken = try db.makeStatement(sql: "INSERT OR IGNORE INTO \(index.tokenTable) (field, token, rid) VALUES (?, ?, ?)")
            }
            if index.listed.isEmpty {
                deleteMembers = nil
                insertMember = nil
            } else {
                deleteMembers = try db.makeStatement(sql: "DELETE FROM \(index.memberTable) WHERE rid = ?")
                insertMember = try db.makeStatement(sql: "INSERT OR IGNORE INTO \(index.memberTable) (field, value, rid) VALUES (?, ?, ?)")
            }
            locations = try index.located.map { field, table in
                (field,
                 try db.makeStatement(sql: "DELETE FROM \(table) WHERE id = ?"),
                 try db.makeStatement(sql: "INSERT INTO \(table) (id, min_lat, max_lat, min_lon, max_lon) VALUES (?, ?, ?, ?, ?)"))
            }
        }

        /// Indexes a live record's values; a deleted record leaves the index.
        /// `previous`: the state the row held, whose index rows stay when no
        /// indexed value changed (a merge whose incoming writes lose, say).
        func put(_ state: RecordState, previous: RecordState? = nil, rid: Int64, zone: Int64) throws {
            guard state.isAlive else { return try remove(rid: rid) }
            if let previous, previous.isAlive, previous.recordType == state.recordType,
               index.ordered.allSatisfy({ TypeIndex.sameIndexedValue(previous[field: $0.field], state[field: $0.field]) }),
               index.searchable.allSatisfy({ TypeIndex.sameIndexedValue(previous[field: $0], state[field: $0]) }),
               index.listed.allSatisfy({ TypeIndex.sameIndexedValue(previous[field: $0], state[field: $0]) }),
               index.located.allSatisfy({ TypeIndex.sameIndexedValue(previous[field: $0.field], state[field: $0.field]) }) {
                return
            }
            var arguments: [DatabaseValueConvertible?] = [rid, zone, state.recordName]
            for (field, _) in index.ordered { arguments.append(TypeIndex.sqlValue(state[field: field])) }
            try upsert.execute(arguments: StatementArguments(arguments))
            if let deleteTokens, let insertToken {
                try deleteTokens.execute(arguments: [rid])
                for field in index.searchable {
                    guard case .string(let text)? = state[field: field] else { continue }
                    // INSERT OR IGNORE drops repeats; a Set<String> would also drop canonically equivalent spellings.
                    for token in Tokenizer.tokens(text) { try insertToken.execute(arguments: [field, token, rid]) }
                }
            }
            if let deleteMembers, let insertMember {
                try deleteMembers.execute(arguments: [rid])
                for field in index.listed {
                    // A value of another type (a merge can bring one) has no members, as the engine finds none.
                    guard case .list(let items)? = state[field: field] else { continue }
                    for item in items {
                        guard let value = TypeIndex.sqlValue(item) else { continue }
                        try insertMember.execute(arguments: [field, value, rid])
                    }
                }
            }
            for (field, delete, insert) in locations {
                try delete.execute(arguments: [rid])
                guard case .location(let location)? = state[field: field] else { continue }
                try insert.execute(arguments: [rid, location.latitude, location.latitude, location.longitude, location.longitude])
            }
        }

        func remove(rid: Int64) throws {
            try delete.execute(arguments: [rid])
            try deleteTokens?.execute(arguments: [rid])
            try deleteMembers?.execute(arguments: [rid])
            for (_, delete, _) in locations { try delete.execute(arguments: [rid]) }
        }
    }

    /// Whether two values leave the same index rows: text by its bytes, since
    /// Swift's `==` also equates canonically equivalent spellings.
    static func sameIndexedValue(_ a: FieldValue?, _ b: FieldValue?) -> Bool {
        switch (a, b) {
        case (.string(let x)?, .string(let y)?): return x.utf8.elementsEqual(y.utf8)
        case (.reference(let x)?, .reference(let y)?): return x.recordName.utf8.elementsEqual(y.recordName.utf8)
        case (.list(let x)?, .list(let y)?): return x.count == y.count && zip(x, y).allSatisfy { sameIndexedValue($0, $1) }
        case (.string?, _), (_, .string?), (.reference?, _), (_, .reference?), (.list?, _), (_, .list?): return false
        default: return a == b
        }
    }

    /// A field value as its index column holds it: SQLite orders these as the
    /// query engine orders the values (numbers by value, text by UTF-8 bytes).
    static func sqlValue(_ value: FieldValue?) -> DatabaseValueConvertible? {
        switch value {
        case .string(let text)?: return text
        case .int64(let number)?: return number
        case .double(let number)?: return number
        case .bool(let flag)?: return flag ? 1 : 0
        case .date(let milliseconds)?: return milliseconds
        case .bytes(let bytes)?: return Data(bytes)
        case .reference(let reference)?: return reference.recordName
        case .asset?, .location?, .list?, nil: return nil
        }
    }
}
