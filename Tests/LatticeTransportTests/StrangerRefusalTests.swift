import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
@testable import LatticeTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import LatticeTestSupport
import Testing

/// Real endpoints on loopback: a stranger is refused from memory, at once,
/// whatever the node's store threads are doing.
@Suite struct StrangerRefusalTests {
    /// Trusts a fixed set; its store calls block until released, as a long store write would make them.
    final class BlockingDelegate: SyncDelegate, @unchecked Sendable {
        let trusted: Set<DeviceID>
        let gate = DispatchSemaphore(value: 0)
        let hellos = NIOLockedValueBox(0)
        let blocks: Bool
        /// Strangers may sync the public database.
        let openToStrangers: Bool

        init(trusting trusted: Set<DeviceID>, blocks: Bool, openToStrangers: Bool = false) {
            self.trusted = trusted
            self.blocks = blocks
            self.openToStrangers = openToStrangers
        }

        func access(for peer: DeviceID) -> PeerAccess? { trusted.contains(peer) ? .account : openToStrangers ? .publicOnly : nil }
        func noteConnected(_ peer: DeviceID, address: String) throws {}
        func hello(for peer: DeviceID) throws -> Hello {
            hellos.withLockedValue { $0 += 1 }
            if blocks { gate.wait() }
            return Hello(container: "app", zones: [])
        }
        func zones() throws -> [ZoneKey] { [] }
        func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch? { nil }
        func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch { AppliedBatch(vector: VersionVector(), recordsChanged: 0) }
        func adoptRoster(_ roster: [UInt8], from peer: DeviceID) throws {}
        func roster() throws -> [UInt8] { [] }
    }

    final class Events: @unchecked Sendable {
        let list = NIOLockedValueBox<[ConnectionEvent]>([])
        func add(_ event: ConnectionEvent) { list.withLockedValue { $0.append(event) } }
        var refusals: Int { list.withLockedValue { $0.filter { if case .refused = $0 { true } else { false } }.count } }
        var refusedByPeer: Int {
            list.withLockedValue { $0.filter { if case .closed(_, _, .transport(.refusedByPeer)?) = $0 { true } else { false } }.count }
        }
    }

    @Test func strangersSyncingThePublicDatabaseAreBoundedInNumber() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let logger = Logger(label: "test")
        let node = try Identity.generate()
        let nodeEvents = Events()
        let server = SyncEndpoint(
            identity: node, delegate: BlockingDelegate(trusting: [], blocks: false, openToStrangers: true), group: group, threadPool: pool,
            maximumPublicOnlySessions: 2, logger: logger, onEvent: nodeEvents.add)
        let listener = try await server.listen(host: "127.0.0.1", port: 0)
        let port = try #require(listener.localAddress?.port)
        func stranger() async throws -> Channel {
            let identity = try Identity.generate()
            let client = SyncEndpoint(
                identity: identity, delegate: BlockingDelegate(trusting: [node.deviceID], blocks: false), group: group, threadPool: pool,
                logger: logger, onEvent: { _ in })
            return try await client.connect(host: "127.0.0.1", port: port)
        }
        var authenticated: Int {
            nodeEvents.list.withLockedValue { $0.filter { if case .authenticated = $0 { true } else { false } }.count }
        }
        var channels: [Channel] = []
        for _ in 0..<4 { channels.append(try await stranger()) }
        #expect(await eventually(120) { authenticated == 2 && nodeEvents.refusals == 2 })
        // A session that ends makes room for the next stranger (the refused ones' connections end first).
        #expect(await eventually(120) { channels.filter(\.isActive).count == 2 })
        let first = channels.first { $0.isActive }
        try await first?.close()
        channels.append(try await stranger())
        #expect(await eventually(120) { authenticated == 3 })
        for channel in channels { try? await channel.close() }
        try await listener.close()
        try await pool.shutdownGracefully()
        try await group.shutdownGracefully()
    }

    @Test func strangersAreRefusedWhileEveryStoreThreadIsBusy() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let logger = Logger(label: "test")
        let node = try Identity.generate()
        let friends = try [Identity.generate(), Identity.generate()]
        let delegate = BlockingDelegate(trusting: Set(friends.map(\.deviceID)), blocks: true)
        let nodeEvents = Events()
        // The friends' sessions wait on blocked hellos for as long as the test takes (a loaded CI machine
        // can take minutes): no keepalive may end them meanwhile.
        var patient = ConnectionSettings()
        patient.pingInterval = .seconds(600)
        patient.idleTimeout = .seconds(1200)
        let server = SyncEndpoint(identity: node, delegate: delegate, group: group, threadPool: pool, settings: patient, logger: logger, onEvent: nodeEvents.add)
        let listener = try await server.listen(host: "127.0.0.1", port: 0)
        let port = try #require(listener.localAddress?.port)
        // Two trusted devices take both store threads (their hellos block).
        var channels: [Channel] = []
        for friend in friends {
            let client = SyncEndpoint(identity: friend, delegate: BlockingDelegate(trusting: [node.deviceID], blocks: false), group: group, threadPool: pool, settings: patient, logger: logger, onEvent: { _ in })
            channels.append(try await client.connect(host: "127.0.0.1", port: port))
        }
        #expect(await eventually(120) { delegate.hellos.withLockedValue { $0 } == 2 })
        // Strangers now: each is refused though no store thread is free.
        let strangerEvents = Events()
        // One after another, each refused before the next comes (so none meets the per-source bound of pending handshakes).
        for index in 0..<20 {
            let stranger = SyncEndpoint(identity: try Identity.generate(), delegate: BlockingDelegate(trusting: [node.deviceID], blocks: false), group: group, threadPool: pool, logger: logger, onEvent: strangerEvents.add)
            channels.append(try await stranger.connect(host: "127.0.0.1", port: port))
            #expect(await eventually(120) { strangerEvents.refusedByPeer == index + 1 }, "stranger \(index + 1) was not refused")
            // And gone from the node's count before the next comes: on a slow machine the node closes
            // it after the stranger hears its refusal, and all come from one address.
            #expect(await eventually(120) { server.limiter.count == 2 }, "stranger \(index + 1) is still counted")
        }
        #expect(nodeEvents.refusals == 20)
        #expect(server.limiter.count == 2) // the strangers are gone, the friends stay
        for _ in 0..<10 { delegate.gate.signal() }
        for channel in channels { try? await channel.close() }
        try? await listener.close()
        try? await pool.shutdownGracefully()
        try? await group.shutdownGracefully()
    }
}
