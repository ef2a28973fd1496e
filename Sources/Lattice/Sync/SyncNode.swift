import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeDiscovery
import LatticeNode
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The node: it listens, dials its peers (reconnecting with backoff), runs a
/// sync session per trusted connection, and pushes local commits — from this
/// process or any other on the store — to every connected peer at once.
public final class SyncNode: Sendable {
    /// What the node holds, in parts named for what they hold; under one lock (`state`).
    struct State {
        /// Sessions per device (`ConnectionTable`: one per device, crossed dials settled alike on both sides).
        var connections: ConnectionTable<ConnectionHandle>
        var dials: Dials
        var discovery: Discovering
        /// Connections turned away: counted (bounded), saved, announced (`StrangerWatch`).
        var strangers = StrangerWatch(at: .now())
        /// What `lattice status` shows.
        var status: NodeStatus
        var publishing = Publishing()
        var collection = Collection()
        var sessions = SessionFollowUps()
        var relay = Relay()
        var runtime = Runtime()
        /// The zones this device replicates, as sessions were told (selective sync).
        var replication = Replication()
    }

    /// Which zones this device replicates: all but `excluded`, and of the private ones only `only` if set.
    struct Replication: Equatable {
        var excluded = Set<ZoneKey>()
        var only: Set<ZoneKey>?

        init() {}

        init(_ snapshot: StoreSnapshot) throws {
            excluded = try snapshot.excludedZones()
            only = try snapshot.onlyZones()
        }
    }

    public let container: Container
    public let configuration: Configuration
    /// Trust as of the last wake-up: answered at once, on the network's thread.
    let trustedDevices: TrustedDevices
    let logger: Logger
    let group: MultiThreadedEventLoopGroup
    let threadPool: NIOThreadPool
    /// Reconciliation rounds, which may hash a whole zone first: one thread of their own.
    let backgroundPool: NIOThreadPool
    let state: NIOLockedValueBox<State>
    let continuation: AsyncStream<Event>.Continuation
    /// Every event, in order; one consumer.
    public let events: AsyncStream<Event>
    /// Fetches the content of assets records here reference.
    let assetFetcher: AssetFetcher

