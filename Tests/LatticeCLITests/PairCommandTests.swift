import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore
import LatticeTestSupport
import Testing
import LatticeRawClient

/// `lattice pair` between real processes over loopback: the code on the
/// first line, wrong and expired codes, and devices that then sync with no
/// `trust` typed.
@Suite(.serialized) struct PairCommandTests {
    let cli = CLI()

    /// A `lattice pair` offering a code on `store`: its code and port, read as it prints them.
    final class Offer {
        let process = Process()
        let output = Pipe()
        let errors = Pipe()
        private(set) var code = ""
        private(set) var port = 0

        init(cli: CLI, store: String, extra: [String] = []) throws {
            process.executableURL = CLI.binary
            process.arguments = ["pair", "--listen", "127.0.0.1", "--no-mdns", "--json", "--store", cli.path(store)] + extra
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            code = Self.line(from: output.fileHandleForReading)
            let listening = Self.line(from: errors.fileHandleForReading)
            port = ((try? JSONSerialization.jsonObject(with: Data(listening.utf8))) as? [String: Any])?["listening"] as? Int ?? 0
        }

        static func line(from handle: FileHandle) -> String {
            var bytes: [UInt8] = []
            while let byte = try? handle.read(upToCount: 1), let first = byte.first, first != 10 { bytes.append(first) }
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Waits for the process; its exit status and the rest of its output.
        func finish() -> (status: Int32, stdout: String) {
            process.waitUntilExit()
            let rest = output.fileHandleForReading.readDataToEndOfFile()
            return (process.terminationStatus, String(decoding: rest, as: UTF8.self))
        }

        deinit { if process.isRunning { process.terminate() } }
    }

    @Test func threeDevicesFormAnAccountWithTwoPairingsAndSyncWithNoTrust() throws {
        defer { cli.cleanup() }
        for store in ["a", "b", "c"] {
            try cli.ok(["init", "--name", store], store: store)
            try cli.ok(["zone", "create", "Movies"], store: store)
        }
        // a offers; a wrong code from c fails (77) and is counted; b joins.
        let first = try Offer(cli: cli, store: "a")
        #expect(first.code.count == 9 && first.port > 0, "first line: \(first.code)")
        let wrong = try cli.run(["pair", "AAAA-AAAA", "--peer", "127.0.0.1:\(first.port)"], store: "c")
        #expect(wrong.status == 77 && wrong.stderr.contains("code does not match"), "\(wrong.stderr)")
        let joined = try cli.run(["pair", first.code.lowercased(), "--peer", "127.0.0.1:\(first.port)", "--json"], store: "b")
        #expect(joined.status == 0, "\(joined.stderr)")
        let (status, out) = first.finish()
        #expect(status == 0)
        let inviterSide = (try? JSONSerialization.jsonObject(with: Data(out.utf8))) as? [String: Any]
        #expect(inviterSide?["verifier"] as? String == joined.json["verifier"] as? String)
        // b offers; c joins.
        let second = try Offer(cli: cli, store: "b")
        #expect(try cli.run(["pair", second.code, "--peer", "127.0.0.1:\(second.port)"], store: "c").status == 0)
        #expect(second.finish().status == 0)

        // No `trust` typed: a syncs with b, b with c, and c holds a's record.
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Up"], store: "a")
        for (from, to) in [("a", "b"), ("c", "b")] {
            let node = try NodeProcess(cli: cli, store: to)
            defer { node.stop() }
            let sync = try cli.run(["sync", "--peer", "127.0.0.1:\(node.port)", "--once", "--timeout", "60"], store: from)
            #expect(sync.status == 0, "\(from) → \(to): \(sync.stderr)")
        }
        #expect(try cli.run(["record", "get", "Movies/m1"], store: "c").stdout.contains("Up"))
        // a never paired with c, yet trusts it: it learnt the roster from b.
        try cli.ok(["record", "save", "Movies/m2", "--type", "Movie", "title=Cars"], store: "c")
        let node = try NodeProcess(cli: cli, store: "a")
        let direct = try cli.run(["sync", "--peer", "127.0.0.1:\(node.port)", "--once", "--timeout", "60"], store: "c")
        node.stop()
        #expect(direct.status == 0, "c → a: \(direct.stderr)")
        #expect(try cli.run(["record", "get", "Movies/m2"], store: "a").stdout.contains("Cars"))
        for store in ["a", "b", "c"] {
            let devices = try cli.ok(["account", "--json"], store: store).json["devices"] as? [[String: Any]] ?? []
            #expect(devices.count == 3, "\(store)'s account: \(devices)")
        }
    }

