import Foundation
import GRDB
@_spi(Tools) import LatticeCore
import LatticeStore
import LatticeTestSupport
import Testing

/// A zone shared between two accounts' `lattice serve` processes on
/// loopback, through the CLI alone: share, invitations, accept, the shared
/// database on both sides, read-only refused at once (exit 77), read-write
/// writes spreading, removal.
@Suite(.serialized) struct SharedZoneCLITests {
    let cli = CLI()

    func title(_ store: String, _ path: String, database: String = "shared") throws -> String? {
        let result = try cli.run(["record", "get", path, "--database", database, "--json"], store: store)
        guard result.status == 0 else { return nil }
        let record = (result.json["records"] as? [[String: Any]])?.first
        return ((record?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String
    }

    /// `joiner` pairs into `inviter`'s account.
    func pair(_ joiner: String, into inviter: String) throws {
        let offer = try PairCommandTests.Offer(cli: cli, store: inviter)
        #expect(try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: joiner).status == 0)
        #expect(offer.finish().status == 0)
    }

    /// A value of `lattice id --json` (`accountID`, `deviceID`).
    func id(_ store: String, _ key: String) throws -> String {
        try #require(try cli.ok(["id", "--json"], store: store).json[key] as? String)
    }

    /// `owner` creates zone Lists with one record (milk) and shares it with `account`.
    func shareLists(of owner: String, with account: String) throws {
        try cli.ok(["zone", "create", "Lists"], store: owner)
        try cli.ok(["record", "save", "Lists/milk", "--type", "Item", "title=Milk"], store: owner)
        try cli.ok(["share", "Lists", "--with", account], store: owner)
    }

    func permission(_ store: String) throws -> String? {
        let shares = try cli.ok(["share", "list", "--json"], store: store).json["shares"] as? [[String: Any]]
        return shares?.first?["permission"] as? String
    }

    @Test func twoAccountsShareAZoneThroughTheCLI() throws {
        defer { cli.cleanup() }
        for store in ["x", "y"] { try cli.ok(["init"], store: store) }
        let yAccount = try #require(try cli.ok(["id", "--json"], store: "y").json["accountID"] as? String)
        let xAccount = try #require(try cli.ok(["id", "--json"], store: "x").json["accountID"] as? String)
        try cli.ok(["zone", "create", "Lists"], store: "x")
        try cli.ok(["record", "save", "Lists/milk", "--type", "Item", "title=Milk"], store: "x")
        // Bad arguments first: this account's own ID, a zone that does not exist, the default zone.
        #expect(try cli.run(["share", "Lists", "--with", xAccount], store: "x").status == 65)
        #expect(try cli.run(["share", "Nowhere", "--with", yAccount], store: "x").status != 0)
        #expect(try cli.run(["share", ZoneName.defaultZone, "--with", yAccount], store: "x").status == 65)
        #expect(try cli.run(["share", "accept", "Lists"], store: "y").status != 0)
        let shared = try cli.ok(["share", "Lists", "--with", yAccount, "--read-only", "--json"], store: "x").json["shares"] as? [[String: Any]]
        #expect(((shared?.first?["zoneID"] as? [String: Any])?["ownerName"] as? String) == xAccount)
        // The owner keeps the zone in its private database under its own name,
        // as CloudKit's owner does (it is also `Lists:OWNER` in its shared database).
        #expect(try title("x", "Lists/milk") == "Milk")
        #expect(try cli.run(["record", "get", "Lists/milk"], store: "x").stdout.contains("Milk"))
        let ownerZones = try cli.ok(["zone", "list"], store: "x").stdout
        #expect(ownerZones.split(separator: "\n").contains { $0.hasPrefix("Lists\t") }, "\(ownerZones)")
        try cli.ok(["record", "save", "Lists/tea", "--type", "Item", "title=Tea"], store: "x")
        #expect(try title("x", "Lists/tea") == "Tea")
        #expect(try cli.ok(["query", "Item", "--zone", "Lists"], store: "x").stdout.contains("2 records"))
        #expect(try cli.ok(["changes", "Lists"], store: "x").stdout.contains("Lists/tea"))

        let x = try NodeProcess(cli: cli, store: "x")
        defer { _ = x.stop() }
        let y = try NodeProcess(cli: cli, store: "y", peers: [x.port])
        defer { _ = y.stop() }

        #expect(try eventuallyBlocking(30) { (try cli.ok(["share", "invitations", "--json"], store: "y").json["invitations"] as? [Any])?.count == 1 })
        try cli.ok(["share", "accept", "Lists"], store: "y")
        #expect(try eventuallyBlocking(30) { try title("y", "Lists/milk") == "Milk" })
        #expect(try title("y", "Lists/tea") == "Tea", "written through the owner's private database")
        #expect(try cli.run(["record", "get", "Lists/milk"], store: "y").status == 66, "a participant's private database has no such zone")
        #expect(try title("y", "Lists:\(xAccount.prefix(7))/milk") == "Milk")
        let zones = try cli.ok(["--database", "shared", "zone", "list"], store: "y").stdout
        #expect(zones.contains("Lists:\(xAccount)"), "\(zones)")
        #expect(try permission("y") == "readOnly")

        // Read-only: refused at once, with the exit code for a permission failure.
        let refused = try cli.run(["record", "save", "Lists/eggs", "--type", "Item", "title=Eggs", "--database", "shared"], store: "y")
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("read-only"), "\(refused.stderr)")

        // Read-write: Y's write reaches X.
        try cli.ok(["share", "Lists", "--with", yAccount], store: "x")
        #expect(try eventuallyBlocking(30) { try permission("y") == "readWrite" })
        try cli.ok(["record", "save", "Lists/eggs", "--type", "Item", "title=Eggs", "--database", "shared"], store: "y")
        #expect(try eventuallyBlocking(30) { try title("x", "Lists/eggs") == "Eggs" })
        #expect(try cli.ok(["record", "get", "Lists/eggs"], store: "x").stdout.contains("Eggs"))
        // A participant neither deletes the zone nor writes the share.
        #expect(try cli.run(["zone", "delete", "Lists", "--database", "shared"], store: "y").status == 77)
        #expect(try title("x", "Lists/milk") == "Milk")

        // Removed: Y learns it, its writes are refused, and X's new records stay home.
        try cli.ok(["share", "remove", "Lists", "--with", yAccount], store: "x")
        #expect(try eventuallyBlocking(30) { try permission("y") == "removed" })
        #expect(try cli.run(["record", "save", "Lists/late", "--type", "Item", "title=Late", "--database", "shared"], store: "y").status == 77)
        try cli.ok(["record", "save", "Lists/bread", "--type", "Item", "title=Bread", "--database", "shared"], store: "x")
        Thread.sleep(forTimeInterval: 1)
        #expect(try title("y", "Lists/bread") == nil)
        let listing = try cli.ok(["share", "list"], store: "x").stdout
        #expect(listing.contains(yAccount) && listing.contains("removed"), "\(listing)")
    }

    /// `sync --once --database shared`, no node on the participant's side:
    /// the first sync brings the invitation, the next the zone, and a write
    /// of the read-write participant reaches the owner's running node.
    @Test func aParticipantSyncsOnceWithTheOwnersNode() throws {
        defer { cli.cleanup() }
        for store in ["x", "y"] { try cli.ok(["init"], store: store) }
        let yAccount = try #require(try cli.ok(["id", "--json"], store: "y").json["accountID"] as? String)
        try cli.ok(["zone", "create", "Lists"], store: "x")
        try cli.ok(["record", "save", "Lists/milk", "--type", "Item", "title=Milk"], store: "x")
        try cli.ok(["share", "Lists", "--with", yAccount], store: "x")
        try cli.ok(["zone", "create", "Diary"], store: "x")
        try cli.ok(["record", "save", "Diary/secret", "--type", "Note", "title=Private"], store: "x")
        let x = try NodeProcess(cli: cli, store: "x")
        defer { _ = x.stop() }
        let once = ["sync", "--peer", "127.0.0.1:\(x.port)", "--once", "--timeout", "30", "--database", "shared"]

        let first = try cli.run(once, store: "y")
        #expect(first.status == 0, "\(first.stderr)")
        let invitations = try cli.ok(["share", "invitations", "--json"], store: "y").json["invitations"] as? [[String: Any]]
        #expect(invitations?.count == 1)
        #expect(try title("y", "Lists/milk") == nil, "nothing of a share before it is accepted")
        try cli.ok(["share", "accept", "Lists"], store: "y")
        let second = try cli.run(once, store: "y")
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try title("y", "Lists/milk") == "Milk")
        // The other account's private database stays home.
        #expect(try cli.run(["record", "get", "Diary/secret"], store: "y").status != 0)

        try cli.ok(["record", "save", "Lists/eggs", "--type", "Item", "title=Eggs", "--database", "shared"], store: "y")
        let third = try cli.run(once, store: "y")
        #expect(third.status == 0, "\(third.stderr)")
        #expect(try eventuallyBlocking(30) { try title("x", "Lists/eggs") == "Eggs" })
    }

