@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// What happens on a connection, for the node that owns it.
package enum ConnectionEvent: Sendable {
    /// The handshake passed and the peer may sync (its account's databases, or the public one alone, as `handle.access` says): the session starts.
    case authenticated(peer: DeviceID, address: String, handle: ConnectionHandle)
    /// The peer proved its identity but is not trusted: it got nothing, and
    /// cost no store access (`address` is its IP address, no port).
    case refused(peer: DeviceID, address: String)
    /// A connection from `address` (an IP address) was refused or evicted
    /// before its handshake finished: too many from its source, or in total
    /// (`tooManyStrangers`: its source spent its allowance of strangers).
    case turnedAway(address: String, tooManyStrangers: Bool)
    case session(peer: DeviceID, SyncSession.SessionEvent)
    case closed(peer: DeviceID?, address: String, reason: CloseReason?)
}

/// What a reconciliation found, and what it cost.
public struct ReconcileOutcome: Sendable {
    /// The zones compared.
    public var zones: [ZoneKey] = []
    /// The records (or zone states) held differently on the two sides.
    public var differences: [DigestDifference] = []
    /// Rounds sent (round trips).
    public var rounds = 0
    /// Bytes of digests sent to the peer.
    public var bytesSent = 0
    /// Bytes of digests received from it.
    public var bytesReceived = 0
    package init() {}
}

/// Why a reconciliation could not run.
package enum ReconcileFailure: Error, Sendable, CustomStringConvertible {
    case busy, notStarted, notAccount, olderPeer
    case ended(String)

    package var description: String {
        switch self {
        case .busy: return "a reconciliation with this peer is already under way"
        case .notStarted: return "the session with this peer has not started"
        case .notAccount: return "digests are compared within the account only, and this device is not of this one's"
        case .olderPeer: return "the peer runs an older Lattice (protocol version 1), which does not compare digests: update it"
        case .ended(let reason): return "the connection ended before the comparison finished: \(reason)"
        }
    }
}

/// Timing and size settings of a connection.
package struct ConnectionSettings: Sendable {
    package var handshakeTimeout: TimeAmount = .seconds(10)
    /// A ping goes out after this long without sending, or without hearing
    /// from the peer (its pong proves the connection still carries data).
    package var pingInterval: TimeAmount = .seconds(15)
    /// Nothing heard for this long closes the connection (idle or half-open).
    package var idleTimeout: TimeAmount = .seconds(45)
    /// After a peer sent records stamped too far in the future, the session
    /// ends this long after (asked per peer, so the node can back off), and
    /// the stream comes again once clocks allow.
    package var deferredRetry: @Sendable (DeviceID) -> TimeAmount = { _ in .seconds(30) }
    package var session = SyncSession.Configuration()
    package init() {}
}

/// Messages a connection carried, pings and pongs aside: what relaying saves shows here.
package struct Traffic: Hashable, Sendable {
    package var sent = 0
    package var received = 0
    package init() {}

    package static func += (total: inout Traffic, more: Traffic) {
        total.sent += more.sent
        total.received += more.received
    }
}