    /// Pairs `joiner` into `inviter`'s account.
    func pair(_ joiner: String, into inviter: String) throws {
        let offer = try Offer(cli: cli, store: inviter)
        let joined = try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: joiner)
        #expect(joined.status == 0, "\(joiner) joining \(inviter): \(joined.stderr)")
        #expect(offer.finish().status == 0)
    }

    /// `from` syncs once with a node serving `to`.
    func syncOnce(_ from: String, with to: String) throws -> CLI.Result {
        let node = try NodeProcess(cli: cli, store: to)
        defer { node.stop() }
        return try cli.run(["sync", "--peer", "127.0.0.1:\(node.port)", "--once", "--timeout", "30"], store: from)
    }

    @Test func aRemovalReachesAMemberThatWasOfflineAndTheRemovedDevicesLaterWritesAreRefused() throws {
        defer { cli.cleanup() }
        var ids: [String: String] = [:]
        for store in ["a", "b", "d"] {
            try cli.ok(["init", "--name", store], store: store)
            try cli.ok(["zone", "create", "Movies"], store: store)
            ids[store] = try cli.ok(["id"], store: store).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try pair("b", into: "a")
        try pair("d", into: "a")
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Before"], store: "d")
        #expect(try syncOnce("d", with: "a").status == 0)
        #expect(try syncOnce("b", with: "a").status == 0)
        #expect(try cli.run(["record", "get", "Movies/m1"], store: "b").stdout.contains("Before"))

        // b is offline (no node, no sync) while a removes d; d, unaware, writes on.
        let removal = try cli.run(["account", "remove", ids["d"]!], store: "a")
        #expect(removal.status == 0, "\(removal.stderr)")
        #expect(try cli.run(["account", "remove", ids["a"]!], store: "a").status == 64, "removing this device itself")
        #expect(try cli.run(["untrust", ids["b"]!], store: "a").status == 64, "untrust of an account member")
        try cli.ok(["record", "save", "Movies/m2", "--type", "Movie", "title=After"], store: "d")
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Hijacked"], store: "d")

        // b comes back and syncs with a: it takes the removal.
        #expect(try syncOnce("b", with: "a").status == 0)
        let account = try cli.ok(["account", "--json"], store: "b").json
        let removed = (account["removed"] as? [[String: Any]] ?? []).compactMap { $0["deviceID"] as? String }
        #expect(removed == [ids["d"]!], "b's account: \(account)")
        #expect((account["devices"] as? [[String: Any]] ?? []).count == 2)

        // d is refused by b's node, and its later writes, carried by hand, are refused whole.
        let refused = try syncOnce("d", with: "b")
        #expect(refused.status != 0, "the removed device synced: \(refused.stdout)")
        let bundle = cli.path("d-later.bundle")
        try cli.ok(["bundle", "create", "-o", bundle], store: "d")
        let applied = try cli.run(["bundle", "apply", bundle], store: "b")
        #expect(applied.status == 77, "\(applied.status): \(applied.stderr)")
        #expect(applied.stderr.contains("removed from the account"), "\(applied.stderr)")
        #expect(try cli.run(["record", "get", "Movies/m2"], store: "b").status != 0)
        #expect(try cli.run(["record", "get", "Movies/m1"], store: "b").stdout.contains("Before"))
        #expect(try cli.run(["trust", ids["d"]!], store: "b").status == 77, "trusting a removed device by hand")
        let peers = try cli.ok(["peers", "--json"], store: "b").json["peers"] as? [[String: Any]] ?? []
        #expect(peers.first { $0["deviceID"] as? String == ids["d"] }?["trust"] as? String == "removed")
    }

    @Test func anExpiredOrSpentCodeFails() throws {
        defer { cli.cleanup() }
        for store in ["a", "b"] { try cli.ok(["init"], store: store) }
        let expiring = try Offer(cli: cli, store: "a", extra: ["--expires", "1"])
        Thread.sleep(forTimeInterval: 1.5)
        #expect(expiring.finish().status == 69)
        #expect(try cli.run(["pair", expiring.code, "--peer", "127.0.0.1:\(expiring.port)"], store: "b").status == 69)
        // Three wrong attempts spend a code: the right one then fails too.
        let spent = try Offer(cli: cli, store: "a")
        for _ in 0..<3 { #expect(try cli.run(["pair", "AAAA-AAAA", "--peer", "127.0.0.1:\(spent.port)"], store: "b").status == 77) }
        #expect(spent.finish().status == 77)
        #expect(try cli.run(["pair", spent.code, "--peer", "127.0.0.1:\(spent.port)"], store: "b").status != 0)
        #expect((try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []).isEmpty)
        // With no --peer and no offer of that code on the network (or no mDNS here), a clear 69.
        let nowhere = try cli.run(["pair", "AAAA-AAAA", "--search", "0.5"], store: "b")
        #expect(nowhere.status == 69 && nowhere.stderr.contains("--peer HOST:PORT"), "\(nowhere.status): \(nowhere.stderr)")
    }

    /// A stranger on the LAN cannot hold a code busy or spend it without
    /// guessing (issue 38, finding 7): connections that idle, close at once
    /// or send junk learn nothing of the code, so they neither block the
    /// device that has it nor count as wrong attempts.
    @Test func idleClosedAndJunkConnectionsNeitherHoldNorSpendACode() throws {
        defer { cli.cleanup() }
        for store in ["a", "b"] { try cli.ok(["init"], store: store) }
        let offer = try Offer(cli: cli, store: "a")
        var idle: [RawConnection] = []
        for _ in 0..<4 { idle.append(try #require(RawConnection(port: offer.port))) }
        for _ in 0..<6 { _ = RawConnection(port: offer.port) } // connect and close
        for junk in [[UInt8](repeating: 0x41, count: 40), RawConnection.framed(Array("LTPR\u{63}nonsense".utf8))] {
            let connection = try #require(RawConnection(port: offer.port))
            connection.send(junk)
            #expect(connection.closedByServer(), "the offer kept a connection that sent junk")
        }
        // The idle ones are still open, and the device with the code pairs.
        let joined = try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: "b")
        #expect(joined.status == 0, "joining beside idle and junk connections: \(joined.stderr)")
        #expect(offer.finish().status == 0)
        #expect(idle.count == 4)
    }

    /// The inviter's roster travels inside the sealed exchange: an account
    /// of hundreds of devices (past the 64 KiB an inviter takes from
    /// strangers) still pairs a new one (issue 38, finding 8).
    @Test func anAccountOfHundredsOfDevicesStillPairsANewOne() throws {
        defer { cli.cleanup() }
        for store in ["a", "b"] { try cli.ok(["init"], store: store) }
        let a = try RecordStore(directory: URL(fileURLWithPath: cli.path("a")))
        try a.write { transaction in
            for index in 0..<400 {
                _ = try transaction.signRosterEntry(.add(name: "device \(index) with a name as long as people give them"), subject: try Identity.generate().publicKey)
            }
        }
        let offer = try Offer(cli: cli, store: "a")
        let joined = try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: "b")
        #expect(joined.status == 0, "joining an account of 401 devices: \(joined.stderr)")
        #expect(offer.finish().status == 0)
        let devices = try cli.ok(["account", "--json"], store: "b").json["devices"] as? [[String: Any]] ?? []
        #expect(devices.count == 402)
    }

    /// An account whose roster is larger than a message (thousands of
    /// entries: devices added and removed over the years) still pairs a new
    /// device, and the new device's first sync brings the whole roster, in
    /// pieces (issue 38, finding 8).
    @Test func anAccountWhoseRosterIsLargerThanAMessagePairsAndSyncsItWhole() throws {
        defer { cli.cleanup() }
        for store in ["a", "b"] { try cli.ok(["init"], store: store) }
        let a = try RecordStore(directory: URL(fileURLWithPath: cli.path("a")))
        var roster = try a.read { try $0.roster() }
        try LargeRoster.grow(&roster, founder: a.identity)
        #expect(roster.encoded.count > 1 << 20)
        try a.write { _ = try $0.adoptRoster(roster) }
        let offer = try Offer(cli: cli, store: "a")
        let joined = try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: "b")
        #expect(joined.status == 0, "joining: \(joined.stderr)")
        #expect(offer.finish().status == 0)
        let node = try NodeProcess(cli: cli, store: "a")
        defer { node.stop() }
        let synced = try cli.run(["sync", "--peer", "127.0.0.1:\(node.port)", "--once", "--timeout", "60"], store: "b")
        #expect(synced.status == 0, "\(synced.stderr)")
        func account(_ store: String) throws -> (devices: Int, removed: Int) {
            let json = try cli.ok(["account", "--json"], store: store).json
            return ((json["devices"] as? [Any])?.count ?? 0, (json["removed"] as? [Any])?.count ?? 0)
        }
        let whole = try account("a")
        #expect(whole.devices > 400 && whole.removed == 4)
        #expect(try account("b") == whole)
    }

    /// A hostile member and the devices it added sign all they can, filling
    /// the account's roster: `account remove` still removes it, and once it
    /// and its devices are gone the account pairs a new device (issue 38,
    /// finding 3).
    @Test func aMemberThatFilledTheRosterIsRemovedAndPairingWorksAgain() throws {
        defer { cli.cleanup() }
        for store in ["a", "h", "b"] { try cli.ok(["init"], store: store) }
        let a = try RecordStore(directory: URL(fileURLWithPath: cli.path("a")))
        let hostile = try RecordStore(directory: URL(fileURLWithPath: cli.path("h"))).identity
        var roster = try a.write { transaction -> AccountRoster in
            _ = try transaction.signRosterEntry(.add(name: "hostile"), subject: hostile.publicKey)
            return try transaction.roster()
        }
        var added: [Identity] = []
        var authors = [hostile]
        filling: while !authors.isEmpty {
            let author = authors.removeFirst()
            for _ in 0..<AccountRoster.maximumEntriesPerAuthor {
                let puppet = try Identity.generate()
                do { try roster.sign(.add(name: "puppet"), subject: puppet.publicKey, by: author, at: 1) } catch RosterError.tooLarge { break filling }
                added.append(puppet)
                if authors.count < 4 { authors.append(puppet) }
            }
        }
        try a.write { _ = try $0.adoptRoster(roster) }
        let full = try Offer(cli: cli, store: "a")
        let refused = try cli.run(["pair", full.code, "--peer", "127.0.0.1:\(full.port)"], store: "b")
        #expect(refused.status != 0 && refused.stderr.contains("remove devices"), "pairing into a full roster: \(refused.status) \(refused.stderr)")
        kill(full.process.processIdentifier, SIGKILL)
        full.process.waitUntilExit()
        // The hostile device goes, and with it its share; those it added go one by one.
        let hostileID = try DeviceID(publicKey: hostile.publicKey).description
        let removal = try cli.run(["account", "remove", hostileID], store: "a")
        #expect(removal.status == 0, "account remove of the device that filled the roster: \(removal.stderr)")
        for puppet in added.prefix(8) { try cli.ok(["account", "remove", try DeviceID(publicKey: puppet.publicKey).description], store: "a") }
        let offer = try Offer(cli: cli, store: "a")
        let joined = try cli.run(["pair", offer.code, "--peer", "127.0.0.1:\(offer.port)"], store: "b")
        #expect(joined.status == 0, "pairing once the hostile device was removed: \(joined.stderr)")
        #expect(offer.finish().status == 0)
        let removed = try cli.ok(["account", "--json"], store: "b").json["removed"] as? [[String: Any]] ?? []
        #expect(removed.contains { $0["deviceID"] as? String == hostileID })
    }
}
