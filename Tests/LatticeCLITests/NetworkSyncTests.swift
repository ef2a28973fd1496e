import Foundation
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeTestSupport
import Testing
#if canImport(Glibc)
import Glibc
import LatticeRawClient
#endif

/// Real `lattice serve` processes syncing over loopback, driven only through the CLI.
@Suite(.serialized) struct NetworkSyncTests {
    let cli = CLI()

    /// Creates stores that all trust each other as `pairs` says, each with zone Movies.
    func makeStores(_ names: [String], trust pairs: [(String, String)]) throws -> [String: String] {
        var ids: [String: String] = [:]
        for name in names {
            try cli.ok(["init"], store: name)
            ids[name] = try cli.ok(["id"], store: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Movies"], store: name)
        }
        for (a, b) in pairs {
            try cli.ok(["trust", ids[b]!, "--name", b], store: a)
            try cli.ok(["trust", ids[a]!, "--name", a], store: b)
        }
        return ids
    }

    func converged(_ stores: [String]) throws -> Bool {
        let snapshots = try stores.map { try cli.snapshot($0) }
        return Set(snapshots).count == 1 && !snapshots[0].isEmpty
    }

    /// A shell loop of `lattice record save` processes on `store`.
    func writer(_ store: String, saves: Int, seed: Int) throws -> Process {
        let script = """
            for i in $(seq 1 \(saves)); do
              "$LATTICE" record save "Movies/\(store)-$i" --type Movie "title=by \(store) $i" "rating:int=$i" --store "$STORE" >/dev/null || exit 1
              "$LATTICE" record save Movies/shared --type Movie "title=\(store) $i" "rating:int=\(seed)$i" --store "$STORE" >/dev/null || exit 1
            done
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        var environment = ["LATTICE": CLI.binary.path, "STORE": cli.path(store), "PATH": "/usr/bin:/bin"]
        // Under scripts/tsan.sh, each lattice the shell starts must log its races where the others do.
        environment["TSAN_OPTIONS"] = ProcessInfo.processInfo.environment["TSAN_OPTIONS"]
        process.environment = environment
        try process.run()
        return process
    }

    @Test func threeNodesWithConcurrentEditsConvergeWithTheSameConflicts() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b", "c"], trust: [("a", "b"), ("b", "c"), ("a", "c")])
        let a = try NodeProcess(cli: cli, store: "a")
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port])
        let c = try NodeProcess(cli: cli, store: "c", peers: [a.port, b.port])
        defer { for node in [a, b, c] { node.stop() } }
        let writers = try ["a", "b", "c"].enumerated().map { try writer($1, saves: 15, seed: $0 + 1) }
        for process in writers { process.waitUntilExit(); #expect(process.terminationStatus == 0) }
        #expect(try eventuallyBlocking(60) { try converged(["a", "b", "c"]) }, "the three stores did not converge")
        let count = try cli.ok(["query", "Movie", "--zone", "Movies", "--json", "--limit", "1000"], store: "a").json["records"] as? [Any]
        #expect(count?.count == 46)
        let conflicts = try ["a", "b", "c"].map { try cli.ok(["conflicts", "Movies/shared", "--json"], store: $0).stdout }
        #expect(Set(conflicts).count == 1, "conflicts differ: \(conflicts)")
        // Another process sees the running node's state.
        #expect(try eventuallyBlocking(10) {
            let sync = try cli.ok(["status", "--json"], store: "a").json["sync"] as? [String: Any]
            let peers = sync?["peers"] as? [[String: Any]] ?? []
            return sync?["running"] as? Bool == true && peers.filter { $0["connected"] as? Bool == true }.count == 2
        })
        let listed = try cli.ok(["peers", "--json"], store: "b").json["peers"] as? [[String: Any]] ?? []
        #expect(listed.count == 2 && listed.allSatisfy { $0["trusted"] as? Bool == true && $0["connected"] as? Bool == true && $0["recordsBehind"] as? Int == 0 })
        for node in [a, b, c] { #expect(node.stop() == 0, "serve did not stop cleanly on SIGTERM") }
        let after = try cli.ok(["status", "--json"], store: "a").json["sync"] as? [String: Any]
        #expect(after?["running"] as? Bool == false)
    }

    @Test func changesRelayAlongALine() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b", "c"], trust: [("a", "b"), ("b", "c")])
        let a = try NodeProcess(cli: cli, store: "a")
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port])
        let c = try NodeProcess(cli: cli, store: "c", peers: [b.port])
        defer { for node in [a, b, c] { node.stop() } }
        try cli.ok(["record", "save", "Movies/from-a", "--type", "Movie", "title=A"], store: "a")
        try cli.ok(["record", "save", "Movies/from-c", "--type", "Movie", "title=C"], store: "c")
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/from-a"], store: "c").status == 0 })
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/from-c"], store: "a").status == 0 })
        #expect(try eventuallyBlocking { try converged(["a", "b", "c"]) })
    }

    @Test func withoutAnMDNSDaemonServeSaysSoOnceAndStaticPeersStillSync() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b"], trust: [("a", "b")])
        // No system bus at this address: Avahi's library cannot reach a daemon, whatever runs on this machine.
        let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/lattice-test-bus"]
        let a = try NodeProcess(cli: cli, store: "a", mdns: true, environment: noBus, logLevel: "warning")
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port], mdns: true, environment: noBus, logLevel: "warning")
        defer { for node in [a, b] { node.stop() } }
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=A"], store: "a")
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/m1"], store: "b").status == 0 })
        #expect(eventuallyBlocking(10) { a.count("discoveryUnavailable") == 1 })
        Thread.sleep(forTimeInterval: 2.5) // past a retry: still one line
        let lines = a.standardError.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(a.standardError)")
        #expect(lines.first?.contains("mDNS discovery is off: no system D-Bus (/nonexistent/lattice-test-bus is missing)") == true)
        #expect(lines.first?.contains("Meanwhile serving --peer addresses") == true)
        #expect(!a.standardError.contains("Bonjour") && !a.standardError.contains("WARNING"))
        let doctor = try cli.run(["doctor"], store: "a")
        #expect(doctor.status == 69)
        #expect(doctor.stdout.contains("PROBLEM mDNS: mDNS discovery is off: no system D-Bus"))
        #expect(doctor.stdout.contains("ok      node: pid"))
    }

    @Test func anUntrustedDeviceGetsNothing() throws {
        defer { cli.cleanup() }
        let ids = try makeStores(["a", "d"], trust: [])
        try cli.ok(["trust", ids["a"]!], store: "d") // d trusts a, a does not trust d
        try cli.ok(["record", "save", "Movies/secret", "--type", "Movie", "title=secret"], store: "a")
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        let result = try cli.run(["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--timeout", "20"], store: "d")
        #expect(result.status == 77, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("does not trust this device"))
        #expect(try cli.run(["record", "get", "Movies/secret"], store: "d").status != 0)
        // a lists d as seen, so a person can trust it from there; it let d sync the public database only.
        // The node writes its status a moment after the session.
        #expect(try eventuallyBlocking {
            let peers = try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []
            return peers.contains { $0["deviceID"] as? String == ids["d"] && $0["trusted"] as? Bool == false }
        })
        #expect(a.count("refused") == 0)
        // With the public database closed to strangers, a refuses d outright.
        _ = a.stop()
        let closed = try NodeProcess(cli: cli, store: "a", extra: ["--public-from", "trusted"])
        defer { _ = closed.stop() }
        let refused = try cli.run(["sync", "--peer", "127.0.0.1:\(closed.port)", "--once", "--timeout", "20"], store: "d")
        #expect(refused.status == 77, "\(refused.stdout) \(refused.stderr)")
        #expect(closed.count("refused") == 1)
    }

    @Test func untrustingAConnectedDeviceEndsItsSessionAtOnce() throws {
        defer { cli.cleanup() }
        let ids = try makeStores(["a", "b"], trust: [("a", "b")])
        let a = try NodeProcess(cli: cli, store: "a")
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port])
        defer { for node in [a, b] { node.stop() } }
        try cli.ok(["record", "save", "Movies/before", "--type", "Movie", "title=shared"], store: "a")
        #expect(try eventuallyBlocking { try cli.run(["record", "get", "Movies/before"], store: "b").status == 0 })
        try cli.ok(["untrust", ids["b"]!], store: "a")
        #expect(eventuallyBlocking(10) { a.count("disconnected") >= 1 }, "the untrusted device kept its session")
        try cli.ok(["record", "save", "Movies/after", "--type", "Movie", "title=private again"], store: "a")
        Thread.sleep(forTimeInterval: 1)
        #expect(try cli.run(["record", "get", "Movies/after"], store: "b").status != 0, "a device no longer trusted still received a record")
        let peers = try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []
        #expect(peers.contains { $0["deviceID"] as? String == ids["b"] && $0["trusted"] as? Bool == false })
        // Trusted again: b's node, still dialing, is let in and catches up.
        try cli.ok(["trust", ids["b"]!], store: "a")
        #expect(try eventuallyBlocking(40) { try cli.run(["record", "get", "Movies/after"], store: "b").status == 0 }, "b did not come back after a was told to trust it again")
    }

    @Test func aSecondNodeOnOneStoreAndANonLatticePeerAreClearErrors() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a"], trust: [])
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        let second = try cli.run(["serve", "--port", "0", "--listen", "127.0.0.1", "--no-mdns"], store: "a")
        #expect(second.status == 77 && second.stderr.contains("a node already runs"), "\(second.stderr)")
        #expect(try cli.run(["serve", "--port", "0", "--database", "nowhere"], store: "a").status == 64)
        #expect(try cli.run(["trust", "NOT-A-DEVICE-ID"], store: "a").status == 64)
        // A TCP server that is not a Lattice node: it accepts and says nothing.
        let relay = try Relay(upstreamPort: a.port, silent: true)
        let result = try cli.run(["sync", "--peer", "127.0.0.1:\(relay.port)", "--once", "--timeout", "30"], store: "a")
        #expect(result.status == 69 && result.stderr.contains("not a Lattice node"), "\(result.status) \(result.stderr)")
    }

    @Test func aNodeKilledMidSyncResumesWithoutResendingWhatItHad() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b"], trust: [("a", "b")])
        let total = 30_000
        let lines = (0..<total).map { #"{"recordName":"m\#($0)","recordType":"Movie","fields":{"title":{"value":"movie \#($0) with some text to make it longer"},"rating":{"value":\#($0 % 5)}}}"# }
        try cli.ok(["record", "import", "Movies", "-"], store: "a", input: lines.joined(separator: "\n") + "\n")
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        let first = Process()
        first.executableURL = CLI.binary
        first.arguments = ["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--json", "--store", cli.path("b")]
        let output = Pipe()
        first.standardOutput = output
        first.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try first.run()
        // Killed as soon as it reports its first committed batch.
        var seen = ""
        func committedABatch() -> Bool {
            seen.split(separator: "\n").contains { $0.contains(#""direction":"receiving""#) && $0.contains(#""event":"progress""#) }
        }
        while first.isRunning, !committedABatch() {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        func count() throws -> Int {
            let zones = try cli.run(["status", "--json"], store: "b").json["zones"] as? [[String: Any]] ?? []
            return zones.first { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String == "Movies" }?["recordCount"] as? Int ?? 0
        }
        let had = try count()
        #expect(had > 0 && had < total, "the kill landed outside the stream (\(had) of \(total))")
        let second = try cli.ok(["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--json"], store: "b")
        let received = second.lines.last?["recordsReceived"] as? Int ?? -1
        #expect(try count() == total)
        // Only what was missing comes again, give or take the batch cut by the kill.
        #expect(received >= total - had && received <= total - had + SyncSession.Configuration().batchRecords, "received \(received) after having \(had) of \(total)")
        #expect(try converged(["a", "b"]))
    }

    @Test func hostileClientsAreDroppedWhileTheNodeKeepsSyncing() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b"], trust: [("a", "b")])
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        // Random bytes.
        let random = try #require(RawConnection(port: a.port))
        random.send((0..<4096).map { _ in UInt8.random(in: 0...255) })
        #expect(random.closedByServer())
        // A 2 GB length prefix.
        let huge = try #require(RawConnection(port: a.port))
        huge.send([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        #expect(huge.closedByServer())
        // A valid handshake as the trusted device b, then garbage inside the channel.
        let seed = try String(contentsOfFile: cli.path("b") + "/identity.key", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let identity = try Identity(seed: stride(from: 0, to: 64, by: 2).map { UInt8(seed.dropFirst($0).prefix(2), radix: 16)! })
        let liar = try #require(RawConnection(port: a.port))
        var initiator = try HandshakeInitiator(identity: identity, versions: 1...1)
        liar.frame(initiator.start())
        let second = try #require(liar.readFrame())
        let (proof, _) = try initiator.receive(second)
        liar.frame(proof)
        liar.frame([UInt8](repeating: 0, count: 24)) // a stream header
        liar.frame((0..<200).map { _ in UInt8.random(in: 0...255) })
        #expect(liar.closedByServer())
        // 200 idle connections: those over the per-address bound are closed at once.
        let idle = (0..<200).compactMap { _ in RawConnection(port: a.port) }
        // Meanwhile a trusted device syncs, and a push still arrives.
        try cli.ok(["record", "save", "Movies/after", "--type", "Movie", "title=still serving"], store: "a")
        let sync = try cli.ok(["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--json", "--timeout", "30"], store: "b")
        #expect(sync.lines.last?["recordsReceived"] as? Int == 1)
        let closed = idle.filter { $0.closedByServer() }.count
        #expect(closed == 200, "\(closed) of 200 idle connections closed (the bound, then the handshake timeout)")
        #expect(try cli.ok(["record", "get", "Movies/after"], store: "b").stdout.contains("still serving"))
    }

    @Test func theWireCarriesNoRecordContentInClear() throws {
        defer { cli.cleanup() }
        _ = try makeStores(["a", "b"], trust: [("a", "b")])
        let marker = "TOP-SECRET-\(UUID().uuidString)"
        try cli.ok(["record", "save", "Movies/secret", "--type", "Movie", "title=\(marker)"], store: "a")
        let a = try NodeProcess(cli: cli, store: "a")
        defer { a.stop() }
        let relay = try Relay(upstreamPort: a.port)
        try cli.ok(["sync", "--peer", "127.0.0.1:\(relay.port)", "--once", "--timeout", "20"], store: "b")
        #expect(try cli.ok(["record", "get", "Movies/secret"], store: "b").stdout.contains(marker))
        let capture = relay.captured()
        #expect(capture.count > 500)
        #expect(!capture.containsSubsequence(Array(marker.utf8)), "the record's content crossed the wire in clear")
        #expect(!capture.containsSubsequence(Array("Movies".utf8)))
    }
}

extension Array where Element == UInt8 {
    func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

/// A TCP relay on loopback that records every byte both ways: a wire capture.
final class Relay: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []

    /// With `silent`, it accepts and never answers nor forwards: a TCP server that is not a Lattice node.
    init(upstreamPort: Int, silent: Bool = false) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 4)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            let client = accept(listener, nil, nil)
            if silent {
                Thread.sleep(forTimeInterval: 12)
                close(client)
                return
            }
            guard client >= 0, let upstream = RawConnection(port: upstreamPort) else { return }
            let upstreamFD = upstream.fd
            let done = DispatchSemaphore(value: 0)
            for (from, to) in [(client, upstreamFD), (upstreamFD, client)] {
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let n = recv(from, &buffer, buffer.count, 0)
                        if n <= 0 { break }
                        self.lock.withLock { self.bytes += buffer[0..<n] }
                        _ = buffer.withUnsafeBytes { send(to, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
                    }
                    shutdown(to, Int32(SHUT_WR))
                    done.signal()
                }
            }
            done.wait()
            done.wait()
            close(client)
            withExtendedLifetime(upstream) {}
        }
    }

    func captured() -> [UInt8] { lock.withLock { bytes } }

    deinit { close(listener) }
}
