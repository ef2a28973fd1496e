import Foundation
import LatticeTestSupport
import Testing

/// Stores syncing by bundle files, and every kind of bad input.
@Suite struct BundleAndBadInputTests {
    let cli = CLI()

    func store(_ name: String) throws {
        try cli.ok(["init"], store: name)
        try cli.ok(["zone", "create", "Movies"], store: name)
    }

    /// Sends from `from` what `to` lacks, through files, as a USB stick would.
    func bundle(from: String, to: String) throws -> CLI.Result {
        let vector = cli.path("\(to)-vector.json")
        try cli.ok(["vector", "--json"], store: to).stdout.write(toFile: vector, atomically: true, encoding: .utf8)
        let file = cli.path("\(from)-to-\(to)-\(UUID().uuidString).ltb")
        try cli.ok(["bundle", "create", "-o", file, "--since", vector], store: from)
        return try cli.ok(["bundle", "apply", file, "--json"], store: to)
    }

    @Test(arguments: [UInt64(1), 2, 3]) func threeStoresConvergeWhateverTheBundleOrder(seed: UInt64) throws {
        let stores = ["a", "b", "c"]
        for name in stores { try store(name) }
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=3"], store: "a")
        try cli.ok(["record", "save", "Movies/gone", "--type", "Movie", "title=Gone"], store: "a")
        for other in ["b", "c"] { _ = try bundle(from: "a", to: other) }
        // Concurrent edits on all three, a delete racing an edit, and a re-creation.
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "rating=4"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "rating=5", "note=kids"], store: "b")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up!"], store: "c")
        try cli.ok(["record", "delete", "Movies/gone"], store: "b")
        try cli.ok(["record", "save", "Movies/gone", "--type", "Movie", "title=Edited"], store: "c")
        try cli.ok(["record", "save", "Movies/new", "--type", "Movie", "title=New"], store: "c")
        var generator = SeededGenerator(seed: seed)
        var pairs = stores.flatMap { from in stores.filter { $0 != from }.map { (from, $0) } }
        for _ in 0..<2 {
            pairs.shuffle(using: &generator)
            for (from, to) in pairs { _ = try bundle(from: from, to: to) }
        }
        let snapshots = try stores.map { try cli.snapshot($0) }
        #expect(snapshots[0] == snapshots[1] && snapshots[1] == snapshots[2], "seed \(seed): stores differ after exchanging bundles")
        let records = (try JSONSerialization.jsonObject(with: Data(snapshots[0].utf8)) as? [String: Any])?["records"] as? [[String: Any]] ?? []
        // Delete wins over the concurrent edit of "gone".
        #expect(records.compactMap { $0["recordName"] as? String }.sorted() == ["new", "up"])
        let up = records.first { $0["recordName"] as? String == "up" }?["fields"] as? [String: [String: Any]] ?? [:]
        #expect(up["title"]?["value"] as? String == "Up!" && up["note"]?["value"] as? String == "kids")
        // The losing rating shows on every store alike: conflicts travel with the record.
        let logs = try stores.map { try cli.ok(["conflicts", "Movies/up", "--json"], store: $0).stdout }
        #expect(logs[0] == logs[1] && logs[1] == logs[2], "seed \(seed): stores show different conflicts")
        #expect(logs[0].contains("\"rating\""))
        // A write after seeing the delete re-creates the record.
        try cli.ok(["record", "save", "Movies/gone", "--type", "Movie", "title=Back"], store: "a")
        _ = try bundle(from: "a", to: "b")
        #expect(try cli.ok(["record", "get", "Movies/gone"], store: "b").stdout.contains("\"Back\""))
        #expect(!(try cli.ok(["record", "get", "Movies/gone"], store: "b").stdout.contains("Edited")))
    }

    @Test func importJSONLinesAndStopAtABadLine() throws {
        try store("a")
        var lines = (0..<25).map { #"{"recordName":"m\#($0)","recordType":"Movie","fields":{"title":{"value":"T\#($0)","type":"STRING"},"rating":{"value":\#($0 % 5),"type":"INT64"}}}"# }
        let summary = try cli.ok(["record", "import", "Movies", "-", "--batch-size", "10", "--json"], input: lines.joined(separator: "\n")).json
        #expect(summary["imported"] as? Int == 25)
        lines = (100..<120).map { #"{"recordName":"n\#($0)","recordType":"Movie","fields":{"title":{"value":"N","type":"STRING"}}}"# }
        lines.insert("{not json", at: 15)
        let file = cli.path("bad.jsonl")
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let failed = try cli.run(["record", "import", "Movies", file, "--batch-size", "10"])
        #expect(failed.status == 65)
        #expect(failed.stderr.contains("line 16"))
        let count = (try cli.ok(["query", "Movie", "--zone", "Movies", "--json", "--limit", "1000"]).json["records"] as? [Any])?.count
        // The first batch of 10 stays; the batch holding the bad line is not saved.
        #expect(count == 25 + 10)
        // A value of the wrong type for the schema names the line too.
        let wrong = try cli.run(["record", "import", "Movies", "-"], input: #"{"recordName":"w","recordType":"Movie","fields":{"rating":{"value":"high","type":"STRING"}}}"#)
        #expect(wrong.status == 65 && wrong.stderr.contains("INT64"))
    }

    @Test func badInputGetsItsExitCodeAndChangesNothing() throws {
        try store("a")
        try cli.ok(["record", "save", "Movies/keep", "--type", "Movie", "title=Keep", "rating:int=4"])
        let before = try cli.snapshot()
        let cases: [([String], Int32, String)] = [
            (["frobnicate"], 64, ""),
            (["record", "save", "Movies/x", "--type", "Movie", "--bogus-flag"], 64, ""),
            (["record", "save", "Movies/x", "--type", "Movie", "title"], 64, "FIELD[:TYPE]=VALUE"),
            (["record", "save", "Movies/x", "--type", "Movie", "rating:int=four"], 65, "integer"),
            (["record", "save", "Movies/x", "--type", "Movie", "rating:wat=1"], 64, "unknown type"),
            (["record", "save", "Movies/x", "--type", "Movie", "rating=4.5"], 65, "integer"),
            (["record", "save", "Movies/x", "--type", "Movie", "where:location=1"], 65, "lat,lon"),
            (["record", "save", "Nope/x", "--type", "Movie", "title=x"], 66, "zone"),
            (["record", "get", "Movies/missing"], 66, "does not exist"),
            (["query", "Movie", "--zone", "Movies", "--where", "rating >= "], 64, "column"),
            (["query", "Movie", "--zone", "Movies", "--where", "rating ~ 4"], 64, "column 8"),
            (["query", "Movie", "--zone", "Movies", "--where", "(rating > 1"], 64, "')'"),
            (["query", "Movie", "--zone", "Movies", "--cursor", "garbage"], 65, "cursor"),
            (["bundle", "apply", cli.path("missing.ltb")], 66, ""),
            (["--database", "secret", "status"], 64, ""),
        ]
        for (arguments, status, message) in cases {
            let result = try cli.run(arguments)
            #expect(result.status == status, "lattice \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
            #expect(message.isEmpty || result.stderr.contains(message), "lattice \(arguments.joined(separator: " ")) said: \(result.stderr)")
        }
        // --json gives an error object.
        let json = try cli.run(["record", "get", "Movies/missing", "--json"])
        #expect((json.json["error"] as? [String: Any])?["serverErrorCode"] as? String == "UNKNOWN_ITEM")
        // A store directory that is not a store, and no store at all.
        let notAStore = cli.path("plain")
        try FileManager.default.createDirectory(atPath: notAStore, withIntermediateDirectories: true)
        try "x".write(toFile: notAStore + "/file", atomically: true, encoding: .utf8)
        let refused = try cli.run(["status"], store: "plain")
        #expect(refused.status == 66 && refused.stderr.contains("not a Lattice store"))
        #expect(try cli.run(["status"], store: "nothing-here").status == 66)
        // Damaged, truncated and foreign bundles.
        try store("b")
        try cli.ok(["record", "save", "Movies/other", "--type", "Movie", "title=Other"], store: "b")
        let good = cli.path("good.ltb")
        try cli.ok(["bundle", "create", "-o", good], store: "b")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        var flipped = bytes
        flipped[bytes.count / 2] ^= 0x20
        let damaged: [(String, Data)] = [("truncated", bytes.prefix(bytes.count - 7)), ("flipped", flipped), ("foreign", Data("PK\u{3}\u{4} a zip file".utf8))]
        for (name, data) in damaged {
            let file = cli.path("\(name).ltb")
            try data.write(to: URL(fileURLWithPath: file))
            let result = try cli.run(["bundle", "apply", file])
            #expect(result.status == 65, "\(name) bundle: \(result.stderr)")
        }
        // An empty file is not a bundle; a directory is neither a bundle nor an import file.
        let empty = cli.path("empty.ltb")
        _ = FileManager.default.createFile(atPath: empty, contents: nil)
        #expect(try cli.run(["bundle", "apply", empty]).status == 65)
        let folder = cli.path("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "keep me".write(toFile: folder + "/precious.txt", atomically: true, encoding: .utf8)
        #expect(try cli.run(["bundle", "apply", folder]).status == 66)
        #expect(try cli.run(["record", "import", "Movies", folder]).status == 66)
        // `bundle create -o DIR` refuses, and the directory keeps its files.
        #expect(try cli.run(["bundle", "create", "-o", folder]).status == 64)
        #expect(try String(contentsOfFile: folder + "/precious.txt", encoding: .utf8) == "keep me")
        #expect(try cli.run(["conflicts", "Movies/missing"]).status == 66)
        #expect(try cli.run(["record", "save", "Movies/x", "--type", "Movie", "1x=5"]).status == 64)
        #expect(try cli.run(["record", "save", "Movies/x", "--type", "Movie", "d:date=-99999999999999999"]).status == 65)
        #expect(try cli.snapshot() == before, "bad input changed the store")
    }

    /// A bundle announces how many change sets it holds: one cut between two
    /// of them (every frame intact) is refused whole, not half applied.
    @Test func aBundleCutBetweenTwoChangeSetsAppliesNothing() throws {
        try store("a")
        try cli.ok(["record", "save", "Movies/m", "--type", "Movie", "title=M"])
        let file = cli.path("one-zone.ltb")
        try cli.ok(["bundle", "create", "-o", file, "Movies"])
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(Array(bytes.prefix(9)) == Array("LTBN".utf8) + [2, 1, 0, 0, 0])
        bytes[5] = 2 // as if a second change set had followed
        let cut = cli.path("cut.ltb")
        try bytes.write(to: URL(fileURLWithPath: cut))
        try store("b")
        let before = try cli.snapshot("b")
        let refused = try cli.run(["bundle", "apply", cut], store: "b")
        #expect(refused.status == 65 && refused.stderr.contains("announces 2"), "\(refused.stderr)")
        #expect(try cli.snapshot("b") == before)
    }

    @Test func aVectorFileWithInexactNumbersIsRefused() throws {
        try store("a")
        for time in ["1.5", "true", "1e30", "18446744073709551616", "-1"] {
            let file = cli.path("vector.json")
            try #"{"vectors":[{"database":"private","zoneName":"Movies","vector":{"00000000000000000000000000000001":\#(time)}}]}"#
                .write(toFile: file, atomically: true, encoding: .utf8)
            let result = try cli.run(["bundle", "create", "-o", cli.path("out.ltb"), "--since", file])
            #expect(result.status == 65, "a vector entry of \(time) was accepted")
        }
    }

    @Test func aPredicateNestedTooDeepIsAUsageError() throws {
        try store("a")
        let deep = String(repeating: "(", count: 5_000) + "rating == 1" + String(repeating: ")", count: 5_000)
        let result = try cli.run(["query", "Movie", "--zone", "Movies", "--where", deep])
        #expect(result.status == 64 && result.stderr.contains("nested"), "\(result.stderr)")
        let notNot = String(repeating: "NOT ", count: 20_000) + "rating == 1"
        #expect(try cli.run(["query", "Movie", "--zone", "Movies", "--where", notNot]).status == 64)
    }

    @Test func aBundleDamagedInItsLastZoneAppliesNothing() throws {
        try store("a")
        try cli.ok(["zone", "create", "Music"])
        try cli.ok(["record", "save", "Movies/m", "--type", "Movie", "title=M"])
        try cli.ok(["record", "save", "Music/s", "--type", "Song", "title=S"])
        let file = cli.path("two-zones.ltb")
        try cli.ok(["bundle", "create", "-o", file])
        try store("b")
        let before = try cli.snapshot("b")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        bytes[bytes.count - 3] ^= 0x01
        let damaged = cli.path("damaged.ltb")
        try bytes.write(to: URL(fileURLWithPath: damaged))
        #expect(try cli.run(["bundle", "apply", damaged], store: "b").status == 65)
        #expect(try cli.snapshot("b") == before)
        #expect(try cli.ok(["zone", "list"], store: "b").stdout.contains("Movies\t0 records"))
        try cli.ok(["bundle", "apply", file], store: "b")
        #expect(try cli.ok(["record", "get", "Music/s"], store: "b").stdout.contains("\"S\""))
    }

    @Test func aStoreWhoseSecretsOthersCanReadIsRefusedWithWhatToDo() throws {
        try cli.ok(["init"], store: "open")
        let key = cli.path("open") + "/identity.key"
        #expect(chmod(key, 0o644) == 0)
        let keyOpen = try cli.run(["record", "save", "Movies/x", "--type", "Movie", "title=X"], store: "open")
        #expect(keyOpen.status == 77, "\(keyOpen.stderr)")
        #expect(keyOpen.stderr.contains("the identity key file is readable or writable by other users (mode 0644)"), "\(keyOpen.stderr)")
        #expect(keyOpen.stderr.contains("chmod 600 \(key)"))
        #expect(chmod(key, 0o600) == 0)
        #expect(chmod(cli.path("open"), 0o755) == 0)
        let directoryOpen = try cli.run(["id"], store: "open")
        #expect(directoryOpen.status == 77)
        #expect(directoryOpen.stderr.contains("the store directory is open to other users (mode 0755)"), "\(directoryOpen.stderr)")
        #expect(chmod(cli.path("open"), 0o700) == 0)
        try cli.ok(["id"], store: "open")
    }
}
