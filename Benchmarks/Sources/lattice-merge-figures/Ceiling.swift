import Foundation
import GRDB
import Workload

/// The engine's ceiling: the rows an empty receiver's merge writes, through
/// GRDB's prepared statements in one durable transaction, with no Lattice
/// code around them, for each candidate layout (`Layout`). State blobs are
/// random bytes of the size the store keeps.
enum Ceiling {
    /// A table layout for records and their two indexed fields.
    struct Layout: Sendable {
        var name: String
        var schema: String
        /// Per record: its statements, from its name, indexed values and state blob.
        var rows: @Sendable (_ db: Database, _ name: String, _ title: String, _ rating: Int64, _ blob: Data) throws -> Void
        /// Once all records are written, before the commit.
        var finish: @Sendable (_ db: Database, _ rows: [(name: String, title: String, rating: Int64)]) throws -> Void = { _, _ in }
    }

    /// Today's store: a rowid records table with its name, change and type
    /// indexes, the digest trigger's dirty row, and a rowid table per type
    /// for indexed fields with an index per field.
    static let today = Layout(
        name: "today's layout, two indexes",
        schema: """
            CREATE TABLE records (id INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
                alive INTEGER NOT NULL, change_seq INTEGER NOT NULL, state BLOB NOT NULL, UNIQUE (zone, name));
            CREATE INDEX records_by_change ON records (zone, change_seq);
            CREATE INDEX records_by_type ON records (zone, type) WHERE alive = 1;
            CREATE TABLE digest_dirty (zone INTEGER NOT NULL, key BLOB NOT NULL, PRIMARY KEY (zone, key)) WITHOUT ROWID;
            CREATE TRIGGER records_digest_insert AFTER INSERT ON records BEGIN
                INSERT OR IGNORE INTO digest_dirty (zone, key) VALUES (NEW.zone, CAST(NEW.name AS BLOB));
            END;
            CREATE TABLE ix (rid INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL, title, rating);
            CREATE INDEX ix_title ON ix (zone, title, name);
            CREATE INDEX ix_rating ON ix (zone, rating, name);
            """,
        rows: { db, name, title, rating, blob in
            _ = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, state FROM records WHERE zone = 1 AND name = ?"), arguments: [name])
            try db.cachedStatement(sql: "INSERT INTO records (zone, name, type, alive, change_seq, state) VALUES (1, ?, 'Track', 1, 1, ?)").execute(arguments: [name, blob])
            try db.cachedStatement(sql: "INSERT INTO ix (rid, zone, name, title, rating) VALUES (?, 1, ?, ?, ?)").execute(arguments: [db.lastInsertedRowID, name, title, rating])
        })

    /// The clustered layout's records alone: what the merge writes with no indexed field.
    static let clusteredNoIndex = Layout(
        name: "clustered, no index",
        schema: """
            CREATE TABLE records (zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, alive INTEGER NOT NULL,
                change_seq INTEGER NOT NULL, state BLOB NOT NULL, PRIMARY KEY (zone, name)) WITHOUT ROWID;
            CREATE INDEX records_by_change ON records (zone, change_seq);
            """,
        rows: { db, name, _, _, blob in
            _ = try Row.fetchOne(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = 1 AND name = ?"), arguments: [name])
            try db.cachedStatement(sql: "INSERT INTO records (zone, name, type, alive, change_seq, state) VALUES (1, ?, 'Track', 1, 1, ?)").execute(arguments: [name, blob])
        })

    /// Records clustered by (zone, name) with the change sequence the only
    /// other index, liveness and type in it; indexed fields as one
    /// (zone, field, value, name) table, a row per indexed field.
    static let clustered = Layout(
        name: "clustered, two indexes",
        schema: clusteredNoIndex.schema + """
            CREATE TABLE field_index (zone INTEGER NOT NULL, field INTEGER NOT NULL, value NOT NULL, name TEXT NOT NULL,
                PRIMARY KEY (zone, field, value, name)) WITHOUT ROWID;
            """,
        rows: { db, name, title, rating, blob in
            try clusteredNoIndex.rows(db, name, title, rating, blob)
            let index = try db.cachedStatement(sql: "INSERT INTO field_index (zone, field, value, name) VALUES (1, ?, ?, ?)")
            try index.execute(arguments: [1, title, name])
            try index.execute(arguments: [2, rating, name])
        })

    /// The clustered layout with the indexed fields' rows gathered per
    /// change set and inserted in key order at its end.
    static let clusteredSorted = Layout(
        name: "clustered, two indexes inserted sorted",
        schema: clustered.schema,
        rows: clusteredNoIndex.rows,
        finish: { db, rows in
            let index = try db.cachedStatement(sql: "INSERT INTO field_index (zone, field, value, name) VALUES (1, ?, ?, ?)")
            for (name, title) in rows.map({ ($0.name, $0.title) }).sorted(by: { $0.1 < $1.1 }) { try index.execute(arguments: [1, title, name]) }
            for (name, rating) in rows.map({ ($0.name, $0.rating) }).sorted(by: { $0.1 < $1.1 }) { try index.execute(arguments: [2, rating, name]) }
        })

    static let layouts = [today, clustered, clusteredSorted, clusteredNoIndex]

    static func insert(records: Int, layout: Layout) throws -> Double {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-ceiling-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
        }
        let pool = try DatabasePool(path: directory.appendingPathComponent("ceiling.sqlite").path, configuration: configuration)
        try pool.write { db in try db.execute(sql: layout.schema) }
        var random = SystemRandomNumberGenerator()
        let rows = (0..<records).map { i -> (String, String, Int64, Data) in
            let fields = Workload.fields(record: i, generation: 0)
            guard case .string(let title)? = fields[0].value, case .int64(let rating)? = fields[4].value else { fatalError("workload shape") }
            return (Workload.name(i), title, rating, Data((0..<117).map { _ in UInt8.random(in: 0...255, using: &random) }))
        }
        let start = DispatchTime.now().uptimeNanoseconds
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                for (name, title, rating, blob) in rows { try layout.rows(db, name, title, rating, blob) }
                try layout.finish(db, rows.map { ($0.0, $0.1, $0.2) })
                return .commit
            }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}