    /// A removed participant sets its wall clock back (faketime) and its
    /// store's clock (`meta.hlc`): its own `lattice` still refuses to write.
    /// A modified client writes anyway, stamped inside its read-write time;
    /// the owner's node refuses it, since no device of the owner's account
    /// vouches for it, and keeps the participant's earlier write (issue 38, finding 2).
    @Test(.runsUnderFaketime)
    func aRemovedParticipantWritingWithItsClockSetBackIsRefused() throws {
        defer { cli.cleanup() }
        for store in ["x", "y"] { try cli.ok(["init"], store: store) }
        let yAccount = try #require(try cli.ok(["id", "--json"], store: "y").json["accountID"] as? String)
        try cli.ok(["zone", "create", "Lists"], store: "x")
        try cli.ok(["share", "Lists", "--with", yAccount], store: "x")
        let x = try NodeProcess(cli: cli, store: "x")
        defer { _ = x.stop() }
        let once = ["sync", "--peer", "127.0.0.1:\(x.port)", "--once", "--timeout", "30", "--database", "shared"]
        try cli.ok(once, store: "y")
        try cli.ok(["share", "accept", "Lists"], store: "y")
        try cli.ok(once, store: "y")
        try cli.ok(["record", "save", "Lists/eggs", "--type", "Item", "title=Eggs", "--database", "shared"], store: "y")
        try cli.ok(once, store: "y")
        #expect(try eventuallyBlocking(30) { try title("x", "Lists/eggs") == "Eggs" })

        try cli.ok(["share", "remove", "Lists", "--with", yAccount], store: "x")
        try cli.ok(once, store: "y")
        #expect(try permission("y") == nil || permission("y") == "removed")
        #expect(try cli.run(["record", "save", "Lists/late", "--type", "Item", "title=Late", "--database", "shared"], store: "y").status == 77)
        // Both clocks back: Y's own lattice refuses still, as the owner's write said when Y's time ended.
        let database = URL(fileURLWithPath: cli.path("y")).appendingPathComponent(RecordStore.databaseFileName).path
        try DatabaseQueue(path: database).write { try $0.execute(sql: "UPDATE meta SET value = 1 WHERE key = 'hlc'") }
        let past = try FakeTime.wrapper("2020-01-01 00:00:00")
        let honest = try cli.run(["record", "save", "Lists/late", "--type", "Item", "title=Late", "--database", "shared"], store: "y", wrapper: past)
        #expect(honest.status == 77 && honest.stderr.contains("clock"), "\(honest.status) \(honest.stderr)")
        // A modified client writes anyway, its clock back: stamped inside Y's read-write time.
        let hostile = try RecordStore(directory: URL(fileURLWithPath: cli.path("y")), wallClock: { 1_577_836_800_000 })
        hostile.ignoresWriteRights = true
        let zone = try #require(try hostile.read { try $0.zones(in: .shared) }.first?.key)
        try hostile.write { try $0.save("late", type: "Item", in: zone, changes: [("title", .string("Late"))]) }
        let removal = try #require(try hostile.read { try $0.share(of: zone) }?.participants[yAccount]?.last?.time)
        #expect(try #require(try hostile.read { try $0.record("late", in: zone) }).created.time < removal)
        try cli.ok(once, store: "y")
        #expect(try title("x", "Lists/late") == nil, "the owner took a write its removed participant backdated")
        // The owner's `peers` and `doctor` say which device tried, and why.
        let yDevice = try #require(try cli.ok(["id", "--json"], store: "y").json["deviceID"] as? String)
        let peers = try cli.ok(["peers", "--json"], store: "x").json["peers"] as? [[String: Any]] ?? []
        let refused = peers.first { $0["deviceID"] as? String == yDevice }?["refusedWrites"] as? [String: Any]
        #expect((refused?["count"] as? Int ?? 0) >= 1 && (refused?["last"] as? String)?.contains("vouches") == true, "x's peers: \(peers)")
        let doctor = try cli.run(["doctor"], store: "x")
        #expect((doctor.stdout + doctor.stderr).contains("vouches"), "doctor: \(doctor.stdout) \(doctor.stderr)")
        #expect(try title("x", "Lists/eggs") == "Eggs", "the participant's write from before its removal stays")
    }

