@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// Where a sender is in its stream of one zone: the change sequence and row
/// of the last record it sent. Records are streamed in that order, so "all up
/// to here" is one pair. Meaningful only to the store that made it.
@_spi(Tools) public struct StreamCursor: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The change sequence (store commit) of the last record sent; 0 before every record.
    public var sequence: UInt64
    /// The record's row in the store: orders records within one change sequence.
    public var row: UInt64

    /// Before every record: where a stream with no resume point starts.
    public static let start = StreamCursor(sequence: 0, row: 0)

    /// After every record of change sequence `sequence`.
    public static func end(of sequence: UInt64) -> StreamCursor { StreamCursor(sequence: sequence, row: (1 << 62) - 1) }

    /// The cursor at record `row` of change sequence `sequence`.
    public init(sequence: UInt64, row: UInt64) {
        self.sequence = sequence
        self.row = row
    }

    public static func < (lhs: StreamCursor, rhs: StreamCursor) -> Bool { (lhs.sequence, lhs.row) < (rhs.sequence, rhs.row) }
    public var description: String { "\(sequence).\(row)" }
}

/// What one side says of a zone when a session opens.
@_spi(Tools) public struct ZoneAdvert: Hashable, Sendable {
    /// The zone described: its database and zone ID.
    public var zone: ZoneKey
    /// The zone's own state at the sender: its incarnation (odd while it exists) and stamp.
    public var zoneState: ZoneState
    /// Everything of the zone up to this vector is held.
    public var vector: VersionVector
    /// How far the recipient's earlier streams of this zone were applied here,
    /// so it resumes rather than re-sends.
    public var resume: StreamCursor?

    /// What the sender says of `zone`; `resume` nil when none of the recipient's streams was applied.
    public init(zone: ZoneKey, zoneState: ZoneState, vector: VersionVector, resume: StreamCursor?) {
        self.zone = zone
        self.zoneState = zoneState
        self.vector = vector
        self.resume = resume
    }
}

/// The first message of each side once the channel is up.
@_spi(Tools) public struct Hello: Hashable, Sendable {
    /// The container identifier (`iCloud.com.example.movies`): a session between two differing ones closes.
    public var container: String
    /// What the sender says of each zone it syncs with the receiver.
    public var zones: [ZoneAdvert]
    /// The sender's account roster (`AccountRoster.encoded`), or empty.
    public var roster: [UInt8]
    /// The databases the sender syncs with the receiver: a device that does
    /// not trust the receiver grants it the public database only, and the
    /// receiver then streams it nothing else.
    public var grants: Set<DatabaseScope>
    /// Shared zones the sender syncs with the receiver, when `grants` does not
    /// hold the whole shared database: for a zone the receiver does not hold
    /// yet, an invitation.
    public var sharedGrants: [ZoneID]
    /// The sender's membership of its account (`AccountMembership.encoded`), or empty.
    public var membership: [UInt8]
    /// The sender only compares digests (`lattice diff`): neither side streams.
    public var comparesOnly = false
    /// The sender relays: it says which devices it has sessions with
    /// (`neighbors`), and answers `holdsRequest`.
    public var relays = false
    /// Zones the sender does not replicate (selective sync): the receiver
    /// streams it none of them, and does not wait for it to acknowledge
    /// their deletes. Sent to peers of `SyncWire.selectiveVersion` and later.
    public var excluded: [ZoneKey] = []
    /// With it, the private zones the sender replicates are these, and no
    /// other: the receiver streams it no other private zone. Sent, as
    /// `excluded`, to peers of `SyncWire.selectiveVersion` and later.
    public var replicatesOnly: [ZoneKey]?

    /// Whether the sender replicates `zone`, by `excluded` and `replicatesOnly`.
    public func replicates(_ zone: ZoneKey) -> Bool {
        if zone.scope == .private, !zone.zoneID.isDefault, let only = replicatesOnly, !only.contains(zone) { return false }
        return !excluded.contains(zone)
    }

    /// A hello; by default it grants all three databases and carries no roster or membership.
    public init(container: String, zones: [ZoneAdvert], roster: [UInt8] = [], grants: Set<DatabaseScope> = [.private, .shared, .public], sharedGrants: [ZoneID] = [], membership: [UInt8] = []) {
        self.container = container
        self.zones = zones
        self.roster = roster
        self.grants = grants
        self.sharedGrants = sharedGrants
        self.membership = membership
    }

    /// What the sender grants, as an access.
    public var granted: PeerAccess { PeerAccess(scopes: grants, sharedZones: Set(sharedGrants)) }
}

