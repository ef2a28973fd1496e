import Foundation
import Lattice
import LatticeTestSupport
import Testing

/// A node's dialing does not wait on Swift's cooperative pool: an app that
/// blocks the pool's threads for a while does not stall sync with them.
@Suite struct NodeExecutorTests {
    @Test func aNodeDialsWhileEveryCooperativeThreadIsBlocked() async throws {
        let directory = TemporaryDirectory()
        let a = try directory.container("a"), b = try directory.container("b")
        try a.trust(deviceID: b.deviceID)
        try b.trust(deviceID: a.deviceID)
        let listening = loopbackNode(a)
        try await listening.start()
        let port = try #require(listening.listeningPort)
        let dialing = loopbackNode(b)
        try await dialing.start()

        // This task holds one pool thread from here on (it waits without
        // awaiting); blockers hold the others until the gate opens.
        let gate = DispatchSemaphore(value: 0)
        let blockers = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
        let started = DispatchSemaphore(value: 0)
        for _ in 0..<blockers { Task.detached { started.signal(); gate.wait() } }
        for _ in 0..<blockers { started.wait() }
        dialing.addPeer(PeerAddress(host: "127.0.0.1", port: port))
        // Polled blocking this thread on purpose: it stays taken from the pool meanwhile.
        let connected = { eventuallyBlocking(30) { !dialing.connectedPeers.isEmpty } }()
        for _ in 0..<blockers { gate.signal() }
        #expect(connected, "the dial loop ran while the cooperative pool was blocked")
        await dialing.stop()
        await listening.stop()
    }
}
