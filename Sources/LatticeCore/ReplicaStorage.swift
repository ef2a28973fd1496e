@_spi(Tools) import LatticeCrypto

/// Where a replica keeps its state: a store transaction on disk, or memory.
///
/// The replica's logic — local saves and deletes, cascades, conflicts, zones,
/// schema and the application of change sets — is written once over these
/// primitives (`ReplicaStorage+*.swift`), so the store and the in-memory
/// replica run the same code and what the fuzzer proves of one holds for the
/// other. Implementations only persist; they decide nothing.
package protocol ReplicaStorage: AnyObject {
    /// The replica this storage belongs to: the writer of its local stamps.
    var replica: ReplicaID { get }
    /// The hybrid clock, persisted with the rest when the storage commits.
    var clock: HybridLogicalClock { get set }
    /// Milliseconds since 1970 by the wall clock.
    func wallClockNow() -> UInt64

    func syncState(of zone: ZoneKey) throws -> ZoneSyncState?
    /// Persists a zone's state, creating the zone's entry if needed. Called
    /// only with a state that differs from the stored one.
    func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) throws
    /// Removes every record of the zone: it was deleted, or a newer incarnation
    /// of it won (by the zone write `stamp`; nil when this device drops it alone).
    func removeAllRecords(in zone: ZoneKey, by stamp: Stamp?) throws

    /// The record's state, tombstones included; nil if never seen.
    func record(named name: String, in zone: ZoneKey) throws -> RecordState?
    /// The record's causal length and vector, cheaper than the whole state where it can be.
    func recordVersion(named name: String, in zone: ZoneKey) throws -> RecordVersion?
    /// The record's state for a merge of `incoming`, or `.covers` when the
    /// stored version already holds all of it (the state need not be decoded).
    func recordToMerge(named name: String, in zone: ZoneKey, incoming: RecordState) throws -> RecordLookup
    /// Persists a record's new state; `previous` is what `record(named:in:)` returned.
    func store(_ state: RecordState, previous: RecordState?, in zone: ZoneKey) throws
    /// What is left of the record's collected tombstone, if it was collected
    /// (`collectTombstones`) and not created again since.
    func residue(named name: String, in zone: ZoneKey) throws -> RecordResidue?
    /// Replaces a collected record's residue: a state of it arrived that adds
    /// to its vector (a change, committed as a tombstone's would be).
    func storeResidue(_ residue: RecordResidue, named name: String, in zone: ZoneKey) throws
    /// Removes a record whole, leaving no tombstone or residue: what a replica
    /// took that was void (a revoked participant's write no one vouches for).
    func forget(_ state: RecordState, in zone: ZoneKey) throws
    /// Drops every peer's resume point in the zone: their next streams start from the vector.
    func forgetResumePoints(in zone: ZoneKey) throws
    /// Records this replica dropped that held valid writes of its own, and
    /// the earliest of those writes: until the records come back from a
    /// peer, it tells peers its own entry below that (`vectorToTell`), which
    /// its later writes would otherwise raise past them.
    func noteOwnWritesToRefetch(_ names: Set<String>, from earliest: HLCTimestamp, in zone: ZoneKey) throws
    /// Those records arrived from a peer.
    func noteRefetched(_ names: Set<String>, in zone: ZoneKey) throws
    /// The records noted to fetch again and not arrived yet.
    func ownRefetchNames(in zone: ZoneKey) throws -> Set<String>
    /// The stamps of the deletes the zone's residues stand for: their blocks stay.
    func residueDeletions(in zone: ZoneKey) throws -> [Stamp]
    /// Removes a tombstone, keeping its residue: no reader's view changes, so
    /// it takes no commit sequence.
    func collect(_ tombstone: RecordState, in zone: ZoneKey) throws
    /// The zone's tombstones, for collection.
    func tombstones(in zone: ZoneKey) throws -> [RecordState]
    /// Whether this replica replicates the zone (selective sync): a change set of one it does not is read and kept nowhere.
    func replicates(_ zone: ZoneKey) throws -> Bool
    /// Live records whose fields reference `target` with `deleteSelf`.
    func cascadeSources(of target: String, in zone: ZoneKey) throws -> [String]

    func schema() throws -> Schema
    /// Persists what a schema merge changed (never empty).
    func persistSchemaChanges(_ changes: Schema) throws
    /// Persists the index kinds removed here from a field (empty: none), and
    /// keeps the field's index to the kinds it has left.
    func persistIndexRemovals(_ removed: IndexKinds, field: String, of recordType: String) throws

    /// The identity local writes are signed with. Nil only for an in-memory
    /// replica under a made-up replica ID (unit tests): it neither signs nor checks.
    var signer: Identity? { get }
    /// Whether writes received are checked against their writers' signatures
    /// (always, but where a benchmark measures what the check costs).
    var checksWrites: Bool { get }
    /// The most entries a block this replica seals holds: `WriteBlock.maximumEntries`
    /// but where a test makes blocks small, to have many of them.
    var sealedBlockEntries: Int { get }
    /// The running transaction's local writes, sealed when it commits.
    var pendingLocalWrites: [PendingLocalWrite] { get set }
    /// The state of a record a local write of the running transaction
    /// noted, as it is now: what `sealLocalWrites` signs. A storage that
    /// keeps those states at hand spares reading each again.
    func stateToSeal(named name: String, in zone: ZoneKey) throws -> RecordState?
    /// A block of `replica` in `zone`: the first whose `last` is at or after
    /// `time`, or with nil the latest (`WriteBlock`).
    func writeBlock(of replica: ReplicaID, in zone: ZoneKey, covering time: HLCTimestamp?) throws -> WriteBlock?
    /// Every block of `replica` in `zone` whose `last` lies in `range`, by
    /// `last`; without `entries`, as heads (a storage may still give entries).
    func writeBlocks(of replica: ReplicaID, in zone: ZoneKey, endingIn range: ClosedRange<HLCTimestamp>, entries: Bool) throws -> [WriteBlock]
    /// The block of `replica` in `zone` with the greatest `last` before `time`, whole.
    func writeBlock(of replica: ReplicaID, in zone: ZoneKey, endingBefore time: HLCTimestamp) throws -> WriteBlock?
    /// Persists a block (replacing one with the same writer, zone and `last`).
    func insertWriteBlock(_ block: WriteBlock) throws
    /// Forgets a block (a later version superseded it, or it proves nothing shown).
    func removeWriteBlock(_ block: WriteBlock) throws
    /// The replicas with blocks in `zone`.
    func blockWriters(in zone: ZoneKey) throws -> [ReplicaID]
    /// Notes that this replica's own blocks in `zone` ending up to `last`
    /// were collected: a peer's head of this replica up to there is one it signed.
    func noteOwnBlocksCollected(through last: HLCTimestamp, in zone: ZoneKey) throws
    /// Calls `body` with every record state of the zone, tombstones included.
    func forEachRecord(in zone: ZoneKey, _ body: (RecordState) throws -> Void) throws
    /// Why `replica`'s writes stamped `time` (or a block or vector of it
    /// reaching `time`) are refused, or nil to accept them.
    func refusal(ofWriter replica: ReplicaID, at time: HLCTimestamp) -> String?
    /// Whether two replicas write for one account (`WriteRights`).
    func sameAccount(_ lhs: ReplicaID, _ rhs: ReplicaID) -> Bool
    /// False only for a test's modified client: it writes and takes what `WriteRights` refuses.
    var enforcesWriteRights: Bool { get }
    /// The accounts `replica` is known to belong to: this replica's own
    /// account for its devices, and the memberships shared zones brought.
    func accounts(of replica: ReplicaID) -> Set<String>
    /// Keeps the memberships a shared zone's change set carried (each
    /// checked already), to judge and relay its writers' writes.
    func takeMemberships(_ memberships: [AccountMembership]) throws
    /// The memberships of `replicas` held here, for a shared zone's change set.
    func memberships(of replicas: [ReplicaID]) throws -> [AccountMembership]
}

