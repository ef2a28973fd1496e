import Foundation
import LatticeTestSupport
import Testing

/// `lattice history`, `record get --at`, `record history` and `record
/// restore` through the CLI, and their refusals of bad input.
@Suite(.serialized) struct HistoryCLITests {
    let cli = CLI()

    @Test func historyTimeTravelAndRestoreThroughTheCLI() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=4"], store: "a")
        Thread.sleep(forTimeInterval: 0.05)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let between = formatter.string(from: Date())
        Thread.sleep(forTimeInterval: 1.05)
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "rating:int=1", "note=oops"], store: "a")

        let history = try cli.ok(["history", "Movies", "--json"], store: "a").json
        let transactions = history["transactions"] as? [[String: Any]] ?? []
        #expect(transactions.count == 2)
        let id = try cli.ok(["id"], store: "a").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(transactions.allSatisfy { $0["author"] as? String == id })
        let first = try #require(transactions.first?["token"] as? String)
        #expect(history["token"] as? String == transactions.last?["token"] as? String)
        let later = try cli.ok(["history", "--since", first, "--json"], store: "a").json["transactions"] as? [[String: Any]] ?? []
        #expect(later.count == 1)
        let fields = ((later.first?["changes"] as? [[String: Any]])?.first?["fields"] as? [[String: Any]]) ?? []
        #expect(Set(fields.compactMap { $0["field"] as? String }) == ["rating", "note"])
        #expect(try cli.ok(["history", "Movies/up"], store: "a").stdout.contains("update Movies/up (Movie): note, rating"))

        // As it was, by token and by time; its versions; then restored, as a new write.
        let byToken = try cli.ok(["record", "get", "Movies/up", "--at", first, "--json"], store: "a").stdout
        let byTime = try cli.ok(["record", "get", "Movies/up", "--at", between, "--json"], store: "a").stdout
        #expect(byToken.contains("\"Up\"") && !byToken.contains("oops") && byToken.contains("4"))
        #expect(byTime == byToken)
        let versions = try cli.ok(["record", "history", "Movies/up"], store: "a").stdout
        #expect(versions.contains("rating: 4 -> 1") && versions.contains("note: - -> \"oops\""), "\(versions)")
        try cli.ok(["record", "restore", "Movies/up", "--to", first], store: "a")
        let now = try cli.ok(["record", "get", "Movies/up", "--json"], store: "a").stdout
        #expect(!now.contains("oops") && now.contains("\"Up\""))
        #expect((try cli.ok(["history", "Movies", "--json"], store: "a").json["transactions"] as? [Any])?.count == 3, "the restore is a transaction of its own")

        // Retention and size in status.
        let settings = try cli.ok(["history", "--retain-days", "90", "--json"], store: "a").json
        #expect(settings["retainDays"] as? Int == 90 && settings["kept"] as? Bool == true && (settings["entries"] as? Int ?? 0) == 3)
        let status = try cli.ok(["status", "--json"], store: "a").json["history"] as? [String: Any]
        #expect(status?["retainDays"] as? Int == 90 && (status?["bytes"] as? Int ?? 0) > 0)
        #expect(try cli.ok(["status"], store: "a").stdout.contains("history    kept 90 days: 3 entries"))
    }

    @Test func badHistoryArgumentsAreRefusedAndChangeNothing() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up"], store: "a")
        let before = try cli.ok(["history", "--json"], store: "a").stdout
        for arguments in [["history", "--since", "yesterday-ish"], ["history", "--retain-days", "0"], ["history", "--on", "--off"],
                          ["history", "--limit", "0"], ["history", "--delete-through", "42"], ["record", "get", "Movies/up", "--at", "soon"],
                          ["record", "restore", "Movies/up", "--to", "h"], ["record", "get", "Movies/up", "--at", "h1", "--fetch-assets"]] {
            let result = try cli.run(arguments, store: "a")
            #expect(result.status == 64, "\(arguments): \(result.status) \(result.stderr)")
        }
        let unknownToken = try cli.run(["record", "get", "Movies/up", "--at", "h999"], store: "a")
        #expect(unknownToken.status == 75 && unknownToken.stderr.contains("history unavailable"), "\(unknownToken.stderr)")
        let unknownZone = try cli.run(["history", "Books"], store: "a")
        #expect(unknownZone.status == 66, "\(unknownZone.stderr)")
        let unknownRecord = try cli.run(["record", "get", "Movies/nope", "--at", "h1"], store: "a")
        #expect(unknownRecord.status == 66, "\(unknownRecord.stderr)")
        #expect(try cli.ok(["history", "--json"], store: "a").stdout == before)
        // Deleting history through a token: what it says, and reads before it are refused from then on.
        let deleted = try cli.ok(["history", "--delete-through", "h1", "--json"], store: "a").json
        #expect(deleted["deleted"] as? Int == 1 && deleted["entries"] as? Int == 0)
        #expect(try cli.run(["record", "get", "Movies/up", "--at", "h1"], store: "a").status == 75)
    }
}
