import Foundation
import LatticeCore
import LatticeCrypto
import LatticeDiscovery
import LatticeNode
import LatticeProtocol
import LatticeStore
import LatticeTransport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A peer's address: a host name or IP address and a TCP port.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`.
    public init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, let port = Int(portPart), (1...65535).contains(port) else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The node: it listens, dials its peers (reconnecting with backoff), runs a
/// sync session per trusted connection, and pushes local commits — from this
/// process or any other on the store — to every connected peer at once.
public final class SyncNode: Sendable {
    public struct Configuration: Sendable {
        /// Where to listen: `::` is every IPv4 and IPv6 address (plain `0.0.0.0` where
        /// the machine has no IPv6); nil port: do not listen (`sync --once`).
        public var listenHost = "::"
        public var port: Int?
        public var peers: [PeerAddress] = []
        /// Dial peers again when a connection ends.
        public var reconnect = true
        /// How long a peer has to prove its identity.
        public var handshakeTimeout: Duration = .seconds(10)
        /// How often an idle connection is checked with a ping.
        public var pingInterval: Duration = .seconds(15)
        /// A connection silent this long is dead (a pulled cable is noticed in this time).
        public var idleTimeout: Duration = .seconds(45)
        public var maximumConnectionsPerAddress = 8
        /// Write `node-status.json` for `lattice status` in other processes.
        public var publishesStatus = true
        /// Watch the store for commits by other processes through a wake-up
        /// socket; without one (or when it cannot be made) the node polls.
        public var usesWakeUpSocket = true
        /// How often the node looks for commits and trust changes when it has no wake-up socket.
        public var pollInterval: Duration = .milliseconds(500)
        /// Advertise this node and find peers by mDNS (DNS-SD `_lattice._tcp`), and
        /// dial trusted devices of the same container as they appear. Needs a listening port.
        public var discovers = false
        /// Makes the discovery service; tests give a fake.
        package var makeDiscovery: @Sendable (ServiceDiscovery.Advertisement, @escaping @Sendable (DiscoveryEvent) -> Void) -> any PeerDiscovery = { advertisement, onEvent in
            ServiceDiscovery(serviceType: LatticeService.type, advertisement: advertisement, onEvent: onEvent)
        }

        /// Who besides the account syncs the public database with this node (`lattice serve --public-from`).
        public var publicFrom: PublicSyncPolicy = .anyone
        /// The spam limit on what each stranger's public batches may bring.
        public var publicWriteAllowance: PublicWriteAllowance = .default
        /// Strangers dialed at most at once when discovered (for the public database).
        public var maximumStrangersDialed = 16
        /// Strangers' public-database sessions held at most at once; more are refused as strangers are.
        public var maximumPublicOnlySessions = 16
        /// An asset request a peer leaves unanswered this long is asked of another peer.
        public var assetReplyTimeout: Duration = .seconds(20)
        /// How often tombstones and content no record references any more are
        /// looked for, and removed once every device acknowledged what they need.
        public var assetCollectionInterval: Duration = .seconds(60)
        /// A device of the account not seen for this long stops holding
        /// tombstones back; when it returns it is told which records were
        /// collected meanwhile (`SyncMessage.collected`). Nil: the store's
        /// setting (`TombstoneHorizon`), 30 days unless set.
        public var tombstoneHorizon: Duration?

        /// Sessions only compare digests (`lattice diff`): nothing streams and no asset is fetched.
        public var comparesOnly = false
        /// After a sync, digests are compared with the peer at most this often
        /// (its first sync at once); zero turns the comparison off.
        public var verificationInterval: Duration = .seconds(10)

        public init() {}

        /// The transport's settings for these durations.
        var connection: ConnectionSettings {
            var settings = ConnectionSettings()
            settings.handshakeTimeout = TimeAmount(handshakeTimeout)
            settings.pingInterval = TimeAmount(pingInterval)
            settings.idleTimeout = TimeAmount(idleTimeout)
            settings.session.comparesOnly = comparesOnly
            return settings
        }
    }

