import Foundation
import GRDB
import Testing

/// A `lattice` command leaves the store open as it exits (no checkpoint, no
/// sync of the database at every call), but empties a write-ahead log that
/// grew large, which the next process to open the store alone would read
/// whole, and never waits for another process's readers to do so.
@Suite struct OneCommandLogTests {
    let cli = CLI()

    func logSize(_ store: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: cli.path(store) + "/lattice.sqlite-wal"))?[.size] as? Int) ?? -1
    }

    func importLines(_ count: Int, from start: Int = 0) -> String {
        (start..<start + count).map { #"{"recordName":"m\#($0)","recordType":"Movie","fields":{"title":{"value":"a title long enough to fill pages \#($0)"}}}"# }.joined(separator: "\n")
    }

    @Test func aLargeLogIsEmptiedAtExitAndASmallOneIsLeft() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up"])
        let small = logSize("a")
        #expect(small > 0 && small < 1 << 20, "a save leaves its few pages in the log: \(small) bytes")
        try cli.ok(["record", "import", "Movies", "-"], input: importLines(20_000))
        #expect(logSize("a") == 0, "an import of 20,000 records left a log of \(logSize("a")) bytes")
        #expect(try cli.ok(["record", "get", "Movies/m19999", "--json"]).stdout.contains("m19999"))

        // Another process reading: the command leaves the log (that it does not wait for the reader is
        // LogTruncationTests' to check, without a clock).
        var configuration = Configuration()
        configuration.readonly = true
        let reader = try DatabaseQueue(path: cli.path("a") + "/lattice.sqlite", configuration: configuration)
        defer { try? reader.close() }
        try reader.read { db in
            _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records")
            try cli.ok(["record", "import", "Movies", "-"], input: importLines(20_000, from: 20_000))
            #expect(logSize("a") > 1 << 20, "the log was emptied under a reader")
        }
        #expect(try cli.ok(["record", "get", "Movies/m39999", "--json"]).stdout.contains("m39999"))
    }
}
