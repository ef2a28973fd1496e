@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// What the sender asks its store for: the next batch of a zone's stream.
@_spi(Tools) public struct BatchRequest: Hashable, Sendable {
    /// The zone whose stream the batch continues.
    public var zone: ZoneKey
    /// Send records after this point of the local change order.
    public var after: StreamCursor
    /// What the peer is known to hold: the change set's base, and records it covers are skipped.
    public var peerVector: VersionVector
    /// The zone's state the peer is known to have (a deletion to send even when no record changed).
    public var peerZoneState: ZoneState?
    /// Whether to count what is left (the first batch of a stream, for progress).
    public var wantsTotals: Bool
    /// The most records the batch may take from the stream.
    public var maximumRecords: Int
    /// About the most bytes of record states the batch holds (its last record may pass it).
    public var maximumBytes: Int
    /// Whether the peer restores the ghosts of writes its vector covers
    /// (`ChangeSetHeader.elidesCoveredGhosts`): set for peers of `SyncWire.elidingVersion`.
    public var elidesCoveredGhosts = false

    /// A request; `elidesCoveredGhosts` starts false.
    public init(zone: ZoneKey, after: StreamCursor, peerVector: VersionVector, peerZoneState: ZoneState?, wantsTotals: Bool, maximumRecords: Int, maximumBytes: Int) {
        self.zone = zone
        self.peerZoneState = peerZoneState
        self.after = after
        self.peerVector = peerVector
        self.wantsTotals = wantsTotals
        self.maximumRecords = maximumRecords
        self.maximumBytes = maximumBytes
    }
}

/// A batch the store produced: one complete change set.
@_spi(Tools) public struct OutgoingBatch: Sendable {
    /// The encoded change set; empty when there is no batch (`isEmpty`).
    public var bytes: [UInt8]
    /// The cursor after the batch's last record (or the request's when it holds none).
    public var cursor: StreamCursor
    /// The stream reached the end of the zone: the change set claims the zone's vector.
    public var final: Bool
    /// How many records the change set holds.
    public var records: Int
    /// The zone's state the change set carries.
    public var zoneState: ZoneState
    /// The vector a final batch's change set claims.
    public var claimedTop: VersionVector?
    /// What is left to send, counted when asked for.
    public var totals: (records: Int, bytes: Int)?

    /// No batch: the peer lacks nothing of the zone up to `cursor` (`nothing(upTo:)`).
    public var isEmpty: Bool { bytes.isEmpty }

    /// What the store answers when the peer lacks nothing of the zone: its
    /// stream stands at `cursor` (the end of the store's change order then).
    public static func nothing(upTo cursor: StreamCursor, zoneState: ZoneState) -> OutgoingBatch {
        OutgoingBatch(bytes: [], cursor: cursor, final: true, records: 0, zoneState: zoneState)
    }

    /// A batch as produced: `claimedTop` for a final one, `totals` when they were asked for.
    public init(bytes: [UInt8], cursor: StreamCursor, final: Bool, records: Int, zoneState: ZoneState, claimedTop: VersionVector? = nil, totals: (records: Int, bytes: Int)? = nil) {
        self.bytes = bytes
        self.claimedTop = claimedTop
        self.zoneState = zoneState
        self.cursor = cursor
        self.final = final
        self.records = records
        self.totals = totals
    }
}

/// A batch received whole, checked by the session, to be applied and committed on its own.
@_spi(Tools) public struct IncomingBatch: Hashable, Sendable {
    /// The zone the batch's change set belongs to.
    public var zone: ZoneKey
    /// The batch's change set, received whole.
    public var bytes: [UInt8]
    /// The sender's cursor after the batch: where the peer's stream may resume once it is applied.
    public var cursor: StreamCursor
    /// Whether the batch ends the stream: its change set then claims `claimedTop`.
    public var final: Bool
    /// How many records the sender says the change set holds.
    public var records: Int
    /// The sender's vector its last batch claims: the sender holds all of it.
    public var claimedTop: VersionVector?

    /// A batch as the session queues it for the store.
    public init(zone: ZoneKey, bytes: [UInt8], cursor: StreamCursor, final: Bool, records: Int, claimedTop: VersionVector? = nil) {
        self.zone = zone
        self.claimedTop = claimedTop
        self.bytes = bytes
        self.cursor = cursor
        self.final = final
        self.records = records
    }
}

/// What applying a batch left: the zone's vector now, for the acknowledgement.
@_spi(Tools) public struct AppliedBatch: Hashable, Sendable {
    /// The zone's vector after the batch: what the acknowledgement tells the sender.
    public var vector: VersionVector
    /// Records whose state changed here, cascade deletes included.
    public var recordsChanged: Int
    /// Records refused for now (stamped too far in the future): the stream must come again later.
    public var recordsDeferred: Int
    /// Records refused because a write they bring was not its writer's right
    /// (`WriteRights`): skipped, the rest applied, and reported.
    public var recordsRefused: Int
    /// Why the first of them was.
    public var refusal: String?