/// What `recordToMerge` found.
@_spi(Tools) public enum RecordLookup {
    case absent
    /// The stored state already holds everything the incoming one does.
    case covers
    case state(RecordState)
}

extension ReplicaStorage {
    package func stateToSeal(named name: String, in zone: ZoneKey) throws -> RecordState? { try record(named: name, in: zone) }

    package func refusal(ofWriter replica: ReplicaID, at time: HLCTimestamp) -> String? { nil }

    /// Per device until accounts' rosters travel with the zones that need them.
    package func sameAccount(_ lhs: ReplicaID, _ rhs: ReplicaID) -> Bool { lhs == rhs }

    package var enforcesWriteRights: Bool { true }

    package func accounts(of replica: ReplicaID) -> Set<String> { [] }

    package func takeMemberships(_ memberships: [AccountMembership]) throws {}

    package func memberships(of replicas: [ReplicaID]) throws -> [AccountMembership] { [] }

    package var checksWrites: Bool { true }

    package var sealedBlockEntries: Int { WriteBlock.maximumEntries }

    /// Nothing to note where no one asks whether a head was signed (`holdsOwnHead` is the store's).
    package func noteOwnBlocksCollected(through last: HLCTimestamp, in zone: ZoneKey) throws {}
    package func forgetResumePoints(in zone: ZoneKey) throws {}
    /// Nothing to note where nothing tells peers its vector (`vectorToTell` is the store's).
    package func noteOwnWritesToRefetch(_ names: Set<String>, from earliest: HLCTimestamp, in zone: ZoneKey) throws {}
    package func noteRefetched(_ names: Set<String>, in zone: ZoneKey) throws {}
    package func ownRefetchNames(in zone: ZoneKey) throws -> Set<String> { [] }
    /// Every zone, where nothing chooses (selective sync is the store's).
    package func replicates(_ zone: ZoneKey) throws -> Bool { true }