/// A way to reach a connection's session from outside its event loop.
package struct ConnectionHandle: Sendable, Hashable {
    let channel: Channel
    let handler: NIOLoopBound<SyncSessionHandler>
    package let initiator: Bool
    let accessBox: NIOLockedValueBox<PeerAccess?>
    let comparingBox: NIOLockedValueBox<Bool>
    let trafficBox: NIOLockedValueBox<Traffic>
    let relayingBox: NIOLockedValueBox<Bool>
    /// The session relays (`SyncSession.relaying`): both sides relay and grant each other the account.
    package var relays: Bool { relayingBox.withLockedValue { $0 } }
    /// Either side only compares digests (`lattice diff`): nothing streams on it.
    package var comparesOnly: Bool { comparingBox.withLockedValue { $0 } }
    /// What the peer may sync on this connection: as its handshake found it,
    /// widened by shared zones its account opens (`widen`).
    package var access: PeerAccess { accessBox.withLockedValue { $0 } ?? PeerAccess(scopes: []) }

    /// Local commits happened: the session re-opens its streams (reading what changed itself).
    package func localCommit() {
        let handler = handler
        channel.eventLoop.execute { handler.value.localCommit() }
    }

    /// Local commits happened, as the node read them once for all its
    /// sessions: each skips what it need not relay (`SyncSession.localCommit(zones:roster:changes:)`).
    package func localCommit(_ changes: LocalChanges) {
        let handler = handler
        channel.eventLoop.execute { handler.value.mutateSession { $0.localCommit(zones: changes.zones, roster: changes.roster, changes: changes) } }
    }

    /// Messages this connection carried so far, pings aside.
    package var traffic: Traffic { trafficBox.withLockedValue { $0 } }

    /// The devices that said they stream to this connection's peer
    /// themselves, all of them: commits relayed from them are not sent again
    /// on this connection (`SyncSession.coverRelays`).
    package func coverRelays(from sources: Set<String>) {
        let handler = handler
        channel.eventLoop.execute { handler.value.mutateSession { $0.coverRelays(from: sources) } }
    }

    /// Tells the peer, if it understands it, records whose tombstones this
    /// side collected while it was away (`SyncMessage.collected`).
    package func tellCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock]) {
        let handler = handler
        channel.eventLoop.execute { handler.value.tellCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks) }
    }

    /// Asks a relaying peer what it holds; the answer comes as `peerHolds` events.
    package func requestHolds() {
        let handler = handler
        channel.eventLoop.execute { handler.value.mutateSession { $0.requestHolds() } }
    }

    /// Tells the peer which devices of the account this node has sessions with (if it relays).
    package func tellNeighbors(_ devices: [DeviceID]) {
        let handler = handler
        channel.eventLoop.execute { handler.value.mutateSession { $0.tellNeighbors(devices) } }
    }

    /// The peer may now sync more shared zones than the session has: they are granted in the session.
    package func widen() {
        let handler = handler
        channel.eventLoop.execute { handler.value.widenIfGranted() }
    }

    /// Asks the peer for asset content; the reply comes as the session's `assetReply` event.
    package func requestAsset(_ request: AssetRequest) {
        let handler = handler
        channel.eventLoop.execute { handler.value.requestAsset(request) }
    }

    /// Compares `zones` (nil: every zone both sides sync with each other, of
    /// `scope` if given) with
    /// the peer's by range-based reconciliation of their digests; the outcome
    /// lists each record held differently.
    package func reconcile(zones: [ZoneKey]?, scope: DatabaseScope? = nil, completion: @escaping @Sendable (Result<ReconcileOutcome, Error>) -> Void) {
        let handler = handler
        channel.eventLoop.execute { handler.value.reconcile(zones: zones, scope: scope, completion: completion) }
    }

    /// Sends the peer this side's states of `names` of `zone` (a comparison
    /// found them held otherwise there), so the merge brings both together.
    package func repair(zone: ZoneKey, names: [String]) {
        let handler = handler
        channel.eventLoop.execute { handler.value.repair(zone: zone, names: names) }
    }

    package func close() { channel.close(promise: nil) }

    package var isActive: Bool { channel.isActive }

    /// Identifies the connection, to match it with the dial that made it.
    package var connectionID: ObjectIdentifier { ObjectIdentifier(channel as AnyObject) }

    package static func == (lhs: ConnectionHandle, rhs: ConnectionHandle) -> Bool { lhs.channel === rhs.channel }
    package func hash(into hasher: inout Hasher) { hasher.combine(connectionID) }
}