    /// What applying a batch left; no record deferred or refused unless given.
    public init(vector: VersionVector, recordsChanged: Int, recordsDeferred: Int = 0, recordsRefused: Int = 0, refusal: String? = nil) {
        self.vector = vector
        self.recordsChanged = recordsChanged
        self.recordsDeferred = recordsDeferred
        self.recordsRefused = recordsRefused
        self.refusal = refusal
    }
}

/// What a peer may sync with this node: the databases whose zones its
/// session streams both ways, and shared zones one by one. A device of the
/// account syncs all three databases; any other device of the container, the
/// public one, and the shared zones whose share admits its account (DESIGN §3).
@_spi(Tools) public struct PeerAccess: Hashable, Sendable, CustomStringConvertible {
    /// The databases the peer may sync whole: all three for the account, `.public` alone for a stranger.
    public var scopes: Set<DatabaseScope>
    /// Zones of the shared database the peer may sync when `scopes` does not hold it all.
    public var sharedZones: Set<ZoneID>

    /// Access to the databases in `scopes` whole, and to `sharedZones` one by one.
    public init(scopes: Set<DatabaseScope>, sharedZones: Set<ZoneID> = []) {
        self.scopes = scopes
        self.sharedZones = sharedZones
    }

    /// A device of this account (or trusted by hand).
    public static let account = PeerAccess(scopes: [.private, .shared, .public])
    /// Any other device of the container.
    public static let publicOnly = PeerAccess(scopes: [.public])

    /// Whether the peer may sync `zone`: its database is allowed whole, or it is one of `sharedZones`.
    public func allows(_ zone: ZoneKey) -> Bool {
        scopes.contains(zone.scope) || (zone.scope == .shared && sharedZones.contains(zone.zoneID))
    }

    /// Whether the peer belongs to this account: it may read the private database.
    public var isAccount: Bool { scopes.contains(.private) }

    /// What both this and `other` allow.
    public func intersection(_ other: PeerAccess) -> PeerAccess {
        var zones = sharedZones.intersection(other.sharedZones)
        if other.scopes.contains(.shared) { zones.formUnion(sharedZones) }
        if scopes.contains(.shared) { zones.formUnion(other.sharedZones) }
        return PeerAccess(scopes: scopes.intersection(other.scopes), sharedZones: zones)
    }

    public var description: String {
        if isAccount { return "account" }
        guard !sharedZones.isEmpty else { return "public only" }
        return "public and shared zone\(sharedZones.count == 1 ? "" : "s") " + sharedZones.map(\.description).sorted().joined(separator: ", ")
    }
}

/// The storage a sync session needs, declared here and implemented by the
/// store side, so the protocol never imports the store. Calls other than
/// `isTrusted` block and run off the network's threads.
@_spi(Tools) public protocol SyncDelegate: Sendable {
    /// What `peer` may sync here, or nil to refuse it: `.account` for a device
    /// of this account, `.publicOnly` for a stranger when the public database
    /// is open to strangers. Answered from memory and at once, on the
    /// network's thread: a refused stranger costs no store access or buffer.
    func access(for peer: DeviceID) -> PeerAccess?
    /// Records that `peer` connected from `address`.
    func noteConnected(_ peer: DeviceID, address: String) throws
    /// The opening message for `peer`: the local zones it may sync, their
    /// vectors, and how far `peer`'s earlier streams were applied here.
    func hello(for peer: DeviceID) throws -> Hello
    /// The zones the store has now (after a local commit, new ones may have
    /// appeared); the session streams those its peer may sync.
    func zones() throws -> [ZoneKey]
    /// The next batch of a zone's stream for `peer`, read in its own short
    /// snapshot; nil when the peer lacks nothing. Throws `PeerNoLongerTrusted`
    /// when that snapshot no longer trusts `peer`.
    func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch?
    /// Applies and commits one batch, and with it `peer`'s resume point for the
    /// zone. Throws `PeerNoLongerTrusted`, committing nothing, when the
    /// transaction finds `peer` no longer trusted.
    func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch
    /// Takes `peer`'s account roster (`AccountRoster.encoded`): the entries
    /// of this store's account it lacks. A roster of another account is set
    /// aside; a malformed or forged one throws, and the session ends.
    func adoptRoster(_ roster: [UInt8], from peer: DeviceID) throws
    /// This store's roster now, encoded, to tell peers of a change (from memory where it can).
    func roster() throws -> [UInt8]
    /// Takes the account membership `peer`'s hello proves
    /// (`AccountMembership.encoded`), from memory and at once; returns
    /// whether it changes what `peer` may sync (its session then restarts).
    func notePeerMembership(_ membership: [UInt8], of peer: DeviceID) -> Bool
    /// Notes shared zones `peer` granted this node and the store neither
    /// holds nor accepted: invitations to a share.
    func noteOfferedZones(_ zones: [ZoneID], from peer: DeviceID) throws
    /// What a hello would say of these shared zones (those held), for a
    /// session that grants them after its hello.
    func sharedZoneAdverts(_ zones: Set<ZoneID>, for peer: DeviceID) throws -> [ZoneAdvert]
    /// Answers `peer`'s request for asset content: only for an asset a
    /// record references in a zone the peer may sync, and held here.
    func serveAsset(_ request: AssetRequest, for peer: DeviceID) throws -> AssetReply
    /// The first round of a reconciliation of `zones` this side begins, from
    /// digests brought up to date with the store.
    func reconcileOpening(zones: [ZoneKey]) throws -> ReconcileMessage
    /// The next round of a reconciliation: this side's answer to `message`
    /// (`reconciler` begun it, or answers the peer's), from up-to-date digests.
    func reconcileRound(_ message: ReconcileMessage, reconciler: Reconciler) throws -> (ReconcileMessage, Reconciler)
    /// The states of `names` of `zone` held here, as one change set claiming
    /// nothing, for `peer` (whose digest differs on them), up to about 1 MiB,
    /// and the names left for the next; no batch when none is held or `peer`
    /// may not have them.
    func repairBatch(zone: ZoneKey, names: [String], for peer: DeviceID) throws -> (OutgoingBatch?, left: [String])
    /// What committed after change sequence `sequence` (nil: unknown), read
    /// at once: the zones and roster now, the store's sequence, and which
    /// peers' batches made which of the new commits.
    func localChanges(after sequence: UInt64?) throws -> LocalChanges
    /// What a hello would say of each zone `peer` may sync, without resume points: the answer to its `holdsRequest`.
    func holdings(for peer: DeviceID) throws -> [ZoneAdvert]
    /// `peer` collected these records' tombstones while this device was away:
    /// each held here in an incarnation up to the residue's goes as the
    /// deletion it was; returns how many records were deleted.
    func applyCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock], from peer: DeviceID) throws -> Int
}

