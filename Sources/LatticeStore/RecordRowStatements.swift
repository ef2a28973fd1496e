import Foundation
import GRDB
import GRDBSQLite

/// The statements a merge runs once per incoming record (its lookup, its
/// insert or update), stepped through SQLite's own API. Through GRDB's
/// argument boxing, cursors and row types each cost about three times
/// SQLite's own work (perf of an initial sync, issue 39). Nothing observes
/// these tables through GRDB; what GRDB's execute checks that matters here,
/// that a write runs inside the transaction it was meant for, `execute` checks too.
struct RecordRowStatement {
    private let statement: Statement
    private let connection: SQLiteConnection?

    init(_ db: GRDB.Database, sql: String) throws {
        statement = try db.makeStatement(sql: sql)
        connection = db.sqliteConnection
    }

    /// One value bound to a parameter.
    enum Value {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
        case null
    }

    /// Binds `values` to the statement's parameters in order, steps it once
    /// and hands the row, if any, to `read`; leaves the statement reset.
    func step<Result>(_ values: [Value], read: (OpaquePointer) -> Result) throws -> Result? {
        let handle = statement.sqliteStatement
        // Every step leaves the statement reset, so none needs resetting first.
        defer { sqlite3_reset(handle) }
        // SQLITE_TRANSIENT: SQLite copies text and blobs, so nothing bound need outlive the call.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
            // The text's own length, never -1: a name may hold a NUL, which must not end it here.
            case .text(let text): code = text.withCString { sqlite3_bind_text(handle, index, $0, Int32(text.utf8.count), transient) }
            case .blob(let bytes): code = bytes.withUnsafeBytes { sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), transient) }
            case .null: code = sqlite3_bind_null(handle, index)
            }
            guard code == SQLITE_OK else { throw error(code) }
        }
        switch sqlite3_step(handle) {
        case SQLITE_DONE: return nil
        case SQLITE_ROW: return read(handle)
        case let code: throw error(code)
        }
    }

    /// Runs a statement that returns no row, inside the transaction the
    /// store opened: if SQLite rolled that transaction back on its own (a full
    /// disk, an I/O error), a write here would commit alone, so it is refused.
    func execute(_ values: [Value]) throws {
        guard let connection, sqlite3_get_autocommit(connection) == 0 else {
            throw DatabaseError(resultCode: .SQLITE_ABORT, message: "the transaction was rolled back; nothing written outside it", sql: statement.sql)
        }
        _ = try step(values) { _ in () }
    }

    private func error(_ code: Int32) -> DatabaseError {
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
    }
}

extension RecordRowStatement {
    /// A blob column of the current row (empty for NULL or a zero-length blob).
    static func blob(_ handle: OpaquePointer, column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let bytes = sqlite3_column_blob(handle, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    static func integer(_ handle: OpaquePointer, column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }
}
