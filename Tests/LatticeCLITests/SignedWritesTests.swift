import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore
import Testing

/// Signed writes through real `lattice serve` and `lattice sync` processes:
/// a trusted device whose store was tampered with relays forgeries that the
/// honest node refuses and reports, and a store restored from an older copy
/// takes its later writes back from its peers.
@Suite(.serialized) struct SignedWritesTests {
    let cli = CLI()
    let movies = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))

    /// Stores that all trust each other, each with zone Movies; returns their device IDs.
    func makeStores(_ names: [String]) throws -> [String: String] {
        var ids: [String: String] = [:]
        for name in names {
            try cli.ok(["init"], store: name)
            ids[name] = try cli.ok(["id"], store: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Movies"], store: name)
        }
        for a in names { for b in names where a != b { try cli.ok(["trust", ids[b]!, "--name", b], store: a) } }
        return ids
    }

    /// `from` syncs once with a node serving `to`.
    @discardableResult
    func syncOnce(_ from: String, with to: String) throws -> CLI.Result {
        let node = try NodeProcess(cli: cli, store: to)
        defer { node.stop() }
        return try cli.run(["sync", "--peer", "127.0.0.1:\(node.port)", "--once", "--timeout", "60"], store: from)
    }

    func title(_ store: String, _ name: String) throws -> String? {
        let result = try cli.run(["record", "get", "Movies/\(name)", "--json"], store: store)
        guard result.status == 0 else { return nil }
        let record = (result.json["records"] as? [[String: Any]])?.first
        return ((record?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String
    }

    enum Tampering: String, CaseIterable, CustomTestStringConvertible {
        case valueOfAnotherDevicesWrite, writeStampedAsAnotherDevice, claimBeyondAnotherDevicesHead
        var testDescription: String { rawValue }
    }

    /// b holds a's signed m1; its store is then changed behind its back (as a
    /// faulty or hostile device would), and its node relays the result to c.
    @Test(arguments: Tampering.allCases) func aTamperedRelayIsRefusedAndReportedAndHonestDataStillFlows(_ tampering: Tampering) throws {
        defer { cli.cleanup() }
        let ids = try makeStores(["a", "b", "c"])
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Up"], store: "a")
        #expect(try syncOnce("a", with: "b").status == 0)
        let b = try RecordStore(directory: URL(fileURLWithPath: cli.path("b")))
        let a = try RecordStore(directory: URL(fileURLWithPath: cli.path("a")))
        try b.write { transaction in
            let m1 = try transaction.record("m1", in: movies)!
            switch tampering {
            case .valueOfAnotherDevicesWrite:
                var forged = m1
                forged.fields = forged.fields.map { field in
                    var field = field
                    field.value = .string("Evil")
                    return field
                }
                try transaction.store(forged, previous: m1, in: movies)
            case .writeStampedAsAnotherDevice:
                var forged = m1
                let stamp = Stamp(time: HLCTimestamp(rawValue: m1.lastModified.time.rawValue + 1), replica: a.replica)
                forged.fields = forged.fields.map { FieldRegister(name: $0.name, value: .string("Evil"), stamp: stamp) }
                forged.vector.advance(a.replica, to: stamp.time)
                try transaction.store(forged, previous: m1, in: movies)
            case .claimBeyondAnotherDevicesHead:
                var sync = try transaction.syncState(of: movies)!
                sync.vector.advance(a.replica, to: HLCTimestamp(rawValue: sync.vector[a.replica].rawValue + (1 << 30)))
                sync.knowledge.join(sync.vector)
                try transaction.setSyncState(sync, of: movies)
            }
        }
        let relay = try syncOnce("b", with: "c")
        #expect(relay.status != 0, "the relay's sync succeeded: \(relay.stdout) \(relay.stderr)")
        #expect(try title("c", "m1") == nil)
        let peers = try cli.ok(["peers", "--json"], store: "c").json["peers"] as? [[String: Any]] ?? []
        let seen = peers.first { $0["deviceID"] as? String == ids["b"] }
        let refused = seen?["refusedWrites"] as? [String: Any]
        #expect((refused?["count"] as? Int ?? 0) >= 1, "c's peers: \(peers)")
        #expect((refused?["last"] as? String)?.isEmpty == false)
        let doctor = try cli.run(["doctor"], store: "c")
        #expect(doctor.stdout.contains("did not sign") || doctor.stderr.contains("did not sign"), "doctor: \(doctor.stdout) \(doctor.stderr)")
        // a and c still sync: c gets a's m1 as a wrote it.
        #expect(try syncOnce("a", with: "c").status == 0)
        #expect(try title("c", "m1") == "Up")
        try cli.ok(["record", "save", "Movies/m2", "--type", "Movie", "title=Cars"], store: "c")
        #expect(try syncOnce("c", with: "a").status == 0)
        #expect(try cli.snapshot("a") == (try cli.snapshot("c")))
    }

    /// A store restored from a copy made before some of its writes gets them
    /// back from a peer, and what it writes after the restore reaches the
    /// peer and is accepted there (no stamp is signed twice).
    @Test func aStoreRestoredFromAnOlderCopyTakesItsLaterWritesBack() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b"])
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Up"], store: "a")
        #expect(try syncOnce("a", with: "b").status == 0)
        let backup = cli.path("a-backup")
        try FileManager.default.copyItem(atPath: cli.path("a"), toPath: backup)
        try cli.ok(["record", "save", "Movies/m2", "--type", "Movie", "title=Cars"], store: "a")
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Up!"], store: "a")
        #expect(try syncOnce("a", with: "b").status == 0)
        try cli.ok(["record", "save", "Movies/m3", "--type", "Movie", "title=Coco"], store: "b")

        try FileManager.default.removeItem(atPath: cli.path("a"))
        try FileManager.default.moveItem(atPath: backup, toPath: cli.path("a"))
        #expect(try title("a", "m2") == nil)
        try cli.ok(["record", "save", "Movies/m4", "--type", "Movie", "title=Soul"], store: "a")
        // The first session finds that b holds writes of a's that a lost and
        // sends what a wrote since the restore; the next one brings them back.
        for _ in 0..<2 {
            let back = try syncOnce("a", with: "b")
            #expect(back.status == 0, "\(back.stdout) \(back.stderr)")
        }
        #expect(try title("a", "m2") == "Cars")
        #expect(try title("a", "m1") == "Up!")
        #expect(try title("a", "m3") == "Coco")
        #expect(try title("b", "m4") == "Soul")
        #expect(try cli.snapshot("a") == (try cli.snapshot("b")))
        let peers = try cli.ok(["peers", "--json"], store: "b").json["peers"] as? [[String: Any]] ?? []
        #expect(peers.allSatisfy { ($0["refusedWrites"] as? [String: Any])?["count"] as? Int == 0 }, "\(peers)")
    }
}