    public init(container: Container, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "lattice.node")) {
        self.container = container
        self.configuration = configuration
        self.logger = logger
        trustedDevices = TrustedDevices(store: container.store)
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        threadPool = NIOThreadPool(numberOfThreads: 2)
        backgroundPool = NIOThreadPool(numberOfThreads: 1)
        let status = NodeStatus(pid: getpid(), startedAt: RecordStore.systemWallClock(), listeningPort: nil, peers: [])
        state = NIOLockedValueBox(State(
            connections: ConnectionTable<ConnectionHandle>(ownDeviceID: container.deviceID),
            dials: Dials(plan: DialPlan<PeerAddress>(ownDeviceID: container.deviceID, reconnects: configuration.reconnect)),
            discovery: Discovering(found: DiscoveredPeers(ownDeviceID: container.deviceID, container: container.containerIdentifier, versions: SyncWire.versions)),
            status: status))
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(10_000))
        let state = state
        var assetSettings = AssetFetcher.Settings()
        assetSettings.schedule.replyTimeout = TimeAmount(configuration.assetReplyTimeout)
        let fetchesAssets = !configuration.comparesOnly
        assetFetcher = AssetFetcher(store: container.store, settings: assetSettings) {
            guard fetchesAssets else { return [] }
            return state.withLockedValue { state in state.connections.all.map { (peer: $0.peer, handle: $0.connection) } }
        }
        assetFetcher.report = { [weak self] report in self?.handleAssetReport(report) }
    }

    /// What `peer` may sync with this node, given the trusted set.
    func access(for peer: String, trusted: Set<String>) -> PeerAccess? {
        if trusted.contains(peer) { return .account }
        return StoreSyncAdapter.access(publicFrom: configuration.publicFrom, sharedZones: DeviceID(peer).map(trustedDevices.sharedZones) ?? [])
    }

    /// Retry after deferred records: 30 s, doubling per session in a row that deferred again, up to an hour.
    func deferredRetryDelay(_ peer: DeviceID) -> TimeAmount {
        let count = state.withLockedValue { $0.sessions.deferrals[peer.description, default: 1] }
        return .seconds(Int64(min(3600, 30 << min(7, max(0, count - 1)))))
    }

    /// The endpoint every connection of this node goes through (one connection limiter), made at start.
    var endpoint: SyncEndpoint {
        state.withLockedValue { state in
            if let endpoint = state.runtime.endpoint { return endpoint }
            let endpoint = makeEndpoint()
            state.runtime.endpoint = endpoint
            return endpoint
        }
    }

    func makeEndpoint() -> SyncEndpoint {
        var settings = configuration.connection
        settings.deferredRetry = { [weak self] peer in self?.deferredRetryDelay(peer) ?? .seconds(30) }
        return SyncEndpoint(
            identity: container.store.identity,
            delegate: StoreSyncAdapter(
                store: container.store, container: container.containerIdentifier, trusted: trustedDevices,
                publicFrom: configuration.publicFrom, allowance: configuration.publicWriteAllowance),
            group: group, threadPool: threadPool, backgroundPool: backgroundPool, settings: settings,
            maximumConnectionsPerAddress: configuration.maximumConnectionsPerAddress,
            maximumPublicOnlySessions: configuration.maximumPublicOnlySessions, logger: logger,
            onEvent: { [weak self] event in self?.handle(event) })
    }

    /// Starts listening, watching the store for commits, and dialing peers.
    /// Fails with networkUnavailable if the port cannot be bound.
    public func start() async throws(LatticeError) {
        if configuration.publishesStatus { try lockStore() }
        _ = try LatticeError.wrap { try trustedDevices.reload() }
        let replication = (try? container.store.read { try Replication($0) }) ?? Replication()
        state.withLockedValue { $0.replication = replication }
        // Shares revoked under an earlier build name no vouched writes: their owner's devices vouch now,
        // before any participant drops what the revocation would otherwise void.
        try? container.store.write { transaction in
            // Removals made under an earlier build are not in the shares yet: other accounts learn of them from there.
            try transaction.recordAccountRemovalsInShares()
            let own = transaction.accounts(of: transaction.replica)
            for zone in try transaction.zones(in: .shared).map(\.key) where own.contains(zone.zoneID.ownerName) {
                _ = try transaction.settleRevocations(in: zone)
            }
        }
        threadPool.start()
        backgroundPool.start()
        let endpoint = endpoint
        if let port = configuration.port {
            do {
                let listener: Channel
                do {
                    listener = try await endpoint.listen(host: configuration.listenHost, port: port)
                } catch let error as IOError where configuration.listenHost == "::" && [EAFNOSUPPORT, EADDRNOTAVAIL].contains(error.errnoCode) {
                    listener = try await endpoint.listen(host: "0.0.0.0", port: port) // no IPv6 here
                }
                let bound = listener.localAddress?.port ?? port
                state.withLockedValue {
                    $0.runtime.listener = listener
                    $0.status.listeningPort = bound
                }
                logger.info("listening", metadata: ["address": "\(configuration.listenHost):\(bound)"])
                continuation.yield(.listening(port: bound))
            } catch {
                let inUse = (error as? IOError)?.errnoCode == EADDRINUSE
                throw LatticeError(.networkUnavailable, "cannot listen on \(configuration.listenHost):\(port): \(Self.describe(error))\(inUse ? " (another program uses the port; pick one with --port, or 0 for any)" : "")")
            }
        }
        watchCommits()
        startTrafficTicker()
        assetFetcher.refreshSoon()
        startAssetCollection()
        for peer in configuration.peers { addPeer(peer) }
        if configuration.discovers, let port = listeningPort { startDiscovery(port: port) }
        publishStatus()
    }

    /// Dials `address` (again whenever the connection ends, if the node reconnects).
    public func addPeer(_ address: PeerAddress) {
        updateDialPlan { plan, now in
            plan.add(address, at: now)
            return []
        }
    }

    /// The port the node listens on, once started.
    public var listeningPort: Int? { state.withLockedValue { $0.status.listeningPort } }

    /// What the node reports now: peers, progress, strangers turned away, how it hears of commits.
    public var status: NodeStatus { state.withLockedValue { $0.status } }

    /// Devices with a running session.
    public var connectedPeers: [String] { state.withLockedValue { $0.connections.peers.sorted() } }

    /// The session with `peer`, if one runs.
    func connection(to peer: String) -> ConnectionHandle? { state.withLockedValue { $0.connections[peer]?.first } }

    /// Stops: closes every connection (each ends its stream in order), stops dialing and watching.
    public func stop() async {
        let (listener, dialers, watcher, handles, dialing) = state.withLockedValue { state in
            state.runtime.stopped = true
            state.dials.plan.stop()
            return (state.runtime.listener, Array(state.dials.running.values), state.runtime.watcher, state.connections.all.map(\.connection), state.dials.inHandshake.values.map(\.channel))
        }
        assetFetcher.stop()
        state.withLockedValue { $0.collection.timer }?.cancel()
        state.withLockedValue { $0.publishing.ticker }?.cancel()
        stopDiscovery()
        watcher?.stop()
        state.withLockedValue { $0.runtime.poller }?.cancel()
        saveStrangers()
        for handle in handles { handle.close() }
        for channel in dialing { channel.close(promise: nil) } // connections still in their handshake
        try? await listener?.close()
        for dialer in dialers { await dialer.value }
        try? await Task.sleep(nanoseconds: 50_000_000) // let the closes reach the wire
        try? await threadPool.shutdownGracefully()
        try? await backgroundPool.shutdownGracefully()
        try? await group.shutdownGracefully()
        continuation.finish()
        let lock = state.withLockedValue { $0.runtime.lock }
        if lock >= 0 {
            try? FileManager.default.removeItem(at: container.directory.appendingPathComponent(NodeStatus.fileName))
            close(lock)
        }
    }

    /// One publishing node per store: a second one would overwrite its status.
    func lockStore() throws(LatticeError) {
        let path = container.directory.appendingPathComponent("node.lock").path
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        guard fd >= 0 else { throw LatticeError(.internalError, "cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            let pid = NodeStatus.read(store: container.directory).map { " (pid \($0.pid))" } ?? ""
            throw LatticeError(.permissionFailure, "a node already runs on \(container.directory.path)\(pid); stop it first, or use `lattice sync --once`")
        }
        state.withLockedValue { $0.runtime.lock = fd }
    }

}