    /// What the node reports, per peer and zone.
    public enum Event: Sendable, Hashable {
        case listening(port: Int)
        case connected(peer: String, address: String)
        /// Discovery found a device, or what it advertises changed; `problem` says why
        /// this node will not sync with it (nil: it will).
        case discovered(peer: String, addresses: [String], problem: String?)
        /// Discovery no longer sees the device (its connection, if any, stays until it ends).
        case vanished(peer: String)
        /// mDNS does not work (no daemon, …): only static peers and incoming connections sync. Retried by itself.
        case discoveryUnavailable(reason: String)
        case discoveryAvailable
        /// A device proved its identity but is not trusted here: it got nothing.
        /// At most 5 in 10 seconds are sent; `status.strangers` counts every one.
        case refused(peer: String, address: String)
        case unreachable(address: String, reason: String)
        case disconnected(peer: String?, address: String, reason: Disconnection?)
        case syncStarted(peer: String, zone: ZoneKey, direction: Direction, records: Int, bytes: Int)
        case progress(peer: String, zone: ZoneKey, direction: Direction, recordsDone: Int, recordsTotal: Int, bytesDone: Int, bytesTotal: Int)
        case syncFinished(peer: String, zone: ZoneKey, direction: Direction)
        /// Records from the peer were stamped beyond the clock-skew bound: they wait, and come again later.
        case deferred(peer: String, zone: ZoneKey, records: Int)
        /// Records from the peer were refused: a write they bring was not its
        /// writer's right (a non-creator's edit of a public record). The rest
        /// of the batch was applied; the peer's stream comes again later.
        case writesRefused(peer: String, zone: ZoneKey, records: Int, reason: String)
        /// Both sides have sent all they had and committed all they got.
        case caughtUp(peer: String)
        /// A device this node trusts does not trust it back: they sync the public database only.
        case publicOnly(peer: String)
        /// Asset content arrived from a peer: `bytesDone` of `bytesTotal` are here (hash in hex).
        case assetProgress(asset: String, peer: String, bytesDone: Int64, bytesTotal: Int64)
        /// An asset's content is whole and in the store: `fetchedBytes` came over the network, `resumedBytes` were found from an earlier, cut transfer.
        case assetFetched(asset: String, fetchedBytes: Int64, resumedBytes: Int64)
        /// A peer sent asset content that does not check against the asset's hash (chunk -1: its outline); nothing of it was written, and it is asked of another peer.
        case assetRejected(asset: String, peer: String, chunk: Int, reason: String)
    }

