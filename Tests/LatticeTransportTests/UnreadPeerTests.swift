import Foundation
import LatticeCore
import LatticeCrypto
import LatticeProtocol
@testable import LatticeTransport
import Logging
import NIOCore
import NIOPosix
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A trusted peer that sends pings and never reads the pongs: once more is
/// queued for it than an honest session ever queues, the node stops reading
/// from it, so what waits in the node's memory stays bounded.
@Suite struct UnreadPeerTests {
    /// A blocking client socket that speaks the protocol by hand and reads only when told.
    final class RawPeer {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            // A small receive buffer: what the node sends piles up on its side, not in the kernel.
            var small: Int32 = 4096
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0)
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(fd) }

        /// Sends all of `bytes`; returns how many went before the node stopped taking them for 2 s.
        @discardableResult
        func send(_ bytes: [UInt8]) -> Int {
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
            return sent
        }

        func frame(_ payload: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + payload }

        func readFrame() -> [UInt8]? {
            guard let header = read(4) else { return nil }
            return read(Int(header.reduce(0) { $0 << 8 | UInt32($1) }))
        }

        private func read(_ count: Int) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
                if n <= 0 { return nil }
                got += n
            }
            return out
        }
    }

    final class TrustingDelegate: SyncDelegate, @unchecked Sendable {
        let trusted: DeviceID
        init(trusting trusted: DeviceID) { self.trusted = trusted }
        func isTrusted(_ peer: DeviceID) -> Bool { peer == trusted }
        func noteConnected(_ peer: DeviceID, address: String) throws {}
        func hello(for peer: DeviceID) throws -> Hello { Hello(container: "app", zones: []) }
        func zones() throws -> [ZoneKey] { [] }
        func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch? { nil }
        func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch { AppliedBatch(vector: VersionVector(), recordsChanged: 0) }
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
        let client = try RawPeer(port: try #require(listener.localAddress?.port))

        // The handshake and the streams' headers, then a hello: a trusted session.
        var initiator = try HandshakeInitiator(identity: peer, versions: SyncWire.versions)
        client.send(client.frame(initiator.start()))
        let (reply, keys) = try initiator.receive(try #require(client.readFrame()))
        client.send(client.frame(reply))
        var sender = try keys.sendKey.withBytes { try SecretStreamSender(key: $0) }
        client.send(client.frame(sender.header))
        _ = try #require(client.readFrame()) // the node's stream header; nothing is read after it
        client.send(client.frame(try sender.seal(SyncMessage.hello(Hello(container: "app", zones: [])).encoded())))

        // Pings, 10,000 to a write, never reading a pong: the node must stop taking them.
        let ping = SyncMessage.ping.encoded()
        var accepted = 0
        var stalled = false
        let limit = 64 << 20
        while accepted < limit {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(32 * 10_000)
            for _ in 0..<10_000 { chunk += try client.frame(sender.seal(ping)) }
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