    /// The owner removes one of its devices (`account remove`); the removed
    /// device, through a modified client, removes the participant from the
    /// share and writes a record, then syncs with the participant's node:
    /// the participant, which never holds the owner's roster, refuses both
    /// from what the owner's device wrote into the share (issue 38, finding 7).
    @Test func aDeviceRemovedFromTheOwnersAccountIsRefusedByTheParticipant() throws {
        defer { cli.cleanup() }
        for store in ["x1", "x2", "y"] { try cli.ok(["init"], store: store) }
        try pair("x2", into: "x1")
        let yAccount = try id("y", "accountID")
        let x2Device = try id("x2", "deviceID")
        try shareLists(of: "x1", with: yAccount)
        let x1 = try NodeProcess(cli: cli, store: "x1")
        defer { _ = x1.stop() }
        for database in ["private", "shared"] {
            try cli.ok(["sync", "--peer", "127.0.0.1:\(x1.port)", "--once", "--timeout", "30", "--database", database], store: "x2")
        }
        #expect(try cli.ok(["record", "get", "Lists/milk"], store: "x2").stdout.contains("Milk"))
        let once = ["sync", "--peer", "127.0.0.1:\(x1.port)", "--once", "--timeout", "30", "--database", "shared"]
        try cli.ok(once, store: "y")
        try cli.ok(["share", "accept", "Lists"], store: "y")
        try cli.ok(once, store: "y")
        #expect(try title("y", "Lists/milk") == "Milk")

        try cli.ok(["account", "remove", x2Device], store: "x1")
        try cli.ok(once, store: "y")
        // x2 has not heard of it; a modified client on it ignores the rights anyway.
        let hostile = try RecordStore(directory: URL(fileURLWithPath: cli.path("x2")))
        hostile.ignoresWriteRights = true
        let zone = try #require(try hostile.read { try $0.zones(in: .shared) }.first?.key)
        try hostile.write { transaction in
            try transaction.save("late", type: "Item", in: zone, changes: [("title", .string("Late"))])
            try transaction.setSharePermission(.removed, of: yAccount, in: zone)
        }
        let y = try NodeProcess(cli: cli, store: "y")
        defer { _ = y.stop() }
        _ = try cli.run(["sync", "--peer", "127.0.0.1:\(y.port)", "--once", "--timeout", "15", "--database", "shared"], store: "x2")
        #expect(try title("y", "Lists/late") == nil, "the participant took a removed owner device's write")
        #expect(try permission("y") == "readWrite")
        let peers = try cli.ok(["peers", "--json"], store: "y").json["peers"] as? [[String: Any]] ?? []
        let refused = peers.first { $0["deviceID"] as? String == x2Device }?["refusedWrites"] as? [String: Any]
        #expect((refused?["count"] as? Int ?? 0) >= 1 && (refused?["last"] as? String)?.contains("was removed from account") == true, "y's peers: \(peers)")
    }