func addressText(_ address: SocketAddress) -> String {
    if let ip = hostText(address), let port = address.port {
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
    return "\(address)"
}

/// The peer's IP address as people write it: an IPv4 peer of a dual-stack
/// listener (`::ffff:10.0.0.2`) is shown, and counted, as plain IPv4.
func hostText(_ address: SocketAddress) -> String? {
    guard let ip = address.ipAddress else { return nil }
    if ip.hasPrefix("::ffff:"), ip.contains(".") { return String(ip.dropFirst("::ffff:".count)) }
    return ip
}

/// Carries out a `SyncSession`'s actions on a channel: decodes messages,
/// runs store work on the thread pool (never on the event loop), writes while
/// the channel is writable, and closes with a logged reason on anything a
/// peer should not have sent.
package final class SyncSessionHandler: ChannelInboundHandler {
    package typealias InboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private let delegate: any SyncDelegate
    private let threadPool: NIOThreadPool
    /// For reconciliation rounds (see `SyncEndpoint.backgroundPool`).
    private let backgroundPool: NIOThreadPool
    private let settings: ConnectionSettings
    private let logger: Logger
    private let onEvent: @Sendable (ConnectionEvent) -> Void
    private let onAccepted: (@Sendable (PeerAccess) -> Bool)?
    private let refusals: RateLimitedLog
    private var context: ChannelHandlerContext?
    private var session: SyncSession?
    private var early: [SyncMessage] = []
    private var peer: DeviceID?
    /// What the peer may sync, as its handshake found it (widened since), shared with the connection's handle.
    private let accessBox = NIOLockedValueBox<PeerAccess?>(nil)
    private let comparingBox = NIOLockedValueBox(false)
    private let trafficBox = NIOLockedValueBox(Traffic())
    private let relayingBox = NIOLockedValueBox(false)
    private var access: PeerAccess? {
        get { accessBox.withLockedValue { $0 } }
        set { accessBox.withLockedValue { $0 = newValue } }
    }
    private var initiator = false
    /// The protocol version the handshake settled on.
    private var version = SyncWire.versions.lowerBound
    private var address = "?"
    private var closeReason: CloseReason?
    private var lastHeard = NIODeadline.now()
    private var lastSent = NIODeadline.now()
    private var ticker: RepeatedTask?

    init(
        delegate: any SyncDelegate, threadPool: NIOThreadPool, backgroundPool: NIOThreadPool? = nil, settings: ConnectionSettings, logger: Logger,
        refusals: RateLimitedLog? = nil, onAccepted: (@Sendable (PeerAccess) -> Bool)? = nil, onEvent: @escaping @Sendable (ConnectionEvent) -> Void
    ) {
        self.onAccepted = onAccepted
        self.refusals = refusals ?? RateLimitedLog(logger: logger)
        self.delegate = delegate
        self.threadPool = threadPool
        self.backgroundPool = backgroundPool ?? threadPool
        self.settings = settings
        self.logger = logger
        self.onEvent = onEvent
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        address = context.channel.remoteAddress.map(addressText) ?? "?"
    }

    package func channelActive(context: ChannelHandlerContext) {
        address = context.channel.remoteAddress.map(addressText) ?? address
        context.fireChannelActive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        ticker?.cancel()
        self.context = nil
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let completed = event as? HandshakeCompleted else { return context.fireUserInboundEventTriggered(event) }
        let peer = completed.result.peerDeviceID
        self.peer = peer
        version = completed.result.version
        initiator = completed.initiator
        lastHeard = .now()
        // Before anything else, from memory: a stranger is closed now, while its
        // frames are still handshake-sized and it still counts as pending.
        // A stranger the public database is open to, once the node holds as many such sessions as it takes, is refused as others are.
        guard let access = delegate.access(for: peer), onAccepted?(access) ?? true else {
            let host = context.channel.remoteAddress.flatMap(hostText) ?? address
            refusals.notice("refused an untrusted device", metadata: ["peer": "\(peer)", "address": "\(address)"])
            onEvent(.refused(peer: peer, address: host))
            closeReason = .transport(.untrusted(peer.description))
            context.close(promise: nil)
            return
        }
        self.access = access
        let delegate = delegate
        let address = address
        runOffLoop({ () throws -> Hello in
            try? delegate.noteConnected(peer, address: address) // best effort: the sync need not wait for it
            return try delegate.hello(for: peer)
        }) { handler, hello in
            handler.start(with: hello)
        }
    }

    private func start(with hello: Hello) {
        // The connection may have ended while the store was asked.
        guard let context, let peer, let access, context.channel.isActive, closeReason == nil else { return }
        // The hello grants no more than the session takes: shares may have opened zones since the handshake (widened below).
        var hello = hello
        if !access.scopes.contains(.shared) {
            hello.sharedGrants = hello.sharedGrants.filter(access.sharedZones.contains)
            hello.zones = hello.zones.filter { $0.zone.scope != .shared || access.sharedZones.contains($0.zone.zoneID) }
        }
        var configuration = settings.session
        if version < SyncWire.relayingVersion { configuration.relays = false } // its decoder knows no relays bit
        if version < SyncWire.selectiveVersion { // nor these lists: it may stream those zones, which the store ignores
            hello.excluded = []
            hello.replicatesOnly = nil
        }
        // Which zones this device replicates is not told to a peer that may not sync them.
        hello.excluded = hello.excluded.filter(access.allows)
        if !access.scopes.contains(.private) { hello.replicatesOnly = nil }
        var session = SyncSession(localHello: hello, access: access, configuration: configuration)
        session.peerDevice = peer.description
        let actions = session.start()
        self.session = session
        let handle = ConnectionHandle(channel: context.channel, handler: NIOLoopBound(self, eventLoop: context.eventLoop), initiator: initiator, accessBox: accessBox, comparingBox: comparingBox, trafficBox: trafficBox, relayingBox: relayingBox)
        onEvent(.authenticated(peer: peer, address: address, handle: handle))
        perform(actions)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: settings.pingInterval, delay: settings.pingInterval) { _ in
            bound.value.tick()
        }
        let waiting = early
        early = []
        for message in waiting { self.handle(message) }
    }

    private func tick() {
        let now = NIODeadline.now()
        if now - lastHeard >= settings.idleTimeout {
            close(.transport(.idleTimeout))
        } else if now - lastSent >= settings.pingInterval || now - lastHeard >= settings.pingInterval {
            send(.ping)
            context?.flush()
            pauseReadingIfFlooded()
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        lastHeard = .now()
        let message: SyncMessage
        do {
            message = try SyncMessage(decoding: buffer.readBytes(length: buffer.readableBytes) ?? [])
        } catch {
            close(.protocolError(error))
            return
        }
        switch message {
        case .ping, .pong: break
        default: trafficBox.withLockedValue { $0.received += 1 }
        }
        if session == nil {
            guard early.count < 4 else { return close(.protocolError(.unexpected("messages before the session started"))) }
            early.append(message)
            return
        }
        handle(message)
    }

    private func handle(_ message: SyncMessage) {
        // The peer's account may open shared zones its handshake did not: the session
        // widens, and says it caught up only after its grants (so `sync --once` on the
        // other side does not end before them).
        var widens = false
        if case .hello(let hello) = message, let peer, session?.peerHello == nil, !hello.membership.isEmpty,
           delegate.notePeerMembership(hello.membership, of: peer) {
            widens = true
            mutateSession { $0.holdCaughtUp(); return [] }
        }
        mutateSession { $0.receive(message) }
        if widens { widenIfGranted { $0.mutateSession { $0.releaseCaughtUp() } } }
        guard let peer else { return }
        let offered: [ZoneID]
        switch message {
        case .hello(let hello):
            offered = hello.sharedGrants
        case .grants(let grants):
            offered = grants.sharedZones
        default:
            return
        }
        guard !offered.isEmpty else { return }
        let delegate = delegate
        // An accepted zone not held yet is taken from whoever offers it: the
        // session may widen, and is not done before it knows.
        mutateSession { $0.holdCaughtUp(); return [] }
        runOffLoop({ try? delegate.noteOfferedZones(offered, from: peer) }) { handler, _ in
            handler.widenIfGranted { $0.mutateSession { $0.releaseCaughtUp() } }
        }
    }

    fileprivate func requestAsset(_ request: AssetRequest) {
        mutateSession { $0.requestAsset(request) }
    }

    fileprivate func repair(zone: ZoneKey, names: [String]) {
        guard let peer, session != nil else { return }
        let delegate = delegate
        runOffLoop({ try delegate.repairBatch(zone: zone, names: names, for: peer) }) { handler, made in
            if let batch = made.0 { handler.mutateSession { $0.sendRepair(batch, of: zone) } }
            if !made.left.isEmpty { handler.repair(zone: zone, names: made.left) }
        }
    }

    private var reconciliation: (reconciler: Reconciler, outcome: ReconcileOutcome, completion: @Sendable (Result<ReconcileOutcome, Error>) -> Void)?

    /// Begins a reconciliation of `zones` (nil: every zone both sides sync with each other).
    fileprivate func reconcile(zones: [ZoneKey]?, scope: DatabaseScope?, completion: @escaping @Sendable (Result<ReconcileOutcome, Error>) -> Void) {
        guard reconciliation == nil else { return completion(.failure(ReconcileFailure.busy)) }
        guard let session, let hello = session.peerHello, closeReason == nil else { return completion(.failure(ReconcileFailure.notStarted)) }
        // Within the account: another account's device may not ask, nor is it asked (item lists name records).
        guard session.access.isAccount, hello.granted.isAccount else { return completion(.failure(ReconcileFailure.notAccount)) }
        // A version-1 peer's decoder knows no reconcile message: it would close the session.
        guard version >= SyncWire.relayingVersion else { return completion(.failure(ReconcileFailure.olderPeer)) }
        let shared = session.access.intersection(hello.granted)
        // A zone either side does not replicate has nothing to compare.
        let local = session.localHello
        let delegate = delegate
        reconciliation = (Reconciler(initiator: true), ReconcileOutcome(), completion)
        runOffLoop(on: backgroundPool, { () throws -> ReconcileMessage in
            // Named zones the two do not sync with each other are left out (the outcome lists those compared).
            let known = try zones.map(Set.init) ?? Set(delegate.zones()).union(hello.zones.map(\.zone))
            let chosen = known.filter { shared.allows($0) && hello.replicates($0) && local.replicates($0) && (zones != nil || scope == nil || $0.scope == scope) }.sorted { $0.description < $1.description }
            return try delegate.reconcileOpening(zones: chosen)
        }) { handler, opening in
            handler.reconciliation?.reconciler = Reconciler(opening: opening)
            handler.reconciliation?.outcome.zones = opening.zones.map(\.zone)
            handler.sendReconcileRound(opening)
        }
    }

    private func sendReconcileRound(_ message: ReconcileMessage) {
        guard var running = reconciliation else { return }
        guard !message.isEmpty else {
            reconciliation = nil
            running.outcome.differences = running.reconciler.differences
            return running.completion(.success(running.outcome))
        }
        running.outcome.rounds += 1
        running.outcome.bytesSent += SyncMessage.reconcile(message).encoded().count
        reconciliation = running
        mutateSession { $0.beginReconcileRound(message) }
    }

    private func continueReconciliation(after reply: ReconcileMessage) {
        guard var running = reconciliation else { return }
        running.outcome.bytesReceived += SyncMessage.reconcileReply(reply).encoded().count
        reconciliation = running
        let delegate = delegate
        let reconciler = running.reconciler
        runOffLoop(on: backgroundPool, { try delegate.reconcileRound(reply, reconciler: reconciler) }) { handler, next in
            handler.reconciliation?.reconciler = next.1
            handler.sendReconcileRound(next.0)
        }
    }

    private var widening = false
    /// What waits for the widening under way to settle.
    private var afterWidening: [(SyncSessionHandler) -> Void] = []

    /// Grants the peer the shared zones it may sync now and its session does
    /// not have yet; a peer that may sync less than its session has loses the
    /// session. `then` runs once no widening is under way.
    fileprivate func widenIfGranted(then: ((SyncSessionHandler) -> Void)? = nil) {
        if let then { afterWidening.append(then) }
        guard !widening else { return }
        guard let peer, let access, let session, session.peerHello != nil, closeReason == nil else { return settleWidening() }
        guard let current = delegate.access(for: peer), current.scopes == access.scopes, current.sharedZones.isSuperset(of: access.sharedZones) else {
            return close(.transport(.noLongerTrusted(peer.description)))
        }
        guard current != access else { return settleWidening() }
        widening = true
        let delegate = delegate
        let added = current.sharedZones.subtracting(access.sharedZones)
        runOffLoop({ try delegate.sharedZoneAdverts(added, for: peer) }) { handler, zones in
            handler.widening = false
            handler.access = current
            handler.mutateSession { $0.widen(to: current, zones: zones) }
            // A share may have changed again while the store was asked.
            if delegate.access(for: peer) != current { handler.widenIfGranted() } else { handler.settleWidening() }
        }
    }

    private func settleWidening() {
        let waiting = afterWidening
        afterWidening = []
        for body in waiting { body(self) }
    }

    package func channelWritabilityChanged(context: ChannelHandlerContext) {
        let writable = context.channel.isWritable
        if writable { resumeReading() }
        mutateSession { $0.writabilityChanged(writable) }
        context.fireChannelWritabilityChanged()
    }

    /// More queued to send than an honest session ever queues: a session
    /// produces nothing while the socket is unwritable, so beyond the write
    /// buffer's high mark only one batch and small replies can wait.
    private var outboundBound: Int { 1024 * 1024 + settings.session.maximumBatchSize + 64 * 1024 }
    private var readingPaused = false

    /// A peer that sends (pings, batches) but does not read what it is sent:
    /// reading stops until the socket drains, so replies cannot pile up here.
    /// (Stopping at mere unwritability would stall two honest sides that
    /// stream to each other at once, each waiting for the other to read.)
    private func pauseReadingIfFlooded() {
        guard !readingPaused, let context, !context.channel.isWritable,
              let queued = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes), queued > outboundBound else { return }
        readingPaused = true
        _ = try? context.channel.syncOptions?.setOption(.autoRead, value: false)
    }

    private func resumeReading() {
        guard readingPaused, let context else { return }
        readingPaused = false
        _ = try? context.channel.syncOptions?.setOption(.autoRead, value: true)
        context.read()
    }

    private var refreshing = false
    private var refreshAgain = false

    /// Local commits happened. Commits in a burst coalesce into one refresh.
    fileprivate func localCommit() {
        guard session != nil else { return }
        guard !refreshing else {
            refreshAgain = true
            return
        }
        refreshing = true
        let delegate = delegate
        // The zone list may have grown, and which peers made the commits decides where they go: store work.
        let seen = session?.seenSequence
        runOffLoop({ try delegate.localChanges(after: seen) }) { handler, changes in
            handler.refreshing = false
            handler.mutateSession { $0.localCommit(zones: changes.zones, roster: changes.roster, changes: changes) }
            if handler.refreshAgain {
                handler.refreshAgain = false
                handler.localCommit()
            }
        }
    }

    private func perform(_ actions: [SyncSession.Action]) {
        var wrote = false
        for action in actions {
            switch action {
            case .send(let message):
                send(message)
                wrote = true
            case .produce(var request):
                let delegate = delegate
                guard let peer else { continue }
                request.elidesCoveredGhosts = version >= SyncWire.elidingVersion
                let asked = request
                runOffLoop({ try delegate.produceBatch(asked, for: peer) }) { handler, batch in
                    // Trust may have ended since the read began: nothing more goes out.
                    if delegate.access(for: peer) != handler.access {
                        // Wider: granted in the session; anything else ends it.
                        handler.widenIfGranted()
                        guard handler.closeReason == nil else { return }
                    }
                    handler.mutateSession { $0.batchProduced(batch) }
                }
            case .apply(let batch):
                let delegate = delegate
                guard let peer else { continue }
                runOffLoop({ try delegate.applyBatch(batch, from: peer) }) { handler, applied in
                    handler.mutateSession { $0.batchApplied(applied) }
                    if applied.recordsDeferred > 0 {
                        handler.scheduleRetry(because: "records stamped too far in the future were deferred")
                    } else if applied.recordsRefused > 0 {
                        handler.scheduleRetry(because: "records their writers had no right to write were refused")
                    }
                }
            case .adoptRoster(let roster):
                let delegate = delegate
                guard let peer else { continue }
                runOffLoop({ try delegate.adoptRoster(roster, from: peer) }) { handler, _ in
                    handler.mutateSession { $0.rosterAdopted() }
                }
            case .serveAsset(let request):
                let delegate = delegate
                guard let peer else { continue }
                runOffLoop({ try delegate.serveAsset(request, for: peer) }) { handler, reply in
                    handler.mutateSession { $0.assetServed(reply) }
                }
            case .answerReconcile(let message):
                let delegate = delegate
                runOffLoop(on: backgroundPool, { try delegate.reconcileRound(message, reconciler: Reconciler(initiator: false)).0 }) { handler, reply in
                    handler.mutateSession { $0.reconcileAnswered(reply) }
                }
            case .answerHolds:
                let delegate = delegate
                guard let peer else { continue }
                runOffLoop({ try delegate.holdings(for: peer) }) { handler, zones in
                    handler.mutateSession { $0.holdingsRead(zones) }
                }
            case .applyCollected(let zone, let zoneIncarnation, let records, let blocks):
                let delegate = delegate
                guard let peer else { continue }
                runOffLoop({ try delegate.applyCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks, from: peer) }) { handler, deleted in
                    guard deleted > 0 else { return }
                    handler.logger.warning("this device was away longer than the peer's tombstone horizon: records deleted meanwhile, whose tombstones the peer collected, are deleted here too, and change tokens from before now expire", metadata: [
                        "peer": "\(peer)", "zone": "\(zone)", "deleted": "\(deleted)"])
                }
            case .event(.reconcileReply(let message)):
                continueReconciliation(after: message)
            case .event(.started(let granted)):
                if let session {
                    comparingBox.withLockedValue { $0 = session.comparing }
                    relayingBox.withLockedValue { $0 = session.relaying }
                }
                if let peer { onEvent(.session(peer: peer, .started(granted: granted))) }
            case .close(let error):
                if wrote { context?.flush() }
                close(.protocolError(error))
                return
            case .event(let event):
                if let peer { onEvent(.session(peer: peer, event)) }
            }
        }
        if wrote {
            context?.flush()
            pauseReadingIfFlooded()
        }
    }

    private var retryScheduled = false

    /// Ends the session later, so records deferred (for clock skew) or refused
    /// (for rights a later state may grant) are streamed again: their stream's
    /// claim was not taken.
    private func scheduleRetry(because reason: String) {
        guard !retryScheduled, let context else { return }
        retryScheduled = true
        logger.notice("\(reason); the session restarts to fetch them again", metadata: ["peer": "\(peer.map { "\($0)" } ?? "?")"])
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let delay = peer.map(settings.deferredRetry) ?? .seconds(30)
        context.eventLoop.scheduleTask(in: delay) {
            bound.value.close(.other("restarting to fetch records \(reason)"))
        }
    }

    fileprivate func tellCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock]) {
        // An older peer's decoder knows no `collected` message: it keeps the tombstones' residues away.
        guard version >= SyncWire.collectingVersion else { return }
        mutateSession { $0.sendCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks) }
    }

    fileprivate func mutateSession(_ body: (inout SyncSession) -> [SyncSession.Action]) {
        guard var session else { return }
        let actions = body(&session)
        self.session = session
        perform(actions)
    }

    private func send(_ message: SyncMessage) {
        guard let context else { return }
        lastSent = .now()
        switch message {
        case .ping, .pong: break
        default: trafficBox.withLockedValue { $0.sent += 1 }
        }
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: message.encoded())), promise: nil)
    }

    /// Runs store work on the thread pool and continues on the event loop;
    /// a store error ends the session with its reason.
    private func runOffLoop<T: Sendable>(on pool: NIOThreadPool? = nil, _ work: @escaping @Sendable () throws -> T, then: @escaping (SyncSessionHandler, T) -> Void) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        (pool ?? threadPool).runIfActive(eventLoop: context.eventLoop, work).assumeIsolated().whenComplete { result in
            let handler = bound.value
            guard handler.context != nil else { return }
            switch result {
            case .success(let value): then(handler, value)
            case .failure(let error as PeerNoLongerTrusted): handler.close(.transport(.noLongerTrusted(error.peer.description)))
            case .failure(let error as WriteProofError): handler.close(.refusedWrites(error.description))
            case .failure(let error as RosterError): handler.close(.refusedWrites("its account roster: \(error)"))
            case .failure(let error): handler.close(.other("store: \(error)"))
            }
        }
    }

    private func close(_ reason: CloseReason) {
        guard let context, closeReason == nil else { return }
        closeReason = reason
        if let running = reconciliation {
            reconciliation = nil
            running.completion(.failure(ReconcileFailure.ended(reason.description)))
        }
        if var session {
            _ = session.fail(.unexpected(reason.description))
            self.session = session
        }
        context.close(promise: nil)
    }

    package func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A cut before the peer's hello reads as a refusal (channelInactive), not as a truncation.
        let cutBeforeHello = (error as? TransportError) == .truncated && session?.peerHello == nil
        if closeReason == nil, !cutBeforeHello { closeReason = CloseReason(error) }
        context.close(promise: nil)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        ticker?.cancel()
        if closeReason == nil, peer != nil, session?.peerHello == nil {
            // The peer proved itself, then left before its hello: it does not trust us.
            closeReason = .transport(.refusedByPeer)
        }
        // A comparison waiting for the peer's answer ends with the connection (`lattice diff` waited for ever).
        if let running = reconciliation {
            reconciliation = nil
            running.completion(.failure(ReconcileFailure.ended(closeReason?.description ?? "the connection closed")))
        }
        if let closeReason, !closeReason.isRefusalOfStranger {
            logger.info("connection closed", metadata: ["address": "\(address)", "peer": "\(peer.map { "\($0)" } ?? "unauthenticated")", "reason": "\(closeReason)"])
        }
        onEvent(.closed(peer: peer, address: address, reason: closeReason))
        context.fireChannelInactive()
    }
}