/// What the store committed since a session last looked (`SyncDelegate.localChanges`).
@_spi(Tools) public struct LocalChanges: Hashable, Sendable {
    /// The zones the store has now, as `SyncDelegate.zones()` lists them.
    public var zones: [ZoneKey]
    /// This store's account roster now, encoded (`AccountRoster.encoded`).
    public var roster: [UInt8]
    /// The store's change sequence now: nil when the store does not say.
    public var sequence: UInt64?
    /// The commits after the sequence asked about that applied a peer's
    /// batch, with that peer's device ID; any commit not here is local (or not known).
    public var sources: [UInt64: String]

    /// What committed; no sequence and no sources unless given.
    public init(zones: [ZoneKey], roster: [UInt8], sequence: UInt64? = nil, sources: [UInt64: String] = [:]) {
        self.zones = zones
        self.roster = roster
        self.sequence = sequence
        self.sources = sources
    }
}

extension SyncDelegate {
    /// Default: takes nothing, and what `peer` may sync never changes (`false`).
    public func notePeerMembership(_ membership: [UInt8], of peer: DeviceID) -> Bool { false }
    /// Default: ignores the offer.
    public func noteOfferedZones(_ zones: [ZoneID], from peer: DeviceID) throws {}
    /// Default: no advert.
    public func sharedZoneAdverts(_ zones: Set<ZoneID>, for peer: DeviceID) throws -> [ZoneAdvert] { [] }
    /// Default: `.unavailable` for every request: this device serves no assets.
    public func serveAsset(_ request: AssetRequest, for peer: DeviceID) throws -> AssetReply {
        .unavailable(hash: request.hash, chunk: request.chunk, reason: "this device serves no assets")
    }
    /// Default: throws `ProtocolError.unexpected`: this device keeps no digests.
    public func reconcileOpening(zones: [ZoneKey]) throws -> ReconcileMessage { throw ProtocolError.unexpected("this device keeps no digests") }
    /// Default: no batch, and no name left.
    public func repairBatch(zone: ZoneKey, names: [String], for peer: DeviceID) throws -> (OutgoingBatch?, left: [String]) { (nil, []) }
    /// Default: throws `ProtocolError.unexpected`: this device keeps no digests.
    public func reconcileRound(_ message: ReconcileMessage, reconciler: Reconciler) throws -> (ReconcileMessage, Reconciler) {
        throw ProtocolError.unexpected("this device keeps no digests")
    }
    /// Default: `zones()` and `roster()` now, without a sequence or sources.
    public func localChanges(after sequence: UInt64?) throws -> LocalChanges { LocalChanges(zones: try zones(), roster: try roster()) }
    /// Default: the zone adverts of `hello(for:)`, without their resume points.
    public func holdings(for peer: DeviceID) throws -> [ZoneAdvert] {
        try hello(for: peer).zones.map { ZoneAdvert(zone: $0.zone, zoneState: $0.zoneState, vector: $0.vector, resume: nil) }
    }
    /// Default: deletes nothing and returns 0.
    public func applyCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock], from peer: DeviceID) throws -> Int { 0 }
}

/// The store stopped trusting a device while its session ran: the session
/// ends, and nothing it sent after the change was committed.
package struct PeerNoLongerTrusted: Error, Hashable, Sendable, CustomStringConvertible {
    package let peer: DeviceID
    package init(peer: DeviceID) { self.peer = peer }
    package var description: String { "device \(peer) is no longer trusted" }
}