    /// A participant's account removes one of its devices (`account
    /// remove`); the removed device, through a modified client, writes into
    /// the shared zone and syncs with the owner's node: the owner, which
    /// never holds the participant's roster, refuses the write from what the
    /// participant's other device wrote into the share (issue 38).
    @Test func aDeviceRemovedFromAParticipantsAccountIsRefusedByTheOwner() throws {
        defer { cli.cleanup() }
        for store in ["x", "y1", "y2"] { try cli.ok(["init"], store: store) }
        try pair("y2", into: "y1")
        let yAccount = try id("y1", "accountID")
        let y2Device = try id("y2", "deviceID")
        try shareLists(of: "x", with: yAccount)
        let x = try NodeProcess(cli: cli, store: "x")
        defer { _ = x.stop() }
        let once = ["sync", "--peer", "127.0.0.1:\(x.port)", "--once", "--timeout", "30", "--database", "shared"]
        for device in ["y1", "y2"] {
            try cli.ok(once, store: device)
            _ = try cli.run(["share", "accept", "Lists"], store: device)
            try cli.ok(once, store: device)
            #expect(try title(device, "Lists/milk") == "Milk")
        }
        // The owner reads the zone in its private database.
        func owners(_ name: String) throws -> String? { try title("x", "Lists/\(name)", database: "private") }
        // Control: y2 writes as its account, a read-write participant, and the owner takes it.
        try cli.ok(["record", "save", "Lists/eggs", "--type", "Item", "title=Eggs", "--database", "shared"], store: "y2")
        try cli.ok(once, store: "y2")
        #expect(try owners("eggs") == "Eggs")

        let y1 = try NodeProcess(cli: cli, store: "y1")
        defer { _ = y1.stop() }
        try cli.ok(["sync", "--peer", "127.0.0.1:\(y1.port)", "--once", "--timeout", "30"], store: "y2")
        _ = y1.stop()
        try cli.ok(["account", "remove", y2Device], store: "y1")
        try cli.ok(once, store: "y1")
        // y2 has not heard of it; a modified client on it ignores the rights anyway.
        let hostile = try RecordStore(directory: URL(fileURLWithPath: cli.path("y2")))
        hostile.ignoresWriteRights = true
        let zone = try #require(try hostile.read { try $0.zones(in: .shared) }.first?.key)
        try hostile.write { try $0.save("late", type: "Item", in: zone, changes: [("title", .string("Late"))]) }
        _ = try cli.run(once, store: "y2")
        #expect(try owners("late") == nil, "the owner took a removed participant device's write")
        #expect(try owners("eggs") == "Eggs")
        let peers = try cli.ok(["peers", "--json"], store: "x").json["peers"] as? [[String: Any]] ?? []
        let refused = peers.first { $0["deviceID"] as? String == y2Device }?["refusedWrites"] as? [String: Any]
        #expect((refused?["count"] as? Int ?? 0) >= 1 && (refused?["last"] as? String)?.contains("was removed from account") == true, "x's peers: \(peers)")
    }
}

enum ZoneName {
    static let defaultZone = "_defaultZone"
}
