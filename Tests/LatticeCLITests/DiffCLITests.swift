import Foundation
import GRDB
import LatticeStore
import LatticeTestSupport
import Testing

/// `lattice diff` against a real `lattice serve`: it finds exactly the
/// records made to differ behind the protocol's back, and changes nothing.
@Suite(.serialized) struct DiffCLITests {
    let cli = CLI()

    func makeStores() throws -> [String: String] {
        var ids: [String: String] = [:]
        for name in ["a", "b", "c"] {
            try cli.ok(["init"], store: name)
            ids[name] = try cli.ok(["id"], store: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Movies"], store: name)
        }
        try cli.ok(["trust", ids["b"]!], store: "a")
        try cli.ok(["trust", ids["a"]!], store: "b")
        try cli.ok(["trust", ids["a"]!], store: "c") // a does not trust c back
        return ids
    }

    func differences(_ result: CLI.Result) -> Set<String> {
        Set((result.json["differences"] as? [[String: Any]] ?? []).map { "\($0["recordName"] as? String ?? "-"): \($0["here"] as? String ?? "?")/\($0["there"] as? String ?? "?")" })
    }

    @Test func diffFindsExactlyTheRecordsEditedBehindTheProtocolsBack() throws {
        defer { cli.cleanup() }
        let ids = try makeStores()
        for index in 0..<30 { try cli.ok(["record", "save", "Movies/m\(index)", "--type", "Movie", "title=T\(index)"], store: "a") }
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        let peer = "127.0.0.1:\(a.port)"
        try cli.ok(["sync", "--once", "--peer", peer], store: "b")

        let same = try cli.run(["diff", "--peer", peer], store: "b")
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.stdout == "in sync\n")
        #expect(same.stderr.contains("1 round trip"))

        // Behind the protocol's back: a row of b deleted, another's state overwritten; a new record on a only.
        let queue = try DatabaseQueue(path: URL(fileURLWithPath: cli.path("b")).appendingPathComponent(RecordStore.databaseFileName).path)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM records WHERE name = 'm7'")
            try db.execute(sql: "UPDATE records SET state = (SELECT state FROM records WHERE name = 'm9') WHERE name = 'm8'")
        }
        try queue.close()
        let snapshotA = try cli.snapshot("a")
        let snapshotB = try cli.snapshot("b")
        let found = try cli.run(["diff", "--peer", peer, "--json"], store: "b")
        #expect(found.status == 1, "\(found.stderr)")
        #expect(differences(found) == ["m7: missing/present", "m8: live/another state"])
        #expect(found.json["inSync"] as? Bool == false)
        #expect((found.json["roundTrips"] as? Int ?? 99) <= 3)
        let text = try cli.run(["diff", "--peer", peer, "Movies"], store: "b")
        #expect(text.status == 1)
        #expect(text.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) } == ["Movies/m7", "Movies/m8"])
        // Comparing moved nothing, either way.
        #expect(try cli.snapshot("a") == snapshotA)
        #expect(try cli.snapshot("b") == snapshotB)

        // A device that does not trust this one, and one that cannot be reached.
        let refused = try cli.run(["diff", "--peer", peer], store: "c")
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("lattice trust \(ids["c"]!)"))
        #expect(try cli.run(["diff", "--peer", "127.0.0.1:1"], store: "b").status == 69)
        #expect(try cli.run(["diff", "--peer", peer, "NoSuchZone"], store: "b").status == 66)
    }

    func deleteRow(_ name: String, in store: String) throws {
        let queue = try DatabaseQueue(path: URL(fileURLWithPath: cli.path(store)).appendingPathComponent(RecordStore.databaseFileName).path)
        try queue.write { try $0.execute(sql: "DELETE FROM records WHERE name = ?", arguments: [name]) }
        try queue.close()
    }

    @Test func nodesCompareDigestsAfterASyncAndSendAgainWhatTheOtherLost() throws {
        defer { cli.cleanup() }
        let ids = try makeStores()
        for index in 0..<20 { try cli.ok(["record", "save", "Movies/m\(index)", "--type", "Movie", "title=T\(index)"], store: "a") }
        let a = try NodeProcess(cli: cli, store: "a", extra: ["--verify-every", "0.3"])
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port], extra: ["--verify-every", "0.3"])
        defer { for node in [a, b] { node.stop() } }
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/m19"], store: "b").status == 0 })
        func verified(_ store: String) throws -> [[String: Any]] {
            let peers = try cli.ok(["peers", "--json"], store: store).json["peers"] as? [[String: Any]] ?? []
            return peers.flatMap { $0["verified"] as? [[String: Any]] ?? [] }
        }
        #expect(try eventuallyBlocking { try verified("b").contains { $0["zone"] as? String == "private/Movies" && $0["differences"] as? Int == 0 && $0["inSyncAt"] is Int } })
        #expect(try cli.ok(["peers"], store: "b").stdout.contains("verified in sync at"))
        // Through the running node, by device ID; a device it is not connected to, and a store with no node.
        let through = try cli.run(["diff", ids["a"]!, "--json"], store: "b")
        #expect(through.status == 0, "\(through.stdout) \(through.stderr)")
        #expect(through.json["inSync"] as? Bool == true)
        let unconnected = try cli.run(["diff", ids["c"]!], store: "b")
        #expect(unconnected.status == 69 && unconnected.stderr.contains("not connected"), "\(unconnected.stderr)")
        let noNode = try cli.run(["diff", ids["a"]!], store: "c")
        #expect(noNode.status == 69 && noNode.stderr.contains("no node runs on this store"), "\(noNode.stderr)")

        // Behind the protocol's back: each store loses a row the other holds; both still claim every write.
        try deleteRow("m3", in: "b")
        try deleteRow("m5", in: "a")
        #expect(try cli.run(["record", "get", "Movies/m3"], store: "b").status == 66)
        // The next sync ends with a comparison: each side finds what the other lacks and sends it again.
        try cli.ok(["record", "save", "Movies/after", "--type", "Movie", "title=After"], store: "a")
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/m3"], store: "b").status == 0 })
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/m5"], store: "a").status == 0 })
        #expect(try eventuallyBlocking { try cli.run(["diff", "--peer", "127.0.0.1:\(a.port)"], store: "b").status == 0 })
        #expect(try cli.snapshot("a") == (try cli.snapshot("b")))
        #expect(a.standardError.contains("digests differ after a sync") || b.standardError.contains("digests differ after a sync"))
        let mismatches = try ["a", "b"].compactMap { store in
            (try cli.ok(["peers", "--json"], store: store).json["peers"] as? [[String: Any]] ?? []).compactMap { $0["lastMismatch"] as? String }.first
        }
        #expect(!mismatches.isEmpty, "the mismatch shows in peers")
    }
}