    public enum Direction: String, Sendable, Hashable { case receiving, sending }

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
    private func deferredRetryDelay(_ peer: DeviceID) -> TimeAmount {
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

    private func makeEndpoint() -> SyncEndpoint {
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
            return (state.runtime.listener, Array(state.dials.tasks.values), state.runtime.watcher, state.connections.all.map(\.connection), state.dials.inHandshake.values.map(\.channel))
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
    private func lockStore() throws(LatticeError) {
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

    // MARK: Dialing

    /// Changes the dial plan, then carries out what it says is due now, and
    /// wakes when it next has something due. Every input to the plan goes through here.
    func updateDialPlan(_ change: (inout DialPlan<PeerAddress>, NIODeadline) -> [DialPlan<PeerAddress>.Action] = { _, _ in [] }) {
        let now = NIODeadline.now()
        let (actions, wake) = state.withLockedValue { state -> ([DialPlan<PeerAddress>.Action], NIODeadline?) in
            guard !state.runtime.stopped else { return ([], nil) }
            let actions = change(&state.dials.plan, now) + state.dials.plan.due(at: now)
            guard let next = state.dials.plan.nextWake, state.dials.wakeAt.map({ next < $0 }) ?? true else { return (actions, nil) }
            state.dials.wakeAt = next
            return (actions, next)
        }
        if let wake {
            group.next().scheduleTask(deadline: wake) { [weak self] in
                guard let self else { return }
                self.state.withLockedValue { state in if state.dials.wakeAt == wake { state.dials.wakeAt = nil } }
                self.updateDialPlan()
            }
        }
        for action in actions { carryOut(action) }
    }

    var isStopped: Bool { state.withLockedValue { $0.runtime.stopped } }

    private func carryOut(_ action: DialPlan<PeerAddress>.Action) {
        switch action {
        case .dial(let address, let target):
            let id = state.withLockedValue { state in
                state.dials.made += 1
                return state.dials.made
            }
            let task = NodeTask.start { [weak self] in
                guard let self else { return }
                let outcome = await self.dial(address)
                self.state.withLockedValue { state in
                    if state.dials.tasks.removeValue(forKey: id) == nil { state.dials.endedEarly.insert(id) }
                }
                self.updateDialPlan { plan, now in plan.dialEnded(target, at: address, outcome, now: now, jitter: Self.jitter()) }
            }
            state.withLockedValue { state in
                if state.dials.endedEarly.remove(id) == nil { state.dials.tasks[id] = task }
            }
        case .unreachable(let address, let reason):
            continuation.yield(.unreachable(address: address.description, reason: reason))
        case .dialErrorChanged:
            reviewDiscovered()
        }
    }

    /// A wait's factor, 0.8–1.2: peers that lost each other at once do not all dial at once.
    static func jitter() -> Double { Double.random(in: 0.8...1.2) }

    /// Connects to `address` and waits until that connection ends.
    func dial(_ address: PeerAddress) async -> DialPlan<PeerAddress>.Outcome {
        let began = NIODeadline.now()
        do {
            let channel = try await endpoint.connect(host: address.host, port: address.port)
            let key = ObjectIdentifier(channel as AnyObject)
            let stopped = state.withLockedValue { state -> Bool in
                guard !state.runtime.stopped else { return true }
                state.dials.inHandshake[key] = (channel, address)
                // Its session may have started already: then learn whose address this is here.
                if let peer = state.connections.all.first(where: { $0.connection.connectionID == key })?.peer {
                    state.dials.plan.learned(address, is: peer)
                }
                return false
            }
            if stopped { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            state.withLockedValue { _ = $0.dials.inHandshake.removeValue(forKey: key) }
            return .ended(after: Double((NIODeadline.now() - began).nanoseconds) / 1e9)
        } catch {
            let reason = Self.describe(error)
            logger.info("cannot reach peer", metadata: ["address": "\(address)", "reason": "\(reason)"])
            return .unreachable(reason)
        }
    }

    /// A connection failure in a few words ("connection refused", "cannot resolve the host name").
    static func describe(_ error: Error) -> String {
        if let error = error as? NIOConnectionError {
            if let io = error.connectionErrors.lazy.compactMap({ $0.error as? IOError }).first { return describe(io) }
            if let first = error.connectionErrors.first { return "\(first.error)" }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve the host name \(error.host)" }
            return "no address found for \(error.host)"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        return "\(error)"
    }

    // MARK: Events

    /// A commit on the store, by any process (on the watcher's thread): sessions
    /// push it, and devices no longer trusted lose their sessions at once.
    func localCommit() {
        // The set first, then the connections: one registered after this
        // snapshot checks the new set itself (see `.authenticated`).
        do {
            try trustedDevices.reload()
        } catch {
            logger.warning("cannot read trust from the store; sessions keep the trust last read: \(error)")
        }
        let trusted = trustedDevices.all
        assetFetcher.refreshSoon()
        serveNodeRequests()
        let connections = state.withLockedValue { $0.connections }
        let discovering = state.withLockedValue { $0.discovery.service != nil }
        guard !connections.isEmpty || discovering else { return }
        if discovering { trustChanged(trusted) }
        // Read once for every session: what committed, and which peers' batches made it.
        let changes = connections.isEmpty ? nil : readLocalChanges()
        func push(_ handle: ConnectionHandle) {
            if let changes { handle.localCommit(changes) } else { handle.localCommit() }
        }
        for verdict in connections.review({ access(for: $0, trusted: trusted) }) {
            switch verdict {
            case .push(let handle):
                push(handle)
            case .widen(let handle):
                handle.widen()
                push(handle)
            case .close(let handle, let peer):
                // Trust began or ended: the next session streams what the device may sync now.
                logger.notice("closing a session whose device's trust changed", metadata: ["peer": "\(peer)"])
                handle.close()
            }
        }
    }

    private func handle(_ event: ConnectionEvent) {
        switch event {
        case .authenticated(let peer, let address, let handle):
            let id = peer.description
            let (registration, planned) = state.withLockedValue { state -> (ConnectionTable<ConnectionHandle>.Registration, [DialPlan<PeerAddress>.Action]) in
                // What trust grants now is read under the lock: a commit's sweep of the sessions either
                // sees this one, or ran after the trust this reads (`localCommit` reloads trust first).
                let registration = state.connections.authenticated(handle, peer: id, accessNow: access(for: id, trusted: trustedDevices.all))
                guard registration.verdict == .runs || registration.verdict == .duplicate else { return (registration, []) }
                if let dialed = state.dials.inHandshake[handle.connectionID] { state.dials.plan.learned(dialed.address, is: id) }
                updatePeer(&state, id) { $0.connected = true; $0.address = address; $0.access = handle.access.description; $0.lastError = nil; $0.lastErrorCause = nil }
                return (registration, state.dials.plan.connected(id))
            }
            for connection in registration.closing { connection.close() }
            for action in planned { carryOut(action) }
            switch registration.verdict {
            case .alreadyClosed: return
            case .trustChanged:
                logger.notice("closing a session whose device's trust changed", metadata: ["peer": "\(id)"])
                publishStatus()
                return
            case .duplicate:
                publishStatus()
                return
            case .runs: break
            }
            state.withLockedValue { _ = $0.sessions.deferredThisSession.remove(id) }
            // Remembered as strangers are (bounded, at most once a minute in the store), so a person can trust one.
            if !handle.access.isAccount { noteStranger(.publicOnly, address: PeerAddress(address)?.host ?? address, deviceID: id) }
            logger.info("connected", metadata: ["peer": "\(id)", "address": "\(address)"])
            continuation.yield(.connected(peer: id, address: address))
            assetFetcher.connectionsChanged()
        case .refused(let peer, let address):
            if peer.description == container.deviceID {
                continuation.yield(.unreachable(address: address, reason: "that address is this device itself"))
            } else {
                noteStranger(.untrusted, address: address, deviceID: peer.description)
                if announcesRefusal() { continuation.yield(.refused(peer: peer.description, address: address)) }
            }
        case .turnedAway(let address, let tooManyStrangers):
            noteStranger(tooManyStrangers ? .tooManyStrangers : .tooManyConnections, address: address)
        case .closed(let peer, let address, let closeReason):
            var reason = closeReason.map(Disconnection.init)
            if peer == nil, case .transport(let error) = closeReason, error.isHandshakeFailure {
                noteStranger(.handshakeFailed, address: PeerAddress(address)?.host ?? address)
            }
            if let peer {
                let id = peer.description
                let stillConnected = state.withLockedValue { state in
                    let (ended, connected) = state.connections.closed(peer: id)
                    for connection in ended { state.publishing.pastTraffic[id, default: Traffic()] += connection.traffic }
                    // Two devices that dialed each other at once both close the same one of the
                    // two connections; the other side's close looks like a refusal, but is not.
                    if connected, reason?.cause == .notTrustedByPeer { reason = .duplicateClosed }
                    // A stranger that synced the public database leaves the status with its session:
                    // identities cost nothing, so the list would grow with each (`peers` keeps the recent ones).
                    if !connected, !trustedDevices.all.contains(id) {
                        state.status.peers.removeAll { $0.deviceID == id }
                        return connected
                    }
                    // Only devices that had a session are shown: strangers are in `peers`, bounded.
                    guard state.status.peers.contains(where: { $0.deviceID == id }) else { return connected }
                    updatePeer(&state, id) { status in
                        status.connected = connected
                        if let reason, !connected {
                            status.lastError = reason.description
                            status.lastErrorCause = reason.cause
                        }
                        if !connected { for index in status.zones.indices { status.zones[index].state = "idle" } }
                    }
                    return connected
                }
                if !stillConnected { updateDialPlan { plan, now in plan.disconnected(id, at: now, jitter: Self.jitter()); return [] } }
            }
            if let peer { connectionEnded(peer.description) }
            if let peer { state.withLockedValue { state in state.collection.toldCollected = state.collection.toldCollected.filter { !$0.hasPrefix(peer.description + " ") } } }
            if peer != nil { assetFetcher.connectionsChanged() }
            // A refused stranger had its `refused` event (or its count in the status): no second one.
            if closeReason?.isRefusalOfStranger != true {
                continuation.yield(.disconnected(peer: peer?.description, address: address, reason: reason))
            }
        case .session(let peer, let sessionEvent):
            handleSession(peer.description, sessionEvent)
        }
        publishStatus()
    }

    private func handleSession(_ peer: String, _ event: SyncSession.SessionEvent) {
        switch event {
        case .started(let granted):
            // A device this node trusts that does not trust it back syncs the public database only.
            if !granted.isAccount, trustedDevices.all.contains(peer) {
                continuation.yield(.publicOnly(peer: peer))
            }
            assetFetcher.connectionsChanged() // it may now sync zones whose assets are wanted
            // Shared zones widen a session after its start: the status shows what it has now.
            state.withLockedValue { state in
                guard let access = state.connections[peer]?.first?.access else { return }
                updatePeer(&state, peer) { $0.access = access.description }
            }
            // Strangers come and go by the thousand in a flood: only relaying sessions change the lists.
            if state.withLockedValue({ $0.connections[peer]?.contains { $0.relays } ?? false }) { neighborsChanged() }
        case .receiving(let zone, let records, let bytes):
            streamsRun(peer)
            startStream(peer, zone, .receiving, records, bytes)
        case .sending(let zone, let records, let bytes):
            streamsRun(peer)
            startStream(peer, zone, .sending, records, bytes)
        case .received(let zone, let records, let bytes, let final):
            streamsRun(peer)
            advance(peer, zone, .receiving, records, bytes, final)
            if records > 0 { assetFetcher.refreshSoon() }
        case .assetReply(let reply):
            assetFetcher.received(reply, from: peer)
        case .reconcileReply: break // the connection's reconciliation takes it
        case .neighbors(let devices):
            peerNeighbors(peer, devices)
        case .peerHolds(let zone, let vector):
            // Only the private zones' acknowledgements are used (tombstone and asset collection): the public
            // database's strangers' went into memory and into every pass's store write, a second under a flood.
            guard zone.scope == .private else { break }
            state.withLockedValue { state in
                let before = state.collection.peerHolds[peer]?[zone] ?? VersionVector()
                guard !before.dominates(vector) else { return }
                state.collection.peerHolds[peer, default: [:]][zone] = before.joined(with: vector)
                state.collection.peerHoldsChanged = true
            }
            tellCollectedIfAway(peer, zone: zone, holding: vector)
        case .delivered(let zone, let records, let bytes, let final):
            streamsRun(peer)
            advance(peer, zone, .sending, records, bytes, final)
        case .quiescent:
            state.withLockedValue { state in
                if !state.sessions.deferredThisSession.contains(peer) {
                    state.sessions.deferrals[peer] = nil
                    updatePeer(&state, peer) { $0.clockSkew = nil }
                }
            }
            continuation.yield(.caughtUp(peer: peer))
            verifySoon(peer)
        case .deferred(let zone, let records):
            state.withLockedValue { state in
                if state.sessions.deferredThisSession.insert(peer).inserted { state.sessions.deferrals[peer, default: 0] += 1 }
                updatePeer(&state, peer) { $0.clockSkew = true }
            }
            logger.warning("records deferred: the peer's clock is ahead of this one's by more than the skew bound", metadata: ["peer": "\(peer)", "zone": "\(zone)", "records": "\(records)"])
            continuation.yield(.deferred(peer: peer, zone: zone, records: records))
        case .refused(let zone, let records, let reason):
            state.withLockedValue { state in
                updatePeer(&state, peer) { status in
                    status.refusedRecords = (status.refusedRecords ?? 0) + records
                    status.lastRefusal = reason
                }
            }
            logger.warning("records refused", metadata: ["peer": "\(peer)", "zone": "\(zone)", "records": "\(records)", "reason": "\(reason)"])
            continuation.yield(.writesRefused(peer: peer, zone: zone, records: records, reason: reason))
        }
    }

    private func startStream(_ peer: String, _ zone: ZoneKey, _ direction: Direction, _ records: Int, _ bytes: Int) {
        _ = state.withLockedValue { state in
            updateZone(&state, peer, zone, direction) { progress in
                progress.state = "syncing"
                progress.recordsDone = 0
                progress.bytesDone = 0
                progress.recordsTotal = records
                progress.bytesTotal = bytes
            }
        }
        continuation.yield(.syncStarted(peer: peer, zone: zone, direction: direction, records: records, bytes: bytes))
    }

    private func advance(_ peer: String, _ zone: ZoneKey, _ direction: Direction, _ records: Int, _ bytes: Int, _ final: Bool) {
        let progress = state.withLockedValue { state in
            updateZone(&state, peer, zone, direction) { progress in
                progress.recordsDone += records
                progress.bytesDone += bytes
                progress.recordsTotal = max(progress.recordsTotal, progress.recordsDone)
                progress.bytesTotal = max(progress.bytesTotal, progress.bytesDone)
                if final {
                    progress.recordsTotal = progress.recordsDone
                    progress.bytesTotal = progress.bytesDone
                    progress.state = "idle"
                    progress.lastSync = RecordStore.systemWallClock()
                }
            }
        }
        if let progress {
            continuation.yield(.progress(
                peer: peer, zone: zone, direction: direction, recordsDone: progress.recordsDone, recordsTotal: progress.recordsTotal,
                bytesDone: progress.bytesDone, bytesTotal: progress.bytesTotal))
        }
        if final { continuation.yield(.syncFinished(peer: peer, zone: zone, direction: direction)) }
    }

    func updatePeer(_ state: inout State, _ peer: String, _ body: (inout NodeStatus.PeerStatus) -> Void) {
        if let index = state.status.peers.firstIndex(where: { $0.deviceID == peer }) {
            body(&state.status.peers[index])
        } else {
            var status = NodeStatus.PeerStatus(deviceID: peer, address: "", connected: false, zones: [], lastError: nil)
            body(&status)
            state.status.peers.append(status)
        }
    }

    @discardableResult
    private func updateZone(_ state: inout State, _ peer: String, _ zone: ZoneKey, _ direction: Direction, _ body: (inout NodeStatus.ZoneProgress) -> Void) -> NodeStatus.ZoneProgress? {
        var result: NodeStatus.ZoneProgress?
        updatePeer(&state, peer) { status in
            let name = zone.zoneID.zoneName
            if let index = status.zones.firstIndex(where: { $0.zone == name && $0.direction == direction.rawValue }) {
                body(&status.zones[index])
                result = status.zones[index]
            } else {
                var progress = NodeStatus.ZoneProgress(zone: name, direction: direction.rawValue, state: "syncing", recordsDone: 0, recordsTotal: 0, bytesDone: 0, bytesTotal: 0, lastSync: nil)
                body(&progress)
                status.zones.append(progress)
                result = progress
            }
        }
        return result
    }

    /// Writes the status file when `StatusDebounce` says.
    func publishStatus() {
        guard configuration.publishesStatus else { return }
        let delay = state.withLockedValue { state -> TimeAmount? in
            guard !state.runtime.stopped else { return nil }
            return state.publishing.debounce.changed(at: .now())
        }
        guard let delay else { return }
        let directory = container.directory
        group.next().scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            let status = self.state.withLockedValue { state -> NodeStatus? in
                state.publishing.debounce.writing(at: .now())
                guard !state.runtime.stopped else { return nil }
                self.countTraffic(&state)
                return state.status
            }
            status?.write(store: directory)
        }
    }
}

extension TimeAmount {
    /// A Swift `Duration` as NIO's time amount (nanoseconds, saturating).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = .nanoseconds(nanoseconds.overflow ? .max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000)
    }
}
