@_spi(Tools) import LatticeCore

/// One side of a sync session, as a value: messages and store results in,
/// actions out. It never touches a socket or a store, so every way a peer can
/// misbehave is testable with plain values; the transport carries out its
/// actions.
///
/// Anti-entropy: each side streams, zone by zone, what the other's advertised
/// vector and resume point say it lacks, one batch (a complete change set) at
/// a time, at most `window` batches unacknowledged. The receiver applies and
/// commits each batch on its own with the sender's cursor, and acknowledges it
/// with its vector after. A local commit re-opens every zone's stream from its
/// cursor: push on commit.
@_spi(Tools) public struct SyncSession: Sendable {
    package enum Action: Hashable, Sendable {
        case send(SyncMessage)
        /// Ask the store for the next batch; answer with `batchProduced`.
        case produce(BatchRequest)
        /// Apply and commit a batch; answer with `batchApplied` (or `fail`).
        case apply(IncomingBatch)
        /// Take the peer's account roster before any batch after it; answer with `rosterAdopted`.
        case adoptRoster([UInt8])
        /// Answer the peer's request for asset content; answer with `assetServed`.
        case serveAsset(AssetRequest)
        /// Answer a round of the peer's reconciliation (`Reconciler.reply`); answer with `reconcileAnswered`.
        case answerReconcile(ReconcileMessage)
        /// Read what this side holds of each zone the peer may sync (`SyncDelegate.holdings`); answer with `holdingsRead`.
        case answerHolds
        /// The peer collected these records' tombstones while this device was away: delete here
        /// those still held in an older incarnation (`SyncDelegate.applyCollected`). Nothing answers it.
        case applyCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock])
        case close(ProtocolError)
        case event(SessionEvent)
    }

    package enum SessionEvent: Hashable, Sendable {
        /// The peer's hello arrived: the session is running, and streams what `granted` allows.
        case started(granted: PeerAccess)
        /// The peer will stream this much of a zone.
        case receiving(zone: ZoneKey, records: Int, bytes: Int)
        /// This side will stream this much of a zone.
        case sending(zone: ZoneKey, records: Int, bytes: Int)
        /// Records of a batch from the peer were deferred (stamped beyond the clock-skew bound).
        case deferred(zone: ZoneKey, records: Int)
        /// Records of a batch from the peer were refused: a write they bring was not its writer's right.
        case refused(zone: ZoneKey, records: Int, reason: String)
        /// A batch from the peer was committed.
        case received(zone: ZoneKey, records: Int, bytes: Int, final: Bool)
        /// A batch of ours was acknowledged.
        case delivered(zone: ZoneKey, records: Int, bytes: Int, final: Bool)
        /// Both sides have sent all they had and every batch is committed.
        case quiescent
        /// The peer answered one of this side's asset requests (`requestAsset`).
        case assetReply(AssetReply)
        /// The peer answered a round of this side's reconciliation (`beginReconcileRound`).
        case reconcileReply(ReconcileMessage)
        /// The peer holds everything of a zone up to `vector` (its hello, an
        /// acknowledgement, or the claim of its final batch said so).
        case peerHolds(zone: ZoneKey, vector: VersionVector)
        /// The zones the peer said in its hello it does not replicate (selective sync).
        case peerExcludes(Set<ZoneKey>, only: Set<ZoneKey>?)
        /// The peer has sessions with these devices of the account now (its `neighbors` message).
        case neighbors(Set<String>)
    }

    /// How a session batches and paces its streams; tools read the batch sizes a node uses.
    public struct Configuration: Hashable, Sendable {
        package var window: Int
        /// Records in one batch at most.
        public var batchRecords = 4000
        /// Bytes a sender aims a batch at (its last record may pass it).
        public var batchBytes: Int
        package var partSize = SyncWire.partSize
        /// The largest batch a receiver buffers. An honest sender stops a batch
        /// once it reaches `batchBytes`, so its last record (at most
        /// `Limits.maximumRecordBytes` of fields, encoded) and the change set's
        /// header (vectors, schema) are all it can add.
        package var maximumBatchSize: Int
        /// Batches received and not yet applied before the peer is deemed to
        /// ignore the window: an honest sender has at most `window` unacknowledged.
        package var maximumQueuedBatches: Int
        /// This side only compares digests (`lattice diff`): its hello says
        /// so, neither side streams, and changes the peer sends end the session.
        package var comparesOnly = false
        /// This side relays: its hello says so, and with a peer that relays too
        /// it skips commits relayed from devices that stream to the peer themselves.
        package var relays = true

        /// A configuration of `window` unacknowledged batches of about `batchBytes` each.
        public init(window: Int = 4, batchBytes: Int = 2 << 20) {
            self.window = window
            self.batchBytes = batchBytes
            maximumBatchSize = batchBytes + 2 * Limits.maximumRecordBytes + (1 << 20)
            maximumQueuedBatches = window
        }
    }

    struct Outgoing: Sendable {
        var cursor: StreamCursor
        var peerVector: VersionVector
        var peerZoneState: ZoneState?
        var dirty = true
        var streaming = false
        /// Where the stream was before it first skipped commits relayed from
        /// other peers (`localCommit(zones:roster:changes:)`): batches tell
        /// the peer no later cursor, so its resume point stays before them
        /// until it is known to hold them.
        var relayCap: StreamCursor?
        /// The peers whose streams to this one the skipped commits rely on.
        var relaySources: Set<String> = []
        /// A source was lost: the stream goes again from `relayCap` (after the batch being produced, if any).
        var rewindAfterProduce = false
        /// The stream went back to `relayCap`: once it reaches the end again, the peer holds what was skipped.
        var rewinding = false
        /// The stream has news of its own but skipped relays: it produces once the peer said what it holds.
        var awaitingHolds = false

        /// The cursor a batch at `cursor` tells the peer.
        func told(_ cursor: StreamCursor) -> StreamCursor { relayCap.map { min($0, cursor) } ?? cursor }
    }

    private struct InFlight: Sendable {
        var zone: ZoneKey
        var cursor: StreamCursor
        var final: Bool
        var records: Int
        var bytes: Int
        var zoneState: ZoneState
    }

    package let configuration: Configuration
    /// What the peer may sync here: streams of other zones are not taken.
    /// Shared zones widen it during the session (`widen`).
    package private(set) var access: PeerAccess
    /// What this side streams: `access`, within what the peer's hello grants this side.
    package private(set) var streams: PeerAccess
    package let localHello: Hello
    package private(set) var peerHello: Hello?
    package internal(set) var closed = false

    var outgoing: [ZoneKey: Outgoing] = [:]
    var order: [ZoneKey] = []
    var producing: ZoneKey?
    var producingRecheck = false
    private var writable = true
    private var inFlight: [InFlight] = []
    var sentCaughtUp = false

    private var partial: (zone: ZoneKey, bytes: [UInt8])?
    private var queued: [IncomingBatch] = []
    private var applying = false
    /// Rosters from the peer not yet taken: taken in order with batches, before those that follow them.
    private var rosters: [[UInt8]] = []
    private var adoptingRoster = false
    /// The roster this side last sent.
    var toldRoster: [UInt8]
    /// The vector we last told the peer for each zone: a claim must build on one we told.
    var toldVectors: [ZoneKey: VersionVector] = [:]
    private var peerCaughtUp = false
    var reportedQuiescent = false
    /// What the peer grants this side: its hello's, and its grants messages'.
    private var peerGranted = PeerAccess(scopes: [])
    /// Zones each side said it holds, in the order they were said (streams open in it).
    private var localZones: [ZoneKey] = []
    private var peerAdverts: [ZoneKey: ZoneAdvert] = [:]
    private var peerZones: [ZoneKey] = []
    /// Grants messages sent and taken: a caught-up counts once it follows the peer's reading of ours.
    private var grantsSent = 0
    private var grantsReceived = 0
    /// Grants an honest peer sends: one per change of its shares while the session runs.
    package static let maximumGrants = 64
    /// Widenings being weighed outside the session (`holdCaughtUp`).
    private var holds = 0
    /// The peer's asset requests being answered here (`serveAsset`).
    var assetServes = 0
    /// This side's asset requests the peer has not answered yet.
    var assetRequests: [AssetRequest.Key: Int] = [:]
    var assetRequestsBeforeHello: [AssetRequest] = []
    /// Batches of records the peer's digest showed it holds otherwise, to send in the stream's order.
    var repairs: [(zone: ZoneKey, batch: OutgoingBatch)] = []
    /// A round of the peer's reconciliation being answered here, and whether this side waits for an answer.
    var answeringReconcile = false
    var awaitingReconcileReply = false
    /// The peer's device ID, for commits it made itself (set by the transport).
    package var peerDevice: String?
    /// The last change sequence `localCommit` was told of.
    package internal(set) var seenSequence: UInt64?
    /// Devices that said they stream to this session's peer themselves (`coverRelays`).
    var coveringSources: Set<String> = []
    /// Sources whose relays no longer hold: streams that relied on them go again once the peer says what it holds.
    var lostRelays: Set<String> = []
    var awaitingHolds = false
    var answeringHolds = false
    /// Asset requests a peer may have unanswered at once: an honest one keeps a few chunks in flight.
    package static let maximumAssetServes = 32

    package init(localHello: Hello, access: PeerAccess = .account, configuration: Configuration = Configuration()) {
        self.access = access
        streams = access
        var localHello = localHello
        localHello.comparesOnly = localHello.comparesOnly || configuration.comparesOnly
        localHello.relays = configuration.relays && !localHello.comparesOnly
        self.localHello = localHello
        self.configuration = configuration
        toldRoster = localHello.roster
        for advert in localHello.zones { toldVectors[advert.zone] = advert.vector }
        localZones = localHello.zones.map(\.zone)
    }

    /// Opens the session: our hello goes first, with the roster's first
    /// piece; the other pieces follow it (`AccountRoster.pieces`).
    package mutating func start() -> [Action] {
        var hello = localHello
        let pieces = AccountRoster.pieces(of: hello.roster)
        hello.roster = pieces[0]
        let size = SyncMessage.hello(hello).encoded().count
        guard size <= SyncWire.maximumMessageSize else {
            return close(.limitExceeded("this store's hello (\(hello.zones.count) zones, \(size) bytes) is over the \(SyncWire.maximumMessageSize)-byte message maximum: too many zones to sync"))
        }
        return [.send(.hello(hello))] + pieces.dropFirst().map { .send(.roster($0)) }
    }

    /// Rosters (or pieces of one) that may wait to be taken: a whole roster
    /// of the most entries a store keeps, in pieces, and a few changes.
    static let maximumQueuedRosters = 24

    /// Whether both directions are done for now (for `sync --once`).
    package var isQuiescent: Bool {
        peerHello != nil && holds == 0 && peerCaughtUp && sentCaughtUp && partial == nil && queued.isEmpty && rosters.isEmpty && !applying && inFlight.isEmpty && producing == nil
    }

    // MARK: Input

    package mutating func receive(_ message: SyncMessage) -> [Action] {
        guard !closed else { return [] }
        if case .hello(let hello) = message { return receiveHello(hello) }
        guard peerHello != nil else { return close(.unexpected("\(message.kindName) before hello")) }
        switch message {
        case .hello: return []
        case .ping: return [.send(.pong)]
        case .pong: return []
        case .caughtUp:
            // Before the peer read our grants, its streams of the zones they opened may not have begun.
            if grantsSent == 0 { peerCaughtUp = true }
            return checkQuiescent()
        case .caughtUpAfter(let grants):
            if grants == grantsSent { peerCaughtUp = true }
            return checkQuiescent()
        case .grants(let grants): return receiveGrants(grants)
        case .roster(let bytes): return receiveRoster(bytes)
        case .streamStart(let start):
            guard access.allows(start.zone) else { return close(.forbidden("the peer streams zone \(start.zone), which it may not sync here (\(access))")) }
            guard localHello.replicates(start.zone) else { return close(.forbidden("the peer streams zone \(start.zone), which this device said it does not replicate")) }
            return [.event(.receiving(zone: start.zone, records: start.records, bytes: start.bytes))]
        case .changes(let part): return receiveChanges(part)
        case .acknowledgement(let ack): return receiveAcknowledgement(ack)
        case .assetRequest(let request): return receiveAssetRequest(request)
        case .assetReply(let reply): return receiveAssetReply(reply)
        case .reconcile(let message): return receiveReconcile(message)
        case .reconcileReply(let message): return receiveReconcileReply(message)
        case .neighbors(let devices): return receiveNeighbors(devices)
        case .holdsRequest: return receiveHoldsRequest()
        case .holds(let zones): return receiveHolds(zones)
        case .collected(let zone, let zoneIncarnation, let records, let blocks):
            return receiveCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks)
        }
    }

    private mutating func receiveHello(_ hello: Hello) -> [Action] {
        guard peerHello == nil else { return close(.unexpected("a second hello")) }
        guard hello.container == localHello.container else {
            return close(.containerMismatch(peer: hello.container, local: localHello.container))
        }
        peerHello = hello
        peerGranted = hello.granted
        takePeerAdverts(hello.zones)
        openStreams()
        let holds = hello.zones.map { Action.event(.peerHolds(zone: $0.zone, vector: $0.vector)) }
        let excludes = [Action.event(.peerExcludes(Set(hello.excluded), only: hello.replicatesOnly.map(Set.init)))]
        return [.event(.started(granted: comparing ? access.intersection(peerGranted) : streams))] + excludes + holds + sendAssetRequestsMadeBeforeHello() + (hello.roster.isEmpty ? [] : receiveRoster(hello.roster)) + pump()
    }

    /// Whether this side streams `zone` to the peer: both grant it, and the peer replicates it.
    package func streamsTo(_ zone: ZoneKey) -> Bool {
        streams.allows(zone) && (peerHello?.replicates(zone) ?? true)
    }

    private mutating func takePeerAdverts(_ adverts: [ZoneAdvert]) {
        for advert in adverts {
            if peerAdverts[advert.zone] == nil { peerZones.append(advert.zone) }
            peerAdverts[advert.zone] = advert
        }
    }

    /// Streams what both sides grant now. Zones only the peer has get a
    /// stream too: what it sends us is then known to be held by it, and is
    /// not echoed back when we relay.
    private mutating func openStreams() {
        guard !comparing else {
            streams = PeerAccess(scopes: [])
            return
        }
        streams = access.intersection(peerGranted)
        for zone in localZones + peerZones where streamsTo(zone) {
            let theirs = peerAdverts[zone]
            addOutgoing(zone, cursor: theirs?.resume ?? .start, peerVector: theirs?.vector ?? VersionVector(), peerZoneState: theirs?.zoneState)
        }
    }

    /// The peer may sync more shared zones here (its account, proved in its
    /// hello, opens them; or a share changed): they are granted to it with
    /// this side's state of those it holds (`zones`), and streamed both ways
    /// once the peer grants them too.
    package mutating func widen(to wider: PeerAccess, zones: [ZoneAdvert]) -> [Action] {
        guard !closed, peerHello != nil, wider.scopes == access.scopes else { return [] }
        let added = wider.sharedZones.subtracting(access.sharedZones)
        guard !added.isEmpty else { return [] }
        access = wider
        let fresh = zones.filter { $0.zone.scope == .shared && added.contains($0.zone.zoneID) && !localZones.contains($0.zone) }
        for advert in fresh {
            toldVectors[advert.zone] = advert.vector
            localZones.append(advert.zone)
        }
        grantsSent += 1
        peerCaughtUp = false
        sentCaughtUp = false
        reportedQuiescent = false
        openStreams()
        let grants = Grants(sharedZones: added.sorted { $0.description < $1.description }, zones: fresh)
        return [.send(.grants(grants)), .event(.started(granted: streams))] + pump()
    }

    /// Something outside the session may widen it (the peer's account opens
    /// shared zones; the peer offered zones this side accepted): until
    /// `releaseCaughtUp`, this side does not say it caught up and the
    /// session is not quiescent, so neither side's `sync --once` ends
    /// before the zones it opens have streamed.
    package mutating func holdCaughtUp() {
        holds += 1
    }

    /// What `holdCaughtUp` waited for is settled (the session widened, or not).
    package mutating func releaseCaughtUp() -> [Action] {
        holds = max(0, holds - 1)
        return pump() + checkQuiescent()
    }

    private mutating func receiveGrants(_ grants: Grants) -> [Action] {
        guard grantsReceived < Self.maximumGrants else { return close(.limitExceeded("more than \(Self.maximumGrants) grants messages: the peer floods them")) }
        grantsReceived += 1
        peerGranted.sharedZones.formUnion(grants.sharedZones)
        takePeerAdverts(grants.zones)
        // Our caught-up must now follow what the grants open.
        sentCaughtUp = false
        reportedQuiescent = false
        openStreams()
        return [.event(.started(granted: streams))] + pump()
    }

    private mutating func receiveRoster(_ bytes: [UInt8]) -> [Action] {
        // An honest peer sends its roster in pieces, then a roster per change of its own; a few may wait behind a batch.
        guard rosters.count < Self.maximumQueuedRosters else { return close(.limitExceeded("more than \(Self.maximumQueuedRosters) rosters waiting: the peer floods them")) }
        rosters.append(bytes)
        return startApplying()
    }

    mutating func addOutgoing(_ zone: ZoneKey, cursor: StreamCursor, peerVector: VersionVector, peerZoneState: ZoneState?) {
        guard outgoing[zone] == nil else { return }
        outgoing[zone] = Outgoing(cursor: cursor, peerVector: peerVector, peerZoneState: peerZoneState)
        order.append(zone)
    }

    /// Either side only compares digests: nothing streams.
    package var comparing: Bool { localHello.comparesOnly || peerHello?.comparesOnly == true }

    private mutating func receiveChanges(_ part: ChangesPart) -> [Action] {
        guard !comparing else { return close(.unexpected("changes in a session that only compares digests")) }
        guard access.allows(part.zone) else { return close(.forbidden("the peer sent changes to zone \(part.zone), which it may not sync here (\(access))")) }
        guard localHello.replicates(part.zone) else { return close(.forbidden("the peer sent changes to zone \(part.zone), which this device said it does not replicate")) }
        var bytes: [UInt8] = []
        if let zone = partial?.zone {
            guard zone == part.zone else { return close(.unexpected("a batch of \(part.zone) began inside one of \(zone)")) }
            swap(&bytes, &partial!.bytes) // take the buffer over, so appending does not copy it
            partial = nil
        }
        guard bytes.count + part.bytes.count <= configuration.maximumBatchSize else {
            return close(.limitExceeded("a batch over \(configuration.maximumBatchSize) bytes"))
        }
        bytes.append(contentsOf: part.bytes)
        guard let end = part.end else {
            partial = (part.zone, bytes)
            return []
        }
        partial = nil
        let header: ChangeSetHeader
        switch checkBatchHeader(bytes, zone: part.zone, final: end.final) {
        case .failure(let problem): return close(problem)
        case .success(let checked): header = checked
        }
        guard queued.count < configuration.maximumQueuedBatches else {
            return close(.limitExceeded("more than \(configuration.maximumQueuedBatches) batches unacknowledged: the peer ignores the window"))
        }
        // A new round of sync: once it is applied (and the peer caught up), the session is quiescent again, and says so.
        reportedQuiescent = false
        queued.append(IncomingBatch(
            zone: part.zone, bytes: bytes, cursor: end.cursor, final: end.final, records: end.records, claimedTop: header.claimsTop ? header.top : nil))
        return startApplying()
    }

    /// What can be checked before the store sees a batch: it is one change set
    /// of the announced zone, it claims exactly when it says it ends the
    /// stream, and a claim builds on a vector this side told the peer.
    private func checkBatchHeader(_ bytes: [UInt8], zone: ZoneKey, final: Bool) -> Result<ChangeSetHeader, ProtocolError> {
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        let header: ChangeSetHeader
        do {
            guard let read = try reader.readHeader() else { return .failure(.malformed("an empty batch")) }
            header = read
        } catch {
            return .failure(.malformed("a batch's change set: \(error)"))
        }
        guard header.zone == zone else { return .failure(.unexpected("a batch announced for \(zone) holds a change set of \(header.zone)")) }
        guard header.claimsTop == final else {
            return .failure(.unexpected(final ? "the stream's last batch claims no vector" : "a batch inside the stream claims the sender's vector"))
        }
        if header.claimsTop, !(toldVectors[zone] ?? VersionVector()).dominates(header.base) {
            return .failure(.unexpected("a claim on \(zone) builds on a vector this node never sent (\(header.base))"))
        }
        return .success(header)
    }

    private mutating func startApplying() -> [Action] {
        guard !applying else { return [] }
        if !rosters.isEmpty {
            applying = true
            adoptingRoster = true
            return [.adoptRoster(rosters[0])]
        }
        guard !queued.isEmpty else { return [] }
        applying = true
        return [.apply(queued[0])]
    }

    /// The store took (or set aside) the roster at the head of the queue.
    package mutating func rosterAdopted() -> [Action] {
        guard !closed, adoptingRoster else { return [] }
        rosters.removeFirst()
        adoptingRoster = false
        applying = false
        return startApplying() + checkQuiescent()
    }

    /// The store committed the batch at the head of the queue.
    package mutating func batchApplied(_ result: AppliedBatch) -> [Action] {
        guard !closed, applying, !adoptingRoster, !queued.isEmpty else { return [] }
        let batch = queued.removeFirst()
        applying = false
        toldVectors[batch.zone] = result.vector
        // What the peer claimed it holds need not be sent back to it.
        if let top = batch.claimedTop { outgoing[batch.zone]?.peerVector.join(top) }
        var actions: [Action] = [
            .send(.acknowledgement(Acknowledgement(zone: batch.zone, cursor: batch.cursor, vector: result.vector))),
            .event(.received(zone: batch.zone, records: batch.records, bytes: batch.bytes.count, final: batch.final)),
        ]
        if let top = batch.claimedTop { actions.append(.event(.peerHolds(zone: batch.zone, vector: top))) }
        if result.recordsDeferred > 0 { actions.append(.event(.deferred(zone: batch.zone, records: result.recordsDeferred))) }
        if result.recordsRefused > 0 {
            actions.append(.event(.refused(zone: batch.zone, records: result.recordsRefused, reason: result.refusal ?? "no right to write")))
        }
        actions += startApplying()
        actions += checkQuiescent()
        return actions
    }

    private mutating func receiveAcknowledgement(_ ack: Acknowledgement) -> [Action] {
        guard let first = inFlight.first, first.zone == ack.zone, first.cursor == ack.cursor else {
            return close(.unexpected("an acknowledgement of \(ack.zone) at \(ack.cursor), which was not the next batch sent"))
        }
        inFlight.removeFirst()
        if var stream = outgoing[ack.zone] {
            stream.peerVector.join(ack.vector)
            stream.peerZoneState = stream.peerZoneState.map { $0.merged(with: first.zoneState) } ?? first.zoneState
            outgoing[ack.zone] = stream
        }
        return [.event(.delivered(zone: first.zone, records: first.records, bytes: first.bytes, final: first.final)),
                .event(.peerHolds(zone: first.zone, vector: ack.vector))] + pump() + checkQuiescent()
    }

    // MARK: Sending

    /// Local commits happened: every zone's stream re-opens from its cursor.
    package mutating func localCommit(zones: [ZoneKey], roster: [UInt8]? = nil) -> [Action] {
        localCommit(zones: zones, roster: roster, changes: nil)
    }

    package mutating func writabilityChanged(_ isWritable: Bool) -> [Action] {
        writable = isWritable
        return pump()
    }

    mutating func pump() -> [Action] {
        guard !closed, peerHello != nil, producing == nil, writable, inFlight.count < configuration.window else { return [] }
        if !repairs.isEmpty {
            let (zone, batch) = repairs.removeFirst()
            // In the stream's order, at its cursor: the peer resumes where it was.
            let cursor = outgoing[zone].map { $0.told($0.cursor) } ?? .start
            return sendBatch(batch, of: zone, cursor: cursor) + pump()
        }
        guard let zone = order.first(where: { outgoing[$0]!.dirty && !outgoing[$0]!.awaitingHolds }) else {
            if order.contains(where: { outgoing[$0]!.awaitingHolds }) { return [] } // not caught up until those streams went
            if !sentCaughtUp, holds == 0 {
                sentCaughtUp = true
                return [.send(grantsReceived == 0 ? .caughtUp : .caughtUpAfter(grants: grantsReceived))] + checkQuiescent()
            }
            return []
        }
        let stream = outgoing[zone]!
        producing = zone
        producingRecheck = false
        return [.produce(BatchRequest(
            zone: zone, after: stream.cursor, peerVector: stream.peerVector, peerZoneState: stream.peerZoneState, wantsTotals: !stream.streaming,
            maximumRecords: configuration.batchRecords, maximumBytes: configuration.batchBytes))]
    }

    /// The store answered a `produce`.
    package mutating func batchProduced(_ batch: OutgoingBatch?) -> [Action] {
        guard !closed, let zone = producing, var stream = outgoing[zone] else { return [] }
        producing = nil
        var actions: [Action] = []
        if let batch, batch.isEmpty {
            // Nothing the peer lacks: the stream stands at the end of the store's
            // change order (lower than its cursor if the store went back to an older copy),
            // and whatever it skipped, the peer holds.
            stream.cursor = batch.cursor
            stream.streaming = false
            if !producingRecheck {
                stream.dirty = false
                stream.relayCap = nil
                stream.relaySources = []
                stream.rewinding = false
            }
        } else if let batch {
            if let totals = batch.totals, !stream.streaming {
                actions.append(.send(.streamStart(StreamStart(zone: zone, records: totals.records, bytes: totals.bytes))))
                actions.append(.event(.sending(zone: zone, records: totals.records, bytes: totals.bytes)))
            }
            stream.streaming = !batch.final
            stream.cursor = batch.cursor
            // The peer may build its next claim on what we claim to hold.
            if let top = batch.claimedTop { toldVectors[zone, default: VersionVector()].join(top) }
            if batch.final, !producingRecheck { stream.dirty = false }
            actions += sendBatch(batch, of: zone, cursor: stream.told(batch.cursor))
        } else {
            stream.streaming = false
            if !producingRecheck { stream.dirty = false }
        }
        settleRewind(&stream)
        outgoing[zone] = stream
        return actions + pump()
    }

    /// A batch cut into parts no larger than a frame, then waiting for its acknowledgement.
    private mutating func sendBatch(_ batch: OutgoingBatch, of zone: ZoneKey, cursor: StreamCursor) -> [Action] {
        var actions: [Action] = []
        var offset = 0
        repeat {
            let end = min(offset + configuration.partSize, batch.bytes.count)
            let last = end == batch.bytes.count
            actions.append(.send(.changes(ChangesPart(
                zone: zone, bytes: Array(batch.bytes[offset..<end]),
                end: last ? ChangesPart.End(cursor: cursor, final: batch.final, records: batch.records) : nil))))
            offset = end
        } while offset < batch.bytes.count
        inFlight.append(InFlight(zone: zone, cursor: cursor, final: batch.final, records: batch.records, bytes: batch.bytes.count, zoneState: batch.zoneState))
        return actions
    }

    // MARK: Ending

    /// The store or the transport failed: the session ends with this reason.
    package mutating func fail(_ error: ProtocolError) -> [Action] { close(error) }

    mutating func close(_ error: ProtocolError) -> [Action] {
        guard !closed else { return [] }
        closed = true
        return [.close(error)]
    }

    private mutating func checkQuiescent() -> [Action] {
        guard isQuiescent, !reportedQuiescent else { return [] }
        reportedQuiescent = true
        return [.event(.quiescent)]
    }
}

extension SyncMessage {
    var kindName: String {
        switch self {
        case .hello: return "hello"
        case .streamStart: return "stream start"
        case .changes: return "changes"
        case .acknowledgement: return "acknowledgement"
        case .caughtUp, .caughtUpAfter: return "caught up"
        case .grants: return "grants"
        case .roster: return "roster"
        case .ping: return "ping"
        case .pong: return "pong"
        case .assetRequest: return "asset request"
        case .assetReply: return "asset reply"
        case .reconcile: return "reconcile"
        case .reconcileReply: return "reconcile reply"
        case .neighbors: return "neighbors"
        case .holdsRequest: return "holds request"
        case .holds: return "holds"
        case .collected: return "collected"
        }
    }
}
