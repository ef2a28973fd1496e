import Foundation
import LatticeTestSupport
import Testing

/// Selective sync with real nodes through the CLI: a device that turns a
/// zone off holds none of it, is sent none of it, does not hold its
/// tombstones back, and fetches it whole when it turns it on again.
@Suite(.serialized) struct SelectiveSyncTests {
    let cli = CLI()

    func records(_ store: String, zone: String, type: String) throws -> [String] {
        let result = try cli.run(["query", type, "--zone", zone, "--json", "--limit", "1000"], store: store)
        guard result.status == 0 else { return [] }
        return ((result.json["records"] as? [[String: Any]]) ?? []).compactMap { $0["recordName"] as? String }.sorted()
    }

    func photoTombstones(_ store: String) throws -> [String: Any]? {
        let status = try cli.ok(["status", "--json"], store: store).json
        return (status["tombstones"] as? [[String: Any]])?.first { $0["zoneName"] as? String == "Photos" }
    }

    @Test func aDeviceThatTurnsAZoneOffIsSentNoneOfItAndHoldsNothingBack() throws {
        defer { cli.cleanup() }
        var ids: [String: String] = [:]
        for name in ["a", "b", "c"] {
            try cli.ok(["init"], store: name)
            ids[name] = try cli.ok(["id"], store: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Movies"], store: name)
            try cli.ok(["zone", "create", "Photos"], store: name)
        }
        for (x, y) in [("a", "b"), ("b", "c"), ("a", "c")] {
            try cli.ok(["trust", ids[y]!, "--name", y], store: x)
            try cli.ok(["trust", ids[x]!, "--name", x], store: y)
        }
        // c turns Photos off: it keeps nothing of the zone, and reads of it say why.
        let off = try cli.ok(["zone", "sync", "Photos", "--off", "--json"], store: "c").json
        #expect(off["replicated"] as? Bool == false)
        let refused = try cli.run(["query", "Photo", "--zone", "Photos"], store: "c")
        #expect(refused.status == 66 && refused.stderr.contains("not replicated on this device"), "\(refused.status) \(refused.stderr)")
        let write = try cli.run(["record", "save", "Photos/x", "--type", "Photo", "title=X"], store: "c")
        #expect(write.status == 66 && write.stderr.contains("lattice zone sync Photos --on"), "\(write.stderr)")
        #expect(try cli.ok(["status", "--json"], store: "c").json["notReplicated"] as? [String] == ["Photos"])

        let nodeOptions = ["--collect-every", "0.2", "--tombstone-horizon", "12h"]
        let a = try NodeProcess(cli: cli, store: "a", extra: nodeOptions)
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port], extra: nodeOptions)
        let c = try NodeProcess(cli: cli, store: "c", peers: [a.port, b.port], extra: nodeOptions)
        defer { for node in [a, b, c] { node.stop() } }
        for index in 1...20 { try cli.ok(["record", "save", "Photos/p\(index)", "--type", "Photo", "title=P\(index)"], store: "a") }
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Up"], store: "a")
        try cli.ok(["record", "save", "Movies/m2", "--type", "Movie", "title=Coco"], store: "c")
        // A and B keep syncing Photos; C's other zones stay in sync.
        #expect(try eventuallyBlocking(60) { try records("b", zone: "Photos", type: "Photo").count == 20 })
        #expect(try eventuallyBlocking(60) { try ["a", "b", "c"].allSatisfy { try records($0, zone: "Movies", type: "Movie") == ["m1", "m2"] } })
        // C holds no Photos rows and received no Photos batch.
        let zones = (try cli.ok(["zone", "list", "--json"], store: "c").json["zones"] as? [[String: Any]] ?? [])
            .compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String }
        #expect(zones.contains("Movies") && !zones.contains("Photos"), "\(zones)")
        let photoEvents = c.events.filter { $0["zone"] as? String == "Photos" && $0["direction"] as? String == "receiving" }
        #expect(photoEvents.isEmpty, "c received Photos: \(photoEvents)")
        #expect(c.events.contains { $0["zone"] as? String == "Movies" && $0["direction"] as? String == "receiving" }, "c received no Movies batch either")
        // A and B know it from C's hello.
        for store in ["a", "b"] {
            #expect(try eventuallyBlocking(20) {
                let peers = try cli.ok(["peers", "--json"], store: store).json["peers"] as? [[String: Any]] ?? []
                return peers.first { $0["deviceID"] as? String == ids["c"] }?["notReplicated"] as? [String] == ["Photos"]
            }, "\(store) does not show that c does not replicate Photos")
        }
        #expect(try cli.ok(["peers"], store: "a").stdout.contains("all but Photos"))
        // A delete in Photos is collected once A and B acknowledge it: C, which holds no Photos, holds nothing back.
        try cli.ok(["record", "delete", "Photos/p1"], store: "a")
        var tombstones: [String: Any]?
        let collected = try eventuallyBlocking(60) {
            tombstones = try photoTombstones("a")
            return tombstones?["collected"] as? Int == 1
        }
        #expect(collected, "a did not collect the Photos tombstone: \(String(describing: tombstones))")
        #expect(try eventuallyBlocking(60) { try photoTombstones("b")?["collected"] as? Int == 1 })
        // C turns Photos back on: it fetches the zone like an initial sync and converges.
        try cli.ok(["zone", "sync", "Photos", "--on"], store: "c")
        #expect(try eventuallyBlocking(60) { try records("c", zone: "Photos", type: "Photo") == records("a", zone: "Photos", type: "Photo") },
                "c did not fetch Photos again")
        #expect(try records("c", zone: "Photos", type: "Photo").count == 19)
        #expect(try cli.run(["record", "get", "Photos/p1"], store: "c").status != 0, "a collected delete came back")
        #expect(try eventuallyBlocking(30) {
            let peers = try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []
            return peers.first { $0["deviceID"] as? String == ids["c"] }?["notReplicated"] as? [String] == []
        })
        for node in [a, b, c] { #expect(node.stop() == 0) }
    }

    @Test func zoneSyncRefusesBadArgumentsAndChangesNothing() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        try cli.ok(["zone", "create", "Photos"], store: "a")
        try cli.ok(["record", "save", "Photos/p", "--type", "Photo", "title=P"], store: "a")
        let both = try cli.run(["zone", "sync", "Photos", "--on", "--off"], store: "a")
        #expect(both.status == 64 && both.stderr.contains("cannot be combined"))
        let badName = try cli.run(["zone", "sync", "", "--off"], store: "a")
        #expect(badName.status == 65, "\(badName.stderr)")
        #expect(try cli.ok(["record", "get", "Photos/p"], store: "a").stdout.contains("P"))
        // Off then on: the zone is gone here until a peer sends it; on again, it can be created afresh.
        try cli.ok(["zone", "sync", "Photos", "--off"], store: "a")
        #expect(try cli.run(["record", "get", "Photos/p"], store: "a").status == 66)
        #expect(try cli.ok(["zone", "sync", "Photos"], store: "a").stdout.contains("not replicated"))
        try cli.ok(["zone", "sync", "Photos", "--on"], store: "a")
        #expect(try cli.ok(["zone", "sync", "Photos", "--json"], store: "a").json["replicated"] as? Bool == true)
    }
}
