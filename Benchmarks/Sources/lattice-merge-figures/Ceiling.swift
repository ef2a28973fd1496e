import Foundation
import GRDB
import Workload

/// The engine's ceiling: the rows an empty receiver's merge writes (the
/// records table with its indexes, optionally the two indexed fields' table),
/// through GRDB's prepared statements in one durable transaction, with no
/// Lattice code around them. State blobs are random bytes of the size the
/// store keeps.
enum Ceiling {
    static func insert(records: Int, indexed: Bool) throws -> Double {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-ceiling-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA cache_size = -65536")
        }
        let pool = try DatabasePool(path: directory.appendingPathComponent("ceiling.sqlite").path, configuration: configuration)
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE records (id INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
                    alive INTEGER NOT NULL, change_seq INTEGER NOT NULL, state BLOB NOT NULL, UNIQUE (zone, name));
                CREATE INDEX records_by_change ON records (zone, change_seq);
                CREATE INDEX records_by_type ON records (zone, type) WHERE alive = 1;
                CREATE TABLE ix (rid INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL, title, rating);
                CREATE INDEX ix_title ON ix (zone, title, name);
                CREATE INDEX ix_rating ON ix (zone, rating, name);
                """)
        }
        var random = SystemRandomNumberGenerator()
        let rows = (0..<records).map { i -> (String, String, Int64, Data) in
            let fields = Workload.fields(record: i, generation: 0)
            guard case .string(let title)? = fields[0].value, case .int64(let rating)? = fields[4].value else { fatalError("workload shape") }
            return (Workload.name(i), title, rating, Data((0..<117).map { _ in UInt8.random(in: 0...255, using: &random) }))
        }
        let start = DispatchTime.now().uptimeNanoseconds
        try pool.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                let find = try db.makeStatement(sql: "SELECT id, state FROM records WHERE zone = 1 AND name = ?")
                let insert = try db.makeStatement(sql: "INSERT INTO records (zone, name, type, alive, change_seq, state) VALUES (1, ?, 'Track', 1, 1, ?)")
                let index = try db.makeStatement(sql: "INSERT INTO ix (rid, zone, name, title, rating) VALUES (?, 1, ?, ?, ?)")
                for (name, title, rating, blob) in rows {
                    _ = try Row.fetchOne(find, arguments: [name])
                    try insert.execute(arguments: [name, blob])
                    if indexed { try index.execute(arguments: [db.lastInsertedRowID, name, title, rating]) }
                }
                return .commit
            }
        }
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}
