import Foundation
import LatticeTestSupport
import Testing

/// The public database between `lattice serve` processes of different
/// accounts on loopback, through the CLI alone: it spreads from device to
/// device with no trust (A — U — V, A and V never meeting), the private
/// database stays with its account, only a record's creator changes it, and
/// a node that keeps the public database to its account shares nothing.
@Suite(.serialized) struct PublicDatabaseTests {
    let cli = CLI()

    func publicTitle(_ store: String, _ name: String) throws -> String? {
        let result = try cli.run(["record", "get", name, "--database", "public", "--json"], store: store)
        guard result.status == 0 else { return nil }
        let record = (result.json["records"] as? [[String: Any]])?.first
        return ((record?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String
    }

    @Test func thePublicDatabaseSpreadsAcrossAccountsAndThePrivateOneDoesNot() throws {
        defer { cli.cleanup() }
        for store in ["a", "u", "v"] { try cli.ok(["init"], store: store) }
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/secret", "--type", "Movie", "title=private"], store: "a")
        try cli.ok(["record", "save", "lamp", "--type", "Item", "title=Lamp", "--database", "public"], store: "a")
        try cli.ok(["--database", "public", "record", "save", "chair", "--type", "Item", "title=Chair"], store: "v")

        let a = try NodeProcess(cli: cli, store: "a")
        defer { _ = a.stop() }
        let u = try NodeProcess(cli: cli, store: "u", peers: [a.port])
        defer { _ = u.stop() }
        let v = try NodeProcess(cli: cli, store: "v", peers: [u.port])
        defer { _ = v.stop() }

        // A's public record reaches V through U, and V's reaches A: no device trusts another.
        #expect(try eventuallyBlocking(30) { try publicTitle("v", "lamp") == "Lamp" && publicTitle("a", "chair") == "Chair" })
        #expect(try publicTitle("u", "chair") == "Chair")
        // The private database went nowhere.
        for store in ["u", "v"] {
            #expect(try cli.run(["record", "get", "Movies/secret"], store: store).status != 0)
            let zones = try cli.ok(["zone", "list", "--json"], store: store).json["zones"] as? [[String: Any]] ?? []
            #expect(!zones.contains { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "Movies" }, "\(zones)")
        }
        // Only the creator changes a record: U's edit is refused at once, A's spreads.
        let refused = try cli.run(["record", "save", "lamp", "--type", "Item", "title=Mine", "--database", "public"], store: "u")
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("only its creator"), "\(refused.stderr)")
        #expect(try cli.run(["record", "delete", "lamp", "--database", "public"], store: "v").status == 77)
        try cli.ok(["record", "save", "lamp", "--type", "Item", "title=Desk lamp", "--database", "public"], store: "a")
        #expect(try eventuallyBlocking(30) { try publicTitle("v", "lamp") == "Desk lamp" })
        try cli.ok(["record", "delete", "chair", "--database", "public"], store: "v")
        #expect(try eventuallyBlocking(30) { try publicTitle("a", "chair") == nil })

        // `peers` shows what each stranger may sync.
        let listing = try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []
        let ofU = listing.first { $0["connected"] as? Bool == true }
        #expect(ofU?["access"] as? String == "public only", "\(listing)")
        // The public database has one zone, and the shared one none of its own.
        #expect(try cli.run(["zone", "create", "Catalogue", "--database", "public"], store: "a").status == 65)
        #expect(try cli.run(["zone", "create", "Family", "--database", "shared"], store: "a").status == 65)
    }

    /// A device whose wall clock is set years back (faketime) creates a name
    /// another account's device created: it gets a record of its own, and
    /// the first creator's stays whole everywhere. Each device reads its
    /// own, or the one it held first, by the plain name; a query shows both
    /// with their creators (issue 38, finding 2).
    @Test(.runsUnderFaketime)
    func aCreationStampedYearsEarlierTakesNoRecordOver() throws {
        defer { cli.cleanup() }
        for store in ["a", "c", "m"] { try cli.ok(["init"], store: store) }
        try cli.ok(["record", "save", "lamp", "--type", "Item", "title=Lamp", "--database", "public"], store: "a")
        let a = try NodeProcess(cli: cli, store: "a")
        defer { _ = a.stop() }
        let c = try NodeProcess(cli: cli, store: "c", peers: [a.port])
        defer { _ = c.stop() }
        #expect(try eventuallyBlocking(30) { try publicTitle("c", "lamp") == "Lamp" })
        let past = try FakeTime.wrapper("2020-01-01 00:00:00")
        let created = try cli.run(["record", "save", "lamp", "--type", "Item", "title=Mine", "--database", "public"], store: "m", wrapper: past)
        #expect(created.status == 0, "\(created.stderr)")
        let m = try NodeProcess(cli: cli, store: "m", peers: [a.port, c.port])
        defer { _ = m.stop() }
        func creators(_ store: String) throws -> [String: String] {
            let records = try cli.ok(["query", "Item", "--database", "public", "--json"], store: store).json["records"] as? [[String: Any]] ?? []
            var titles: [String: String] = [:]
            for record in records where (record["recordName"] as? String).map({ $0 == "lamp" || $0.hasPrefix("lamp/") }) == true {
                let creator = (record["created"] as? [String: Any])?["deviceID"] as? String ?? "?"
                titles[creator] = ((record["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String
            }
            return titles
        }
        #expect(try eventuallyBlocking(60) { try ["a", "c", "m"].allSatisfy { try creators($0).count == 2 } })
        let everywhere = try creators("a")
        #expect(Set(everywhere.values) == ["Lamp", "Mine"], "\(everywhere)")
        #expect(try creators("c") == everywhere && creators("m") == everywhere)
        #expect(try publicTitle("a", "lamp") == "Lamp")
        #expect(try publicTitle("c", "lamp") == "Lamp")
        #expect(try publicTitle("m", "lamp") == "Mine")
        // Each device knows the record its plain name reads by that name, the other by its stored name (creator
        // and all), in queries and change feeds alike, so an app's cache never mixes the two.
        for (store, title) in [("a", "Lamp"), ("c", "Lamp"), ("m", "Mine")] {
            let records = try cli.ok(["query", "Item", "--database", "public", "--json"], store: store).json["records"] as? [[String: Any]] ?? []
            let plain = records.first { $0["recordName"] as? String == "lamp" }
            #expect(((plain?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String == title, "\(store): \(records)")
            #expect(records.filter { ($0["recordName"] as? String)?.hasPrefix("lamp/") == true }.count == 1, "\(store): \(records)")
            let changed = try cli.ok(["changes", "_defaultZone", "--database", "public", "--json"], store: store).json["records"] as? [[String: Any]] ?? []
            let names = changed.compactMap { $0["recordName"] as? String }.filter { $0 == "lamp" || $0.hasPrefix("lamp/") }
            #expect(names.count == 2 && names.contains("lamp"), "\(store): \(names)")
        }
        // Either is read by naming its creator.
        for (creator, title) in everywhere {
            let named = try cli.ok(["record", "get", "lamp", "--database", "public", "--creator", creator, "--json"], store: "c").json["records"] as? [[String: Any]]
            #expect(((named?.first?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String == title)
        }
        #expect(try cli.run(["record", "get", "lamp", "--database", "public", "--creator", "nobody"], store: "c").status == 64)
        // A query by the plain name finds both.
        let named = try cli.ok(["query", "Item", "--database", "public", "--where", "recordName == \"lamp\"", "--json"], store: "c").json["records"] as? [Any]
        #expect(named?.count == 2)
        // A's record is still A's alone: its edit spreads, M's edit of it is refused at once.
        try cli.ok(["record", "save", "lamp", "--type", "Item", "title=Desk lamp", "--database", "public"], store: "a")
        #expect(try eventuallyBlocking(30) { try publicTitle("c", "lamp") == "Desk lamp" })
        #expect(try publicTitle("m", "lamp") == "Mine")
    }

    /// Stored public names carry their creator, so `a-b/…` sorts before
    /// `a/…` where the plain names sort the other way: pages of a query in
    /// record-name order still hold every record once, in the plain names' order.
    @Test func pagesOfAPublicQueryInNameOrderHoldEveryRecordOnce() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"])
        let names = ["a", "a-b", "a.c", "b", "a0"]
        for name in names { try cli.ok(["record", "save", name, "--type", "Item", "title=\(name)", "--database", "public"]) }
        for sort in [[], ["--sort", "recordName"], ["--sort", "-recordName"]] {
            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try cli.ok(["query", "Item", "--database", "public", "--limit", "1", "--json"] + sort + (cursor.map { ["--cursor", $0] } ?? [])).json
                seen += (page["records"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String }
                cursor = page["continuationMarker"] as? String
            } while cursor != nil && seen.count <= names.count
            let expected = sort.last == "-recordName" ? names.sorted().reversed() : names.sorted()
            #expect(seen == Array(expected), "\(sort): \(seen)")
        }
    }

    @Test func aNodeThatKeepsThePublicDatabaseToItsAccountSharesNothing() throws {
        defer { cli.cleanup() }
        for store in ["a", "s"] { try cli.ok(["init"], store: store) }
        try cli.ok(["record", "save", "lamp", "--type", "Item", "title=Lamp", "--database", "public"], store: "a")
        let a = try NodeProcess(cli: cli, store: "a", extra: ["--public-from", "trusted"])
        defer { _ = a.stop() }
        let result = try cli.run(["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--timeout", "20", "--database", "public"], store: "s")
        #expect(result.status == 77, "\(result.stdout) \(result.stderr)")
        #expect(try publicTitle("s", "lamp") == nil)
        #expect(a.count("refused") == 1)
        // `sync --database public` against an open node takes the public database.
        _ = a.stop()
        let open = try NodeProcess(cli: cli, store: "a")
        defer { _ = open.stop() }
        let synced = try cli.run(["sync", "--peer", "127.0.0.1:\(open.port)", "--once", "--timeout", "20", "--database", "public"], store: "s")
        #expect(synced.status == 0, "\(synced.stdout) \(synced.stderr)")
        #expect(try publicTitle("s", "lamp") == "Lamp")
    }
}
