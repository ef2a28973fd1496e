import Foundation
import Testing

/// Every command through the built binary, on real store directories.
@Suite struct CommandTests {
    let cli = CLI()

    func setUpStore() throws {
        try cli.ok(["init", "--name", "laptop"])
        try cli.ok(["zone", "create", "Movies"])
    }

    @Test func initIdAndStatus() throws {
        let created = try cli.ok(["init", "--name", "laptop", "--json"]).json
        #expect(created["created"] as? Bool == true)
        let id = try cli.ok(["id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(id == created["deviceID"] as? String)
        #expect(id.split(separator: "-").count == 8)
        #expect(try cli.ok(["id", "--json"]).json["name"] as? String == "laptop")
        let again = try cli.ok(["init", "--json"]).json
        #expect(again["created"] as? Bool == false && again["deviceID"] as? String == id)
        let status = try cli.ok(["status", "--json"]).json
        #expect(status["deviceID"] as? String == id)
        #expect(try cli.ok(["status"]).stdout.contains("device     \(id)"))
        // LATTICE_STORE picks the store when --store is absent.
        let viaEnvironment = try cli.run(["id"], store: nil, environment: ["LATTICE_STORE": cli.path("a")])
        #expect(viaEnvironment.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id)
    }

    @Test func globalOptionsGoBeforeOrAfterTheSubcommand() throws {
        try setUpStore()
        let store = cli.path("a")
        let before = try cli.run(["--store", store, "--json", "--database", "private", "zone", "list"], store: nil)
        #expect(before.status == 0, "\(before.stderr)")
        let zones = (before.json["zones"] as? [[String: Any]])?.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String }
        #expect(zones == ["_defaultZone", "Movies"])
        let mixed = try cli.run(["--store=\(store)", "record", "save", "Movies/a", "--type", "Movie", "--json", "title=A"], store: nil)
        #expect(mixed.status == 0 && (mixed.json["records"] as? [[String: Any]])?.count == 1, "\(mixed.stderr)")
        // Shared zones come from shares: creating one is refused.
        let shared = try cli.run(["--database", "shared", "zone", "create", "Family"])
        #expect(shared.status == 65 && shared.stderr.contains("shared database"), "\(shared.status) \(shared.stderr)")
    }

    @Test func zonesCreateListDelete() throws {
        try setUpStore()
        try cli.ok(["zone", "create", "Music"])
        let list = try cli.ok(["zone", "list", "--json"]).json["zones"] as? [[String: Any]] ?? []
        #expect(list.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String } == ["_defaultZone", "Movies", "Music"])
        #expect(try cli.ok(["zone", "list"]).stdout.contains("Music\t0 records"))
        try cli.ok(["zone", "delete", "Music"])
        #expect(!(try cli.ok(["zone", "list"]).stdout.contains("Music")))
        #expect(try cli.run(["zone", "delete", "Nope"]).status == 66)
    }

    @Test func recordSaveGetDeleteWithEveryType() throws {
        try setUpStore()
        let asset = cli.path("poster.txt")
        try Data("poster".utf8).write(to: URL(fileURLWithPath: asset))
        let saved = try cli.ok(["record", "save", "Movies/toy-story", "--type", "Movie", "--json",
            "title=Toy Story", "rating:int=5", "score:double=8.3", "seen:bool=true", "released:date=1995-11-22T00:00:00Z",
            "thumb:bytes=AQID", "sequel:ref=Movies/toy-story-2", "studio:ref-cascade=pixar", "where:location=37.8,-122.3,10",
            "poster:asset=\(asset)", "tags:string-list=pixar,toys", "years:int-list=[1995,1999]"]).json
        let record = (saved["records"] as? [[String: Any]])?.first ?? [:]
        let fields = record["fields"] as? [String: [String: Any]] ?? [:]
        #expect(fields["title"]?["value"] as? String == "Toy Story" && fields["title"]?["type"] as? String == "STRING")
        #expect(fields["rating"]?["type"] as? String == "INT64" && fields["rating"]?["value"] as? Int == 5)
        #expect(fields["released"]?["type"] as? String == "TIMESTAMP" && fields["released"]?["value"] as? Int64 == 816_998_400_000)
        #expect(fields["thumb"]?["value"] as? String == "AQID")
        #expect((fields["studio"]?["value"] as? [String: Any])?["action"] as? String == "DELETE_SELF")
        #expect(fields["tags"]?["type"] as? String == "STRING_LIST")
        #expect((fields["poster"]?["value"] as? [String: Any])?["size"] as? Int == 6)
        let tag = record["recordChangeTag"] as? String
        #expect(tag != nil)
        // The schema types later untyped values.
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating=4"])
        let up = try cli.ok(["record", "get", "Movies/up", "--json"]).json
        #expect((((up["records"] as? [[String: Any]])?.first?["fields"] as? [String: [String: Any]])?["rating"]?["type"]) as? String == "INT64")
        #expect(try cli.ok(["record", "get", "Movies/up"]).stdout.contains("rating: 4"))
        // --if-tag: current tag passes, stale tag is a conflict (75) and changes nothing.
        try cli.ok(["record", "save", "Movies/toy-story", "--type", "Movie", "--if-tag", tag!, "rating=4"])
        let stale = try cli.run(["record", "save", "Movies/toy-story", "--type", "Movie", "--if-tag", tag!, "rating=1"])
        #expect(stale.status == 75)
        #expect(try cli.ok(["record", "get", "Movies/toy-story"]).stdout.contains("rating: 4"))
        // --all-keys replaces the field set.
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "--all-keys", "title=Up!"])
        #expect(!(try cli.ok(["record", "get", "Movies/up"]).stdout.contains("rating")))
        // null removes a field.
        try cli.ok(["record", "save", "Movies/toy-story", "--type", "Movie", "score:null="])
        #expect(!(try cli.ok(["record", "get", "Movies/toy-story"]).stdout.contains("score")))
        // Delete with a stale tag is refused; without, it goes.
        #expect(try cli.run(["record", "delete", "Movies/up", "--if-tag", "stale"]).status == 75)
        try cli.ok(["record", "delete", "Movies/up"])
        #expect(try cli.run(["record", "get", "Movies/up"]).status == 66)
    }

    @Test func queryWithPredicateSortLimitCursorAndWebServicesJSON() throws {
        try setUpStore()
        let movies: [(String, String, Int, String)] = [
            ("toy-story", "Toy Story", 5, "Lasseter"), ("toy-story-2", "Toy Story 2", 4, "Lasseter"), ("up", "Up", 5, "Docter"),
            ("cars", "Cars", 3, "Lasseter"), ("coco", "Coco", 4, "Unkrich"), ("brave", "Brave", 3, "Andrews"),
        ]
        for (name, title, rating, director) in movies {
            try cli.ok(["record", "save", "Movies/\(name)", "--type", "Movie", "title=\(title)", "rating:int=\(rating)", "director=\(director)", "watchedDate:date=2024-01-0\(rating)T00:00:00Z"])
        }
        func names(_ arguments: [String]) throws -> [String] {
            let result = try cli.ok(["query", "Movie", "--zone", "Movies", "--json"] + arguments).json
            return (result["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
        }
        #expect(try names(["--where", #"rating >= 4 AND (title BEGINSWITH "Toy" OR director == "Lasseter")"#, "--sort", "title"]) == ["toy-story", "toy-story-2"])
        #expect(try names(["--where", #"NOT director IN ["Lasseter", "Docter"]"#, "--sort", "title"]) == ["brave", "coco"])
        #expect(try names(["--sort", "-rating", "--sort", "title", "--limit", "3"]) == ["toy-story", "up", "coco"])
        #expect(try names(["--where", "watchedDate < @2024-01-04T00:00:00Z"]) == ["brave", "cars"])
        // filterBy / sortBy dictionaries.
        let filterBy = #"[{"fieldName":"rating","comparator":"GREATER_THAN","fieldValue":{"value":4,"type":"INT64"}}]"#
        #expect(try names(["--where", filterBy, "--sort", #"[{"fieldName":"title","ascending":false}]"#]) == ["up", "toy-story"])
        // Pages with continuationMarker cover everything once.
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try cli.ok(["query", "Movie", "--zone", "Movies", "--json", "--sort", "title", "--limit", "4"] + (cursor.map { ["--cursor", $0] } ?? [])).json
            seen += (page["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
            cursor = page["continuationMarker"] as? String
        } while cursor != nil
        #expect(seen == ["brave", "cars", "coco", "toy-story", "toy-story-2", "up"])
        #expect(try cli.ok(["query", "Movie", "--zone", "Movies", "--where", "rating == 3"]).stdout.contains("2 records"))
    }

    @Test func changesWithTokens() throws {
        try setUpStore()
        try cli.ok(["record", "save", "Movies/a", "--type", "Movie", "title=A"])
        let first = try cli.ok(["changes", "Movies", "--json"]).json
        let token = try #require(first["syncToken"] as? String)
        try cli.ok(["record", "save", "Movies/b", "--type", "Movie", "title=B"])
        try cli.ok(["record", "delete", "Movies/a"])
        let next = try cli.ok(["changes", "Movies", "--since", token, "--json"]).json
        let records = next["records"] as? [[String: Any]] ?? []
        #expect(records.compactMap { $0["recordName"] as? String }.sorted() == ["a", "b"])
        #expect(records.first { $0["recordName"] as? String == "a" }?["deleted"] as? Bool == true)
        #expect(try cli.run(["changes", "Movies", "--since", "garbage!"]).status == 65)
        #expect(try cli.ok(["changes", "Movies", "--since", token]).stdout.contains("changed Movies/b"))
    }

    @Test func conflictsSchemaAndVector() throws {
        try setUpStore()
        try cli.ok(["record", "save", "Movies/m", "--type", "Movie", "rating:int=4"])
        let schema = try cli.ok(["schema", "show", "--json"]).json
        #expect(schema["environment"] as? String == "development")
        #expect(try cli.ok(["schema", "show"]).stdout.contains("rating: INT64"))
        let wrongType = try cli.run(["record", "save", "Movies/n", "--type", "Movie", "rating:string=four"])
        #expect(wrongType.status == 65 && wrongType.stderr.contains("INT64"))
        try cli.ok(["schema", "deploy"])
        #expect(try cli.run(["record", "save", "Movies/n", "--type", "Movie", "brandNew=1"]).status == 65)
        #expect(try cli.ok(["schema", "show", "--json"]).json["environment"] as? String == "production")
        #expect(try cli.ok(["conflicts", "Movies/m"]).stdout.contains("no conflicts"))
        let vector = try cli.ok(["vector", "--json"]).json["vectors"] as? [[String: Any]] ?? []
        #expect(vector.contains { $0["zoneName"] as? String == "Movies" })
    }

    @Test func schemaIndexAndQueryExplain() throws {
        try setUpStore()
        let lines = (0..<300).map { i in
            #"{"recordName":"m\#(i)","recordType":"Movie","fields":{"title":{"value":"title \#((i * 37) % 300)","type":"STRING"},"rating":{"value":\#(i % 10),"type":"INT64"},"tags":{"value":["a"],"type":"STRING_LIST"}}}"#
        }
        try cli.ok(["record", "import", "Movies", "-"], input: lines.joined(separator: "\n"))
        let query = ["query", "Movie", "--zone", "Movies", "--where", "rating >= 5", "--sort", "title", "--limit", "10"]
        let before = try cli.ok(query + ["--explain", "--json"]).json
        #expect(before["recordsRead"] as? Int == 300)
        #expect(before["suggestions"] as? [String] == ["lattice schema index Movie title --sortable", "lattice schema index Movie rating --queryable"])
        let names = { (arguments: [String]) throws -> [String] in
            (try cli.ok(arguments).json["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
        }
        let unindexed = try names(query + ["--json"])
        #expect(unindexed.count == 10)

        #expect(try cli.ok(["schema", "index", "Movie", "title", "--sortable"]).stdout.contains("indexed Movie.title: sortable"))
        let both = try cli.ok(["schema", "index", "Movie", "rating", "--json"]).json
        #expect(both["indexes"] as? [String] == ["QUERYABLE", "SORTABLE"])
        #expect(try cli.ok(["schema", "index", "Movie", "rating", "--queryable"]).stdout.contains("is already indexed: queryable, sortable"))
        #expect(try cli.ok(["schema", "show"]).stdout.contains("rating: INT64  [queryable, sortable]"))
        let shown = try cli.ok(["schema", "show", "--json"]).json["recordTypes"] as? [[String: Any]] ?? []
        let fields = shown.first?["fields"] as? [[String: Any]] ?? []
        #expect(fields.first { $0["fieldName"] as? String == "title" }?["indexes"] as? [String] == ["SORTABLE"])

        let after = try cli.ok(query + ["--explain", "--json"]).json
        #expect((after["suggestions"] as? [String])?.isEmpty == true)
        #expect((after["recordsRead"] as? Int ?? 0) <= 150) // the 150 matches at most, never all 300
        #expect(try names(query + ["--json"]) == unindexed, "an index changes how much is read, never the page")
        let explained = try cli.ok(query + ["--explain"]).stdout
        #expect(explained.contains("plan: ") && explained.contains("to return 10"))

        for (arguments, message, status) in [
            (["Movie", "tags", "--sortable"], "can be sortable", Int32(65)), (["Movie", "rating", "--searchable"], "only STRING fields can be searchable", 65),
            (["Movie", "nope"], "has no field nope", 66), (["Nope", "title"], "no record type Nope", 66), (["Movie", "bad-name"], "field name", 65),
        ] {
            let refused = try cli.run(["schema", "index"] + arguments)
            #expect(refused.status == status && refused.stderr.contains(message), "\(arguments): \(refused.status) \(refused.stderr)")
        }
        // A list field takes the kinds a list can have: queryable, for LIST_CONTAINS and LIST_MEMBER_BEGINS_WITH.
        #expect(try cli.ok(["schema", "index", "Movie", "tags"]).stdout.contains("indexed Movie.tags: queryable"))
        let none = try cli.ok(["query", "Movie", "--zone", "Movies", "--where", #"tags CONTAINS "zzz""#, "--explain", "--json"]).json
        #expect(none["recordsRead"] as? Int == 0)

        // Removal is this device's: the same page, read without the index, and the field stays unindexed here.
        let removed = try cli.ok(["schema", "index", "Movie", "rating", "--remove", "--json"]).json
        #expect(removed["removed"] as? [String] == ["QUERYABLE", "SORTABLE"] && (removed["indexes"] as? [String])?.isEmpty == true)
        #expect(try names(query + ["--json"]) == unindexed)
        #expect((try cli.ok(query + ["--explain", "--json"]).json["suggestions"] as? [String]) == ["lattice schema index Movie rating --queryable"])
        #expect(try cli.ok(["schema", "show"]).stdout.contains("rating: INT64  (removed here: queryable, sortable)"), "an INT64 cannot be searchable: not kept off")
        #expect(try cli.ok(["schema", "index", "Movie", "rating", "--remove"]).stdout.contains("had no such index; queryable, sortable stay off on this device"))
        #expect(try cli.ok(["schema", "index", "Movie", "rating", "--queryable"]).stdout.contains("indexed Movie.rating: queryable"))
        #expect(try cli.run(["schema", "index", "Movie", "nope", "--remove"]).status == 66)

        // A filter of a thousand conditions on indexed fields is checked record by record, not refused by SQLite.
        let chain = (0..<1_000).map { "rating == \($0 % 10)" }.joined(separator: " OR ")
        #expect(try names(["query", "Movie", "--zone", "Movies", "--where", chain, "--limit", "5", "--json"]).count == 5)
        // A sortBy entry with a value that is not a boolean is refused, not read as ascending.
        let badSort = try cli.run(["query", "Movie", "--zone", "Movies", "--sort", #"[{"fieldName":"rating","ascending":"no"}]"#])
        #expect(badSort.status == 64 && badSort.stderr.contains("true or false"), "\(badSort.status) \(badSort.stderr)")
        #expect(try names(["query", "Movie", "--zone", "Movies", "--sort", #"[{"fieldName":"title","ascending":false}]"#, "--limit", "3", "--json"]).count == 3)
        // Numbers as the CLI prints them read back, exponent signs included.
        for number in ["-1e-300", "1e+3", ".5", "2.5E-1"] {
            try cli.ok(["query", "Movie", "--zone", "Movies", "--where", "rating >= \(number)"])
        }
    }

    /// What a review of the list and location indexes found around them.
    @Test func listsLocationsReferencesAndHintsAreReadStrictly() throws {
        try setUpStore()
        // An empty list carries no element type, so it does not fix the field as a list of strings.
        try cli.ok(["record", "save", "Movies/e", "--type", "Movie", "scores:int-list="])
        try cli.ok(["record", "save", "Movies/f", "--type", "Movie", "scores:int-list=1,2"])
        #expect(try cli.ok(["schema", "show"]).stdout.contains("scores: INT64_LIST"))
        // A reference names a record of its own zone: another zone, or a path of three parts, is refused.
        try cli.ok(["record", "save", "Movies/r", "--type", "Movie", "ref:ref=Movies/f", "ref2:ref=f"])
        for bad in ["Other/f", "a/b/c", "Movies/", "/f"] {
            let refused = try cli.run(["record", "save", "Movies/s", "--type", "Movie", "ref:ref=\(bad)"])
            #expect(refused.status == 65, "\(bad): \(refused.status) \(refused.stderr)")
        }
        #expect(try cli.run(["record", "get", "Movies/s"]).status == 66, "nothing of a refused save is written")
        // A date closes a list; a NEAR center off the Earth, or a distance that is not a number of meters, is a usage error.
        try cli.ok(["record", "save", "Movies/d", "--type", "Movie", "days:date-list=2021-06-01T12:00:00Z", "place:location=1,2"])
        let dated = try cli.ok(["query", "Movie", "--zone", "Movies", "--where", "days CONTAINSANY [@2021-06-01T12:00:00Z,@2020-01-01T00:00:00Z]", "--json"]).json
        #expect((dated["records"] as? [[String: Any]])?.count == 1)
        for near in ["place NEAR (91, 0) WITHIN 100", "place NEAR (0, 540) WITHIN 100", "place NEAR (1e400, 2) WITHIN 5", "place NEAR (1, 2) WITHIN 1e400", "place NEAR (1) WITHIN 5"] {
            let refused = try cli.run(["query", "Movie", "--zone", "Movies", "--where", near])
            #expect(refused.status == 64, "\(near): \(refused.status) \(refused.stderr)")
        }
        // Hints name only an index the field can have and that would serve the condition.
        let hints = { (where: String) throws -> [String] in
            try cli.ok(["query", "Movie", "--zone", "Movies", "--where", `where`, "--explain", "--json"]).json["suggestions"] as? [String] ?? []
        }
        #expect(try hints(#"nope CONTAINS 3"#).isEmpty)
        #expect(try hints(#"place NEAR (1, 2) WITHIN 10"#) == ["lattice schema index Movie place --queryable"])
        #expect(try hints(#"scores CONTAINS 2"#) == ["lattice schema index Movie scores --queryable"])
        #expect(try hints(#"place == 3"#).isEmpty)
        #expect(try cli.ok(["query", "Movie", "--zone", "Movies", "--sort", "scores", "--explain", "--json"]).json["suggestions"] as? [String] == [])
        // Removal keeps off only the kinds the field could have, so adding them back clears it.
        try cli.ok(["schema", "index", "Movie", "scores"])
        let removed = try cli.ok(["schema", "index", "Movie", "scores", "--remove", "--json"]).json
        #expect(removed["removed"] as? [String] == ["QUERYABLE"] && removed["removedHere"] as? [String] == ["QUERYABLE"])
        try cli.ok(["schema", "index", "Movie", "scores"])
        #expect(!(try cli.ok(["schema", "show"]).stdout.contains("removed here")))
    }

    @Test func watchStreamsCommitsOfAnotherProcess() throws {
        try setUpStore()
        // A commit of several records before the watch starts must not trouble it.
        try cli.ok(["record", "import", "Movies", "-"], input: """
            {"recordName":"p1","recordType":"Movie","fields":{"title":{"value":"P1","type":"STRING"}}}
            {"recordName":"p2","recordType":"Movie","fields":{"title":{"value":"P2","type":"STRING"}}}
            """)
        let output = cli.path("watch.jsonl")
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["watch", "Movies", "--store", cli.path("a")]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        var text = ""
        // Keep saving until the watcher reports it (it may take a moment to start).
        for attempt in 0..<50 {
            try cli.ok(["record", "save", "Movies/w\(attempt)", "--type", "Movie", "title=W"])
            usleep(100_000)
            text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if text.contains("\"recordName\":\"w") { break }
        }
        #expect(text.contains("\"reason\":\"recordCreated\""))
        let line = text.split(separator: "\n").first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(line?["recordType"] as? String == "Movie")
    }
}