/// Shared zones a side grants after its hello: the peer's hello proved an
/// account that opens them (a share admits it), so the session widens
/// rather than starting again.
package struct Grants: Hashable, Sendable {
    package var sharedZones: [ZoneID]
    /// The sender's state of those zones it holds.
    package var zones: [ZoneAdvert]

    package init(sharedZones: [ZoneID], zones: [ZoneAdvert]) {
        self.sharedZones = sharedZones
        self.zones = zones
    }
}

/// A piece of a change-set batch. A batch is one complete change set; it is
/// cut into parts so no frame exceeds the maximum. The last part carries the
/// cursor after the batch, and whether the batch ends the stream (then its
/// change set claims the sender's vector).
package struct ChangesPart: Hashable, Sendable {
    package struct End: Hashable, Sendable {
        package var cursor: StreamCursor
        package var final: Bool
        package var records: Int

        package init(cursor: StreamCursor, final: Bool, records: Int) {
            self.cursor = cursor
            self.final = final
            self.records = records
        }
    }

    package var zone: ZoneKey
    package var bytes: [UInt8]
    package var end: End?

    package init(zone: ZoneKey, bytes: [UInt8], end: End?) {
        self.zone = zone
        self.bytes = bytes
        self.end = end
    }
}

/// The receiver committed a batch: its cursor, and the zone's vector after it.
package struct Acknowledgement: Hashable, Sendable {
    package var zone: ZoneKey
    package var cursor: StreamCursor
    package var vector: VersionVector

    package init(zone: ZoneKey, cursor: StreamCursor, vector: VersionVector) {
        self.zone = zone
        self.cursor = cursor
        self.vector = vector
    }
}

/// The sender is about to stream a zone: how much is left, for progress.
package struct StreamStart: Hashable, Sendable {
    package var zone: ZoneKey
    package var records: Int
    package var bytes: Int

    package init(zone: ZoneKey, records: Int, bytes: Int) {
        self.zone = zone
        self.records = records
        self.bytes = bytes
    }
}

/// Everything sent inside the encrypted channel.
package enum SyncMessage: Hashable, Sendable {
    case hello(Hello)
    case streamStart(StreamStart)
    case changes(ChangesPart)
    case acknowledgement(Acknowledgement)
    /// The sender has sent everything it had when the session opened (or since the last one).
    case caughtUp
    /// `caughtUp`, sent once the sender took `grants` grants messages of the
    /// receiver: the receiver counts it only after the streams its last
    /// grants opened (a plain `caughtUp` may predate them).
    case caughtUpAfter(grants: Int)
    /// More shared zones granted (`Grants`).
    case grants(Grants)
    /// The sender's account roster changed during the session: all of it, encoded.
    case roster([UInt8])
    case ping
    case pong
    /// A request for an asset's outline or one of its chunks.
    case assetRequest(AssetRequest)
    /// The answer to an `assetRequest`.
    case assetReply(AssetReply)
    /// A round of a reconciliation this side began (`Reconciler`).
    case reconcile(ReconcileMessage)
    /// The answer to a `reconcile`.
    case reconcileReply(ReconcileMessage)
    /// The devices of the account the sender has a running session with, all
    /// of them (sent again when they change): a commit the receiver applies
    /// from the sender need not be relayed to them, the sender streams it.
    case neighbors([DeviceID])
    /// Asks for the receiver's vector of each zone (`holds`).
    case holdsRequest
    /// The answer to a `holdsRequest`: what the sender holds of each zone (no resume points).
    case holds([ZoneAdvert])
    /// Deleted records whose tombstones the sender collected while the
    /// receiver was away past the tombstone horizon (its hello's vector does
    /// not cover them): the receiver's view of the zone is too old for an
    /// incremental sync, and any of these it still holds in an older
    /// incarnation is deleted there too (`CollectedRecord`).
    /// `zoneIncarnation`: the zone's causal length at the sender; a receiver
    /// holding another incarnation of the zone takes none of it.
    /// `blocks`: the signed blocks of the deletes the residues name
    /// (`RecordResidue.deletion`): the receiver deletes a record it holds
    /// live on a delete its writer signed, never on the sender's word.
    case collected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock])
}

/// A record whose tombstone was collected: its name and what is left of the tombstone.
@_spi(Tools) public struct CollectedRecord: Hashable, Sendable {
    /// The record's name in the zone the `collected` message is about.
    public var name: String
    /// What the sender kept of the tombstone: its incarnation, vector and delete.
    public var residue: RecordResidue

    /// The collected record `name`, with what is left of its tombstone.
    public init(name: String, residue: RecordResidue) {
        self.name = name
        self.residue = residue
    }
}
