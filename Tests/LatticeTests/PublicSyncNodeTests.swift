import Foundation
@_spi(Testing) @testable import Lattice
import LatticeTestSupport
import NIOConcurrencyHelpers
import Testing

/// Real nodes on loopback, three accounts of one device each: A — M — C,
/// where M is a modified client that ignores the public database's rules
/// and relays. M's edit of A's public record (signed by M) is refused by A
/// and by C; its own record reaches everyone; refusals are reported in A's
/// events and status; A's private database goes nowhere.
@Suite(.serialized) struct PublicSyncNodeTests {
    func node(_ container: Container, peers: [Int] = []) -> SyncNode { loopbackNode(container, peers: peers) }

    /// Synchronous on purpose: in an async test the library's async overloads would be chosen.
    func title(_ container: Container, _ name: String) -> String? {
        guard let record = try? container.publicCloudDatabase.record(for: Record.ID(recordName: name)) else { return nil }
        if case .string(let title)? = record["title"] { return title }
        return nil
    }

    func save(_ container: Container, _ name: String, _ title: String) throws {
        var record = (try? container.publicCloudDatabase.record(for: Record.ID(recordName: name))) ?? Record(recordType: "Item", recordName: name)
        record["title"] = .string(title)
        _ = try container.publicCloudDatabase.save(record)
    }

    func savePrivate(_ container: Container) throws {
        _ = try container.privateCloudDatabase.save(movie("secret", ["title": .string("private")]))
    }

    func holdsPrivate(_ container: Container) -> Bool {
        (try? container.privateCloudDatabase.record(for: Record.ID(recordName: "secret"))) != nil
    }

    @Test func aModifiedClientsEditOfAnotherAccountsPublicRecordIsRefusedAtBothEnds() async throws {
        let directory = TemporaryDirectory()
        let a = try directory.container("a")
        let m = try directory.container("m")
        let c = try directory.container("c")
        m.ignoreWriteRights()
        try savePrivate(a)
        try save(a, "lamp", "Lamp")
        // M's schema is in production: a stranger's schema must not move A's (nor C's) there.
        try save(m, "mat", "Mat")
        try m.deploySchema()

        let nodeA = node(a)
        let events = NIOLockedValueBox<[SyncNode.Event]>([])
        let stream = nodeA.events
        let listener = Task { for await event in stream { events.withLockedValue { $0.append(event) } } }
        try await nodeA.start()
        let nodeC = node(c)
        try await nodeC.start()
        let nodeM = node(m, peers: [try #require(nodeA.listeningPort), try #require(nodeC.listeningPort)])
        try await nodeM.start()
        // M must hold A's record before it writes over it (else its save creates a record of its own).
        #expect(await eventually(60) { title(c, "lamp") == "Lamp" && title(m, "lamp") == "Lamp" })

        // M writes over A's record, under its own signature, and creates one of its own.
        try save(m, "lamp", "Vandalised")
        try save(m, "rug", "Rug")
        #expect(await eventually(30) { title(a, "rug") == "Rug" && title(c, "rug") == "Rug" })
        #expect(await eventually(30) {
            events.withLockedValue { $0 }.contains { if case .writesRefused = $0 { return true } else { return false } }
        })
        #expect(title(a, "lamp") == "Lamp")
        #expect(title(c, "lamp") == "Lamp")
        let ofM = nodeA.status.peers.first { $0.deviceID == m.deviceID }
        #expect(ofM?.access == "public only")
        #expect((ofM?.refusedRecords ?? 0) >= 1, "\(String(describing: ofM))")
        #expect(ofM?.lastRefusal?.contains("may not change it") == true)

        // A's own edit, later, wins at M. M's state of the record still shows its forged write (a
        // conflict loser), so C takes none of that record from M: it keeps A's last honest state.
        try save(a, "lamp", "Desk lamp")
        #expect(await eventually(30) { title(m, "lamp") == "Desk lamp" })
        #expect(title(c, "lamp") == "Lamp")
        // The private database stayed with A, and so did its schema, which names the private
        // record types too: strangers neither get it nor give theirs.
        #expect(!holdsPrivate(m) && !holdsPrivate(c))
        #expect(!(try c.schema().recordTypes.contains("Movie")))
        #expect(!(try m.schema().recordTypes.contains("Movie")))
        #expect(!(try a.schema().isProduction))
        #expect(!(try c.schema().isProduction))
        #expect(title(a, "mat") == "Mat")
        for node in [nodeM, nodeC, nodeA] { await node.stop() }
        listener.cancel()
    }
}
