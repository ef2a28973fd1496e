import GRDB

/// A store file's pages by table and index (SQLite's dbstat), and the rows of `tables`.
func storeSizes(_ path: String, counting tables: [String]) throws -> (bytes: [String: Int], rows: [String: Int]) {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try DatabaseQueue(path: path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read { db in
        let bytes = try Row.fetchAll(db, sql: "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").reduce(into: [String: Int]()) { $0[$1[0]] = $1[1] }
        let rows = try tables.reduce(into: [String: Int]()) { $0[$1] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \($1)") }
        return (bytes, rows)
    }
}
