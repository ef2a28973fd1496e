/// The persistence a change set is applied into: a store's transaction, or memory.
public protocol ChangeSetTarget {
    mutating func syncState(of zone: ZoneKey) throws -> ZoneSyncState?
    mutating func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) throws
    /// Removes every record of the zone: a newer incarnation of it won.
    mutating func removeAllRecords(in zone: ZoneKey) throws
    mutating func record(named name: String, in zone: ZoneKey) throws -> RecordState?
    /// Persists a changed record; `previous` is what `record(named:in:)` returned.
    mutating func store(_ outcome: MergeOutcome, previous: RecordState?, in zone: ZoneKey) throws
    mutating func mergeSchema(_ schema: Schema) throws
}

/// What applying a change set did.
public struct ApplySummary: Hashable, Sendable {
    public var zone: ZoneKey?
    public var recordsReceived = 0
    public var recordsChanged = 0
    public var conflicts = 0
    /// Records refused because their stamps were too far in the future.
    public var recordsDeferred = 0
    /// Whether the zone's vector advanced to the sender's.
    public var claimTaken = false
    /// Whether the whole change set was for an older incarnation of the zone.
    public var zoneIncarnationStale = false

    public init() {}

    public mutating func add(_ other: ApplySummary) {
        recordsReceived += other.recordsReceived
        recordsChanged += other.recordsChanged
        conflicts += other.conflicts
        recordsDeferred += other.recordsDeferred
        claimTaken = claimTaken || other.claimTaken
        zoneIncarnationStale = zoneIncarnationStale || other.zoneIncarnationStale
    }
}

/// Applies change sets record by record, the one place where remote state
/// enters a replica: zone incarnations, the clock-skew bound, the merge and
/// the version-vector claim are decided here for the store and for memory.
public enum ChangeSetApplier {
    /// Applies the change set `reader` is positioned at (header already read).
    /// The caller commits the target only if this returns: a truncated or
    /// corrupt change set throws before its end and must leave nothing behind.
    public static func apply<Source: ByteSource, Target: ChangeSetTarget>(
        _ reader: inout ChangeSetReader<Source>, into target: inout Target,
        clock: inout HybridLogicalClock, wallClock: UInt64
    ) throws -> ApplySummary {
        guard let header = reader.header else { throw ChangeSetError.malformed("no header read") }
        var summary = ApplySummary()
        summary.zone = header.zone
        let zone = header.zone
        let bound = clock
        let acceptable = { (time: HLCTimestamp) in bound.accepts(time, wallClock: wallClock) }

        var sync = try target.syncState(of: zone) ?? ZoneSyncState(zoneState: header.zoneState)
        let incarnation = header.zoneState.causalLength
        let stale = incarnation < sync.zoneState.causalLength
        if incarnation > sync.zoneState.causalLength {
            try target.removeAllRecords(in: zone)
        }
        if acceptable(header.zoneState.stamp.time) {
            sync.zoneState = sync.zoneState.merged(with: header.zoneState)
        }
        try target.mergeSchema(header.schema)

        var deferred = false
        while let incoming = try reader.nextRecord() {
            summary.recordsReceived += 1
            if stale || !sync.zoneState.exists { continue }
            var newest = HLCTimestamp.zero
            for entry in incoming.vector.entries where entry.time > newest { newest = entry.time }
            guard acceptable(newest) else {
                summary.recordsDeferred += 1
                deferred = true
                continue
            }
            clock.observe(newest)
            let previous = try target.record(named: incoming.recordName, in: zone)
            let outcome = Merge.merge(local: previous, incoming: incoming)
            sync.knowledge.join(incoming.vector)
            guard outcome.changed else { continue }
            summary.recordsChanged += 1
            summary.conflicts += outcome.conflicts.count
            try target.store(outcome, previous: previous, in: zone)
        }
        summary.zoneIncarnationStale = stale
        if !stale, !deferred, header.top.entries.allSatisfy({ acceptable($0.time) }) {
            summary.claimTaken = sync.applyClaim(of: header)
        }
        try target.setSyncState(sync, of: zone)
        return summary
    }
}
