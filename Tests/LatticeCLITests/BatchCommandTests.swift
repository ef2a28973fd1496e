import Foundation
import Synchronization
import LatticeTestSupport
import Testing

/// `lattice batch`: JSON lines in, one JSON result line out per line, in order;
/// bad lines fail alone; a result is printed only once its write is durable.
@Suite struct BatchCommandTests {
    let cli = CLI()

    func save(_ name: String, _ operation: String = "create", fields: String = #""title":{"value":"Up"}"#, tag: String? = nil) -> String {
        #"{"operationType":"\#(operation)","record":{"recordName":"\#(name)","recordType":"Movie"\#(tag.map { #","recordChangeTag":"\#($0)""# } ?? ""),"fields":{\#(fields)}}}"#
    }

    /// Runs `lattice batch` with `lines` written from another thread (a pipe holds 64 KiB: input and output both flow).
    /// A running `lattice batch` on store a, with pipes to feed it and read it.
    func startBatch(_ arguments: [String]) throws -> (process: Process, input: FileHandle, output: FileHandle) {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["batch"] + arguments + ["--store", cli.path("a")]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, input.fileHandleForWriting, output.fileHandleForReading)
    }

    func batch(_ lines: [String], _ arguments: [String] = ["--zone", "Movies"]) throws -> (status: Int32, results: [[String: Any]]) {
        let (process, writer, output) = try startBatch(arguments)
        let text = Data((lines.joined(separator: "\n") + "\n").utf8)
        Thread {
            try? writer.write(contentsOf: text)
            try? writer.close()
        }.start()
        let data = output.readDataToEndOfFile()
        process.waitUntilExit()
        let results = String(decoding: data, as: UTF8.self).split(separator: "\n").map { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:] }
        return (process.terminationStatus, results)
    }

    func fields(_ name: String) throws -> [String: Any]? {
        let result = try cli.run(["record", "get", "Movies/\(name)", "--json"])
        guard result.status == 0 else { return nil }
        return ((result.json["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any])
    }

    @Test func goodAndBadLinesEachGetTheirAnswerInOrder() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        let (status, results) = try batch([
            save("up"),
            save("up", fields: #""title":{"value":"Up again"}"#),                       // exists
            "not json",
            #"{"operationType":"explode","record":{"recordName":"up"}}"#,
            save("coco", fields: #""rating":{"value":"five","type":"INT64"}"#),           // a bad value
            save("up", "forceUpdate", fields: #""rating":{"value":4,"type":"INT64"}"#),
            save("up", "update", fields: #""rating":{"value":1,"type":"INT64"}"#, tag: "stale"),
            #"{"records":[{"recordName":"up"},{"recordName":"nope"}]}"#,
            #"{"query":{"recordType":"Movie","filterBy":[{"fieldName":"rating","comparator":"EQUALS","fieldValue":{"value":4,"type":"INT64"}}]}}"#,
            #"{"operationType":"delete","record":{"recordName":"nope"}}"#,
            save("wall-e", fields: #""title":{"value":"WALL-E"}"#),
            #"{"query":{"recordType":"Movie"}}"#,
        ])
        #expect(status == 1, "a line failed: the batch exits 1")
        #expect(results.map { $0["line"] as? Int } == Array(1...12))
        #expect(results.map { $0["exitCode"] as? Int } == [0, 75, 65, 65, 65, 0, 75, 66, 0, 66, 0, 0])
        #expect(results.map { $0["serverErrorCode"] as? String } == [nil, "CONFLICT", "BAD_REQUEST", "BAD_REQUEST", "BAD_REQUEST", nil, "CONFLICT", nil, nil, "UNKNOWN_ITEM", nil, nil])
        #expect((results[11]["records"] as? [[String: Any]])?.count == 2, "a query without filterBy matches every record of its type")
        let lookup = results[7]["records"] as? [[String: Any]]
        #expect(lookup?.count == 2 && lookup?[1]["serverErrorCode"] as? String == "UNKNOWN_ITEM")
        #expect((results[8]["records"] as? [[String: Any]])?.map { $0["recordName"] as? String } == ["up"], "the query sees the writes before it")
        // Nothing of a failed line was written; the good ones were.
        #expect((try fields("up"))?["title"] as? [String: Any] != nil)
        #expect(((try fields("up"))?["rating"] as? [String: Any])?["value"] as? Int == 4)
        #expect(try fields("coco") == nil)
        #expect(((try fields("wall-e"))?["title"] as? [String: Any])?["value"] as? String == "WALL-E")
    }

    /// Each line answers as the single command would: the same fields, exit codes and errors.
    @Test func theSameResultsAsTheSingleCommands() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        for store in ["a", "b"] {
            try cli.ok(["init"], store: store)
            try cli.ok(["zone", "create", "Movies"], store: store)
        }
        let single = [
            try cli.run(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=5"], store: "b"),
            try cli.run(["record", "save", "Movies/up", "--type", "Movie", "rating:int=4"], store: "b"),
            try cli.run(["record", "save", "Movies/up", "--type", "Movie", "--if-tag", "stale", "rating:int=1"], store: "b"),
            try cli.run(["record", "get", "Movies/nope", "--json"], store: "b"),
            try cli.run(["record", "delete", "Movies/nope"], store: "b"),
            try cli.run(["record", "save", "Movies/up", "--type", "Show", "title=x"], store: "b"),
        ]
        let (_, results) = try batch([
            save("up", "forceUpdate", fields: #""title":{"value":"Up"},"rating":{"value":5,"type":"INT64"}"#),
            save("up", "forceUpdate", fields: #""rating":{"value":4,"type":"INT64"}"#),
            save("up", "update", fields: #""rating":{"value":1,"type":"INT64"}"#, tag: "stale"),
            #"{"records":[{"recordName":"nope"}]}"#,
            #"{"operationType":"forceDelete","record":{"recordName":"nope"}}"#,
            #"{"operationType":"forceUpdate","record":{"recordName":"up","recordType":"Show","fields":{"title":{"value":"x"}}}}"#,
        ])
        #expect(results.map { $0["exitCode"] as? Int } == single.map { Int($0.status) })
        #expect(try fields("up").map { NSDictionary(dictionary: $0) } == (try cli.run(["record", "get", "Movies/up", "--json"], store: "b").json["records"] as? [[String: Any]])?.first.flatMap { $0["fields"] as? [String: Any] }.map { NSDictionary(dictionary: $0) })
    }

    /// Killed with SIGKILL while lines keep coming: every write whose result was printed is in the
    /// store, and every record is there whole or not at all.
    @Test func aKilledBatchKeepsEveryWriteItAnsweredAndNoHalfWrite() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        // The feeding thread writes on after the kill: a closed pipe must be an error, not the end of the tests.
        signal(SIGPIPE, SIG_IGN)
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        let (process, writer, output) = try startBatch(["--zone", "Movies"])
        let printed = Mutex<[String]>([])
        let buffer = Mutex(Data())
        PipeReader.start(output) { data in
            buffer.withLock { pending in
                pending.append(data)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[pending.startIndex..<newline]
                    pending.removeSubrange(pending.startIndex...newline)
                    if let result = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any], result["exitCode"] as? Int == 0,
                       let name = (result["records"] as? [[String: Any]])?.first?["recordName"] as? String {
                        printed.withLock { $0.append(name) }
                    }
                }
            }
        }
        let total = 3_000
        Thread {
            for chunk in stride(from: 0, to: total, by: 100) {
                let lines = (chunk..<min(chunk + 100, total)).map { save("m\($0)", fields: #""title":{"value":"t\#($0)"},"rating":{"value":\#($0),"type":"INT64"}"#) }
                // The throwing write: after the kill the pipe is closed, and the feeding stops.
                do { try writer.write(contentsOf: Data((lines.joined(separator: "\n") + "\n").utf8)) } catch { return }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }.start()
        _ = eventuallyBlocking { printed.withLock { $0.count } >= 300 }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? writer.close()
        let answered = printed.withLock { $0 }
        #expect(answered.count >= 300, "only \(answered.count) results before the deadline")
        let query = try cli.ok(["query", "Movie", "--zone", "Movies", "--limit", "10000", "--json"])
        let stored = (query.json["records"] as? [[String: Any]]) ?? []
        var byName: [String: [String: Any]] = [:]
        for record in stored { if let name = record["recordName"] as? String { byName[name] = record["fields"] as? [String: Any] } }
        let missing = answered.filter { byName[$0] == nil }
        #expect(missing.isEmpty, "answered but not stored: \(missing.prefix(5))")
        for (name, fields) in byName {
            let number = Int(name.dropFirst())!
            #expect((fields["title"] as? [String: Any])?["value"] as? String == "t\(number)" && (fields["rating"] as? [String: Any])?["value"] as? Int == number,
                    "\(name) is stored half: \(fields)")
        }
        #expect(byName.count < total, "the kill came after everything was written: nothing was tested")
    }

    /// JSON lines may hold blank lines (skipped, still counted); a line past 16 MiB is refused
    /// without being held, and the next line runs.
    @Test func blankLinesAreSkippedAndAnOverlongLineIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        let (status, results) = try batch(["", save("up"), "  ", String(repeating: "x", count: 17 << 20), save("coco")])
        #expect(status == 1)
        #expect(results.map { $0["line"] as? Int } == [2, 4, 5])
        #expect(results.map { $0["exitCode"] as? Int } == [0, 65, 0])
        #expect((results[1]["reason"] as? String)?.contains("longer than 16 MiB") == true)
    }

    /// --atomic: a zone's writes apply all or none.
    @Test func atomicAppliesAZoneAllOrNothing() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        try cli.ok(["zone", "create", "Shows"])
        let (status, results) = try batch([
            save("up"),
            #"{"operationType":"create","zoneID":{"zoneName":"Shows"},"record":{"recordName":"s1","recordType":"Show","fields":{"title":{"value":"S"}}}}"#,
            save("up"), // exists by then: the Movies zone fails whole
            save("coco"),
        ], ["--zone", "Movies", "--atomic"])
        #expect(status == 1)
        #expect(results.map { $0["exitCode"] as? Int } == [65, 0, 75, 65])
        #expect(results.map { $0["serverErrorCode"] as? String } == ["ATOMIC_ERROR", nil, "CONFLICT", "ATOMIC_ERROR"])
        #expect(try fields("up") == nil && (try fields("coco")) == nil)
        #expect(try cli.run(["record", "get", "Shows/s1"]).status == 0)
    }

    /// CloudKit Web Services makes a zone ID's owner optional, and `batch --help` shows such lines:
    /// a record whose own zoneID names only its zone (or its owner as ownerRecordName) is saved
    /// there, by `batch` and by `record import` (both refused it with exit 65 before).
    @Test func aZoneIDWithoutItsOwnerIsTheCallersOwnZone() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        try cli.ok(["zone", "create", "Shows"])
        let (status, results) = try batch([
            #"{"operationType":"create","record":{"recordName":"s1","recordType":"Show","zoneID":{"zoneName":"Shows"},"fields":{"title":{"value":"S1"}}}}"#,
            #"{"operationType":"create","zoneID":{"zoneName":"Shows","ownerRecordName":"__defaultOwner__"},"record":{"recordName":"s2","recordType":"Show","fields":{"title":{"value":"S2"}}}}"#,
            #"{"records":[{"recordName":"s1","zoneID":{"zoneName":"Shows"}}]}"#,
        ], [])
        #expect(status == 0, "\(results)")
        #expect(results.map { $0["exitCode"] as? Int } == [0, 0, 0])
        for name in ["s1", "s2"] { #expect(try cli.run(["record", "get", "Shows/\(name)"]).status == 0, "\(name) is not in Shows") }
        let imported = try cli.run(["record", "import", "Movies", "-"], input: #"{"recordName":"m1","recordType":"Movie","zoneID":{"zoneName":"Movies"},"fields":{"title":{"value":"Up"}}}"# + "\n")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try fields("m1")?["title"] != nil)
    }

    /// A create without `recordName` (the record gets a new name, as CloudKit names it) or
    /// without `fields` is CloudKit's, and accepted; a delete still needs the name.
    @Test func aCreateMayLeaveOutTheRecordsNameAndFields() throws {
        defer { try? FileManager.default.removeItem(at: cli.root) }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        let (status, results) = try batch([
            #"{"operationType":"create","record":{"recordType":"Movie","fields":{"title":{"value":"Nameless"}}}}"#,
            #"{"operationType":"create","record":{"recordName":"bare","recordType":"Movie"}}"#,
            #"{"operationType":"forceDelete","record":{}}"#,
        ])
        #expect(status == 1)
        #expect(results.map { $0["exitCode"] as? Int } == [0, 0, 65])
        let named = try #require(((results[0]["records"] as? [[String: Any]])?.first)?["recordName"] as? String)
        #expect(UUID(uuidString: named) != nil)
        #expect(try fields(named)?["title"] != nil)
        #expect(try cli.run(["record", "get", "Movies/bare"]).status == 0)
    }
}
