import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
@testable import LatticeTransport
import LatticeTestSupport
import Logging
import NIOCore
import NIOPosix
import Testing
#if canImport(Glibc)
import Glibc
import LatticeRawClient
#endif

/// A trusted peer that sends pings and never reads the pongs: once more is
/// queued for it than an honest session ever queues, the node stops reading
/// from it, so what waits in the node's memory stays bounded.
@Suite struct UnreadPeerTests {
    final class TrustingDelegate: SyncDelegate, @unchecked Sendable {
        let trusted: DeviceID
        init(trusting trusted: DeviceID) { self.trusted = trusted }
        func access(for peer: DeviceID) -> PeerAccess? { peer == trusted ? .account : nil }
        func noteConnected(_ peer: DeviceID, address: String) throws {}
        func hello(for peer: DeviceID) throws -> Hello { Hello(container: "app", zones: []) }
        func zones() throws -> [ZoneKey] { [] }
        func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch? { nil }
        func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch { AppliedBatch(vector: VersionVector(), recordsChanged: 0) }
        func adoptRoster(_ roster: [UInt8], from peer: DeviceID) throws {}
        func roster() throws -> [UInt8] { [] }
    }

    @Test func aPeerThatDoesNotReadStopsBeingRead() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let node = try Identity.generate()
        let peer = try Identity.generate()
        var settings = ConnectionSettings()
        // An honest session queues at most about this much: a small batch keeps the test short.
        settings.session.maximumBatchSize = 16 * 1024
        let server = SyncEndpoint(
            identity: node, delegate: TrustingDelegate(trusting: peer.deviceID), group: group, threadPool: pool, settings: settings,
            logger: Logger(label: "test"), onEvent: { _ in })
        let listener = try await server.listen(host: "127.0.0.1", port: 0)
        // A small receive buffer: what the node sends piles up on its side, not in the kernel.
        let port = try #require(listener.localAddress?.port)
        let client = try #require(RawConnection(port: port, receiveBuffer: 4096, timeoutSeconds: 2))

        // The handshake and the streams' headers, then a hello: a trusted session.
        var initiator = try HandshakeInitiator(identity: peer, versions: SyncWire.versions)
        client.frame(initiator.start())
        let (reply, keys) = try initiator.receive(try #require(client.readFrame()))
        client.frame(reply)
        var sender = try keys.sendKey.withBytes { try SecretStreamSender(key: $0) }
        client.frame(sender.header)
        _ = try #require(client.readFrame()) // the node's stream header; nothing is read after it
        client.frame(try sender.seal(SyncMessage.hello(Hello(container: "app", zones: [])).encoded()))

        // Pings, 10,000 to a write, never reading a pong: the node must stop taking them.
        let ping = SyncMessage.ping.encoded()
        var accepted = 0
        var stalled = false
        let limit = 64 << 20
        while accepted < limit {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(32 * 10_000)
            for _ in 0..<10_000 { chunk += RawConnection.framed(try sender.seal(ping)) }
            let sent = client.send(chunk)
            accepted += sent
            if sent < chunk.count {
                stalled = true
                break
            }
        }
        print("unread peer: \(accepted) bytes of pings taken, stalled: \(stalled)")
        #expect(stalled, "the node read \(accepted) bytes of pings from a peer that reads nothing, and would have read more")
        // The pongs it queued stay near its bound (about 1 MiB plus one batch), not one per ping read.
        #expect(accepted < 16 << 20, "\(accepted) bytes of pings were taken")
        try? await listener.close()
        try? await pool.shutdownGracefully()
        try? await group.shutdownGracefully()
    }
}
