import Foundation
@testable import Lattice
import LatticeTestSupport
import Testing

/// A node without a wake-up socket still hears of trust changes made by
/// other processes (by polling the store), says so, and acts on them.
@Suite(.serialized) struct TrustChangeTests {
    func node(_ container: Container, peers: [PeerAddress] = [], wakeUpSocket: Bool) -> SyncNode {
        var configuration = SyncNode.Configuration()
        configuration.port = 0
        configuration.listenHost = "127.0.0.1"
        configuration.peers = peers
        configuration.usesWakeUpSocket = wakeUpSocket
        configuration.pollInterval = .milliseconds(200)
        // Untrusted is refused outright: no public-only session takes the account's place.
        configuration.publicFrom = .trusted
        return SyncNode(container: container, configuration: configuration)
    }

    /// Synchronous on purpose: in an async test the library's async overloads would be chosen.
    func holds(_ container: Container, _ name: String) -> Bool {
        (try? container.privateCloudDatabase.record(for: Record.ID(recordName: name))) != nil
    }

    func save(_ container: Container, _ name: String) throws {
        _ = try container.privateCloudDatabase.save(movie(name, ["title": .string(name)]))
    }

    @Test func withoutAWakeUpSocketUntrustByAnotherProcessStillEndsTheSession() async throws {
        let directory = TemporaryDirectory()
        let a = try directory.container("a")
        let b = try directory.container("b")
        try a.trust(deviceID: b.deviceID)
        try b.trust(deviceID: a.deviceID)
        let nodeA = node(a, wakeUpSocket: false)
        try await nodeA.start()
        let port = try #require(nodeA.listeningPort)
        let nodeB = node(b, peers: [PeerAddress(host: "127.0.0.1", port: port)], wakeUpSocket: true)
        try await nodeB.start()
        #expect(nodeA.status.commitWatch?.hasPrefix("polling every 200 ms") == true, "\(nodeA.status.commitWatch ?? "none")")
        #expect(await eventually(120) { nodeA.connectedPeers == [b.deviceID] })

        // Another process on a's store: its commits reach a's node only through the poll.
        let otherProcess = try Container(identifier: "com.example.test", directory: a.directory, create: false)
        try save(otherProcess, "before")
        #expect(await eventually(120) { holds(b, "before") })
        try otherProcess.untrust(deviceID: b.deviceID)
        #expect(await eventually(30) { nodeA.connectedPeers.isEmpty }, "the session outlived the untrust")
        try save(otherProcess, "after")
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(!holds(b, "after"))
        await nodeB.stop()
        await nodeA.stop()
    }
}
