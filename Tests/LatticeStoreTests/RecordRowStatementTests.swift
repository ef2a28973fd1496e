import Foundation
import GRDB
@testable import LatticeStore
import Testing

/// The merge's per-record statements, stepped through SQLite's API rather
/// than GRDB's: what they bind and read is what GRDB would.
@Suite struct RecordRowStatementTests {
    func table() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { try $0.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, body BLOB)") }
        return queue
    }

    @Test func textIsBoundWholeThroughANul() throws {
        try table().write { db in
            let insert = try RecordRowStatement(db, sql: "INSERT INTO t (name, body) VALUES (?, ?)")
            try insert.execute([.text("a"), .blob([1])])
            try insert.execute([.text("a\u{0}b"), .blob([2, 3])])
            let select = try RecordRowStatement(db, sql: "SELECT id, body FROM t WHERE name = ?")
            let whole = try select.step([.text("a\u{0}b")]) { RecordRowStatement.blob($0, column: 1) }
            #expect(whole == Data([2, 3]))
            #expect(try select.step([.text("a")]) { RecordRowStatement.blob($0, column: 1) } == Data([1]))
            #expect(try select.step([.text("b")]) { RecordRowStatement.blob($0, column: 1) } == nil)
            // SQLite holds the three bytes of the second name.
            #expect(try Int.fetchAll(db, sql: "SELECT length(CAST(name AS BLOB)) FROM t ORDER BY id") == [1, 3])
        }
    }

    @Test func anEmptyBlobAndAnIntegerReadBack() throws {
        try table().write { db in
            try RecordRowStatement(db, sql: "INSERT INTO t (id, name, body) VALUES (?, ?, ?)").execute([.integer(Int64.max), .text("é"), .blob([])])
            let row = try RecordRowStatement(db, sql: "SELECT id, body FROM t WHERE name = ?").step([.text("é")]) {
                (RecordRowStatement.integer($0, column: 0), RecordRowStatement.blob($0, column: 1))
            }
            #expect(row?.0 == Int64.max && row?.1 == Data())
        }
    }

    /// A write outside a transaction (one SQLite rolled back on its own) is refused, not committed alone.
    @Test func aWriteOutsideATransactionIsRefused() throws {
        let queue = try table()
        try queue.inDatabase { db in
            let insert = try RecordRowStatement(db, sql: "INSERT INTO t (name, body) VALUES (?, ?)")
            #expect { try insert.execute([.text("x"), .blob([1])]) } throws: { ($0 as? DatabaseError)?.resultCode == .SQLITE_ABORT }
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 0)
        }
    }

    /// A failing step throws GRDB's error, with SQLite's message, and leaves the statement usable.
    @Test func aConstraintViolationThrowsAndTheStatementStillWorks() throws {
        try table().write { db in
            let insert = try RecordRowStatement(db, sql: "INSERT INTO t (name, body) VALUES (?, ?)")
            try insert.execute([.text("x"), .blob([1])])
            #expect {
                try insert.execute([.text("x"), .blob([2])])
            } throws: { error in
                (error as? DatabaseError)?.resultCode == .SQLITE_CONSTRAINT && (error as? DatabaseError)?.message?.contains("UNIQUE") == true
            }
            try insert.execute([.text("y"), .blob([3])])
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == 2)
        }
    }
}