    package func recordVersion(named name: String, in zone: ZoneKey) throws -> RecordVersion? {
        try record(named: name, in: zone)?.version
    }

    /// A fresh stamp for a local write, later than every stamp this replica has seen.
    /// The tick before it is left unused: a block may put a commit's mark
    /// there (`CommitMark`), just before the first of the commit's writes it holds.
    package func nextStamp() -> Stamp {
        let wallClock = wallClockNow()
        _ = clock.tick(wallClock: wallClock)
        return Stamp(time: clock.tick(wallClock: wallClock), replica: replica)
    }

    /// Merges `schema` into the stored one; returns what changed.
    @discardableResult
    func mergeSchema(_ schema: Schema) throws -> Schema {
        var current = try self.schema()
        let changes = current.merge(schema)
        if !changes.isEmpty { try persistSchemaChanges(changes) }
        return changes
    }

    /// The zone's state for a local write, which stamps after it.
    func liveSyncState(of zone: ZoneKey) throws -> ZoneSyncState {
        guard let sync = try syncState(of: zone), sync.zoneState.exists else { throw ReplicaError.zoneNotFound(zone) }
        keepClockPastOwnWrites(in: sync)
        return sync
    }

    /// Moves the clock past every write of this replica the zone holds. The
    /// clock is persisted apart from the writes (and a store copied back, or
    /// its `hlc` edited, can hold it behind them): a stamp at or before one's
    /// own earlier write would lose to it and break the order a writer's
    /// signed blocks keep.
    func keepClockPastOwnWrites(in sync: ZoneSyncState) {
        let own = sync.knowledge[replica]
        if own > clock.last { clock.observe(own) }
    }

    /// Accounts for a local write to a zone.
    func recordLocalWrite(_ stamp: Stamp, in zone: ZoneKey, sync: ZoneSyncState) throws {
        var sync = sync
        sync.recordLocalWrite(stamp)
        try setSyncState(sync, of: zone)
    }
}

/// Why the replica refused a local operation.
package enum ReplicaError: Error, Equatable, Sendable, CustomStringConvertible {
    case zoneNotFound(ZoneKey)
    case unknownRecord(String)
    case recordTypeMismatch(record: String, stored: String, requested: String)
    case schema(SchemaViolation)
    /// An index that cannot be made, and why.
    case index(String)
    /// An index on a record type or field the schema does not have.
    case indexTargetMissing(String)
    /// A write this replica has no right to make (`WriteRights`).
    case permission(String)

    package var description: String {
        switch self {
        case .zoneNotFound(let zone): return "zone \(zone.zoneID) does not exist; create it first"
        case .unknownRecord(let name): return "record \(name) does not exist"
        case .recordTypeMismatch(let name, let stored, let requested):
            return "record \(name) is a \(stored); cannot save it as a \(requested)"
        case .schema(let violation): return violation.description
        case .index(let reason), .indexTargetMissing(let reason), .permission(let reason): return reason
        }
    }
}
