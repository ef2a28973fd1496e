import Foundation
@testable import LatticeCrypto
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import LatticeTestSupport
@testable import LatticeTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing
@_spi(Tools) import LatticeCrypto

/// The session handler alone, in an `EmbeddedChannel`: the handshake's
/// outcome comes in as its event, frames as reads, with no socket.
@Suite struct SyncSessionHandlerTests {
    /// The handler on a `NIOAsyncTestingChannel`, whose loop the thread pool may complete work on.
    struct Rig {
        let channel = NIOAsyncTestingChannel()
        let events = StrangerRefusalTests.Events()
        let pool = NIOThreadPool(numberOfThreads: 1)
        let delegate: StrangerRefusalTests.BlockingDelegate

        init(trusting trusted: Set<DeviceID>) async throws {
            pool.start()
            let delegate = StrangerRefusalTests.BlockingDelegate(trusting: trusted, blocks: false)
            self.delegate = delegate
            let (events, pool, channel) = (events, pool, channel)
            try await channel.testingEventLoop.executeInContext {
                let handler = SyncSessionHandler(delegate: delegate, threadPool: pool, settings: ConnectionSettings(), logger: Logger(label: "test")) { events.add($0) }
                try channel.pipeline.syncOperations.addHandler(handler)
            }
            // Active, as a connection whose handshake just finished is.
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.2", port: 7766))
        }

        /// What the handshake handler sends up once the peer proved `identity`.
        func handshakeCompleted(by identity: Identity) async throws {
            var kx = (send: [UInt8](repeating: 1, count: 32), receive: [UInt8](repeating: 2, count: 32))
            let result = try HandshakeResult(peerPublicKey: identity.publicKey, version: SyncWire.versions.upperBound, kx: &kx, transcript: [3], directions: (send: "a", receive: "b"))
            channel.pipeline.fireUserInboundEventTriggered(HandshakeCompleted(result: result, initiator: false))
            await channel.testingEventLoop.run()
        }

        func stop() async throws {
            _ = try? await channel.finish(acceptAlreadyClosed: true)
            try await pool.shutdownGracefully()
        }
    }

    @Test func aStrangerIsRefusedAtOnceAndCostsNoStoreAccess() async throws {
        let rig = try await Rig(trusting: [])
        let stranger = try Identity.generate()
        #expect(rig.channel.isActive)
        try await rig.handshakeCompleted(by: stranger)
        #expect(!rig.channel.isActive, "the stranger's connection stayed open")
        #expect(rig.events.list.withLockedValue { $0 }.contains { if case .refused(let peer, _) = $0 { peer == stranger.deviceID } else { false } })
        #expect(rig.delegate.hellos.withLockedValue { $0 } == 0, "the store was asked for a stranger")
        try await rig.stop()
    }

    @Test func aTrustedPeerStartsASessionAndBytesThatAreNoMessageCloseIt() async throws {
        let friend = try Identity.generate()
        let rig = try await Rig(trusting: [friend.deviceID])
        try await rig.handshakeCompleted(by: friend)
        // The hello is asked for off the event loop; its answer comes back through the loop.
        let started = await eventually(30) {
            await rig.channel.testingEventLoop.run()
            return rig.events.list.withLockedValue { $0 }.contains { if case .authenticated(let peer, _, _) = $0 { peer == friend.deviceID } else { false } }
        }
        #expect(started, "no session started: \(rig.events.list.withLockedValue { $0 })")
        // The session's opening went out: the hello, as a frame of bytes.
        #expect(try await rig.channel.readOutbound(as: ByteBuffer.self) != nil)
        try await rig.channel.writeInbound(ByteBuffer(bytes: [0xFF, 0xFE, 0xFD]))
        await rig.channel.testingEventLoop.run()
        #expect(!rig.channel.isActive, "a malformed message left the connection open")
        #expect(rig.events.list.withLockedValue { $0 }.contains { if case .closed(_, _, .protocolError?) = $0 { true } else { false } }, "\(rig.events.list.withLockedValue { $0 })")
        try await rig.stop()
    }
}
