/// One write to a field: the value (nil removes the field) and its stamp.
@_spi(Tools) public struct FieldVersion: Hashable, Sendable {
    /// The value written; nil when the write removed the field.
    public var value: FieldValue?
    /// The write's stamp: the larger one wins the register.
    public var stamp: Stamp
    /// For each `deleteSelf` reference in `value`, in order: the causal length
    /// of the target record its writer saw (see `RecordState.cascadeReferences`).
    public var targetIncarnations: [UInt64]

    /// A write of `value` (nil: a removal) at `stamp`.
    public init(value: FieldValue?, stamp: Stamp, targetIncarnations: [UInt64] = []) {
        self.value = value
        self.stamp = stamp
        self.targetIncarnations = targetIncarnations
    }
}

/// One field's last-writer-wins register. `value == nil` records a removal,
/// which must win or lose against concurrent writes like any other value.
///
/// The register also keeps the writes that lost to the winner while being
/// concurrent with it (`losers`): they are replicated state, so every replica
/// holding the record shows the same conflicts, until a write to the field
/// or a clear resolves them (DESIGN §2.5).
@_spi(Tools) public struct FieldRegister: Hashable, Sendable {
    /// The field's name: a record's registers are sorted by it.
    public var name: String
    /// The winning value; nil when the winning write removed the field.
    public var value: FieldValue?
    /// The winning write's stamp.
    public var stamp: Stamp
    /// Target incarnations and losers, out of line: most registers have
    /// neither, and then copying one copies no extra arrays.
    private var extras: Extras?

    private struct Extras: Hashable, Sendable {
        var targetIncarnations: [UInt64] = []
        var losers: [FieldVersion] = []
    }

    /// See `FieldVersion.targetIncarnations`.
    public var targetIncarnations: [UInt64] {
        get { extras?.targetIncarnations ?? [] }
        set { updateExtras { $0.targetIncarnations = newValue } }
    }

    /// Concurrent writes that lost to this one and are not resolved yet, latest first.
    public var losers: [FieldVersion] {
        get { extras?.losers ?? [] }
        set { updateExtras { $0.losers = newValue } }
    }

    /// A register won by `value` at `stamp`, with its target incarnations and losers (latest first).
    public init(name: String, value: FieldValue?, stamp: Stamp, targetIncarnations: [UInt64] = [], losers: [FieldVersion] = []) {
        self.name = name
        self.value = value
        self.stamp = stamp
        if !targetIncarnations.isEmpty || !losers.isEmpty { extras = Extras(targetIncarnations: targetIncarnations, losers: losers) }
    }

    /// Whether there are losers: cheaper than `losers.isEmpty`.
    public var hasLosers: Bool { extras.map { !$0.losers.isEmpty } ?? false }

    /// Whether there are target incarnations or losers to encode.
    var hasExtras: Bool { extras != nil }

    private mutating func updateExtras(_ change: (inout Extras) -> Void) {
        var updated = extras ?? Extras()
        change(&updated)
        // Empty extras are stored as none, so equal registers compare equal.
        extras = updated.targetIncarnations.isEmpty && updated.losers.isEmpty ? nil : updated
    }

    /// A register holding `winner`, with `losers` (latest first) kept as its conflicts.
    public init(name: String, winner: FieldVersion, losers: [FieldVersion] = []) {
        self.init(name: name, value: winner.value, stamp: winner.stamp, targetIncarnations: winner.targetIncarnations, losers: losers)
    }

    /// The winning write.
    public var winner: FieldVersion { FieldVersion(value: value, stamp: stamp, targetIncarnations: targetIncarnations) }
}

/// Everything a replica knows of one record: the merge unit, what change sets
/// carry and what the store persists.
///
/// A record lives in incarnations counted by its causal length: odd while it
/// exists, even once deleted. A delete moves an incarnation `n` to `n + 1`; a
/// write made after seeing a delete (or with nothing seen) moves to the next
/// odd length. The larger causal length wins outright; equal lengths merge
/// field by field.
@_spi(Tools) public struct RecordState: Hashable, Sendable {
    /// The record's name, unique in its zone: its digest key as UTF-8.
    public var recordName: String
    /// The incarnation count: odd while the record exists, even once deleted.
    public var causalLength: UInt64
    /// The record type, a register of its own (concurrent creations may disagree).
    public var recordType: String
    /// The stamp of the write that set `recordType`: the type register's winner.
    public var typeStamp: Stamp
    /// The earliest creation stamp of the current incarnation.
    public var created: Stamp
    /// For a deleted incarnation: the latest delete stamp.
    public var deleted: Stamp?
    /// The current incarnation's fields, sorted by name. Empty once deleted.
    public var fields: [FieldRegister]
    /// For each replica, its latest write to this record that is merged in.
    public var vector: VersionVector
    /// Parts of writes still shown here that the state no longer shows (see `WriteGhost`), sorted.
    public var ghosts: [WriteGhost]

    /// A state from its parts, taken as given: `fields` sorted by name and `ghosts` sorted,
    /// as the codec requires.
    public init(
        recordName: String, causalLength: UInt64, recordType: String, typeStamp: Stamp,
        created: Stamp, deleted: Stamp? = nil, fields: [FieldRegister], vector: VersionVector, ghosts: [WriteGhost] = []
    ) {
        self.ghosts = ghosts
        self.recordName = recordName
        self.causalLength = causalLength
        self.recordType = recordType
        self.typeStamp = typeStamp
        self.created = created
        self.deleted = deleted
        self.fields = fields
        self.vector = vector
    }

    /// Whether the current incarnation exists: the causal length is odd.
    public var isAlive: Bool { causalLength % 2 == 1 }

    /// The latest stamp the record carries: its modification.
    public var lastModified: Stamp {
        var latest = max(typeStamp, created)
        if let deleted { latest = max(latest, deleted) }
        for field in fields where field.stamp > latest { latest = field.stamp }
        return latest
    }

    /// The record's causal length and vector: all a merge needs to tell that
    /// an incoming state brings nothing new.
    public var version: RecordVersion { RecordVersion(causalLength: causalLength, vector: vector) }

    /// Whether every stamp the state holds is covered by its vector: the
    /// invariant the merge relies on to tell an overwritten write from one it never saw.
    public var vectorCoversEveryStamp: Bool {
        guard vector.covers(typeStamp), vector.covers(created) else { return false }
        if let deleted, !vector.covers(deleted) { return false }
        for field in fields {
            guard vector.covers(field.stamp) else { return false }
            for loser in field.losers where !vector.covers(loser.stamp) { return false }
        }
        return true
    }

    /// The register of field `name`, a removal included; nil when this incarnation has none.
    public func register(named name: String) -> FieldRegister? {
        var low = 0
        var high = fields.count
        while low < high {
            let mid = (low + high) / 2
            if fields[mid].name < name { low = mid + 1 } else { high = mid }
        }
        return low < fields.count && fields[low].name == name ? fields[low] : nil
    }

    /// The field's current value; nil when absent or removed.
    public subscript(field name: String) -> FieldValue? { register(named: name)?.value }

    /// Fields with a value, in name order.
    public var presentFields: [(name: String, value: FieldValue)] {
        fields.compactMap { register in register.value.map { (register.name, $0) } }
    }

    /// CloudKit's recordChangeTag: changes whenever the merged state does, and
    /// is the same on every replica holding the same state.
    public var changeTag: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ value: UInt64) {
            var value = value
            for _ in 0..<8 {
                hash = (hash ^ (value & 0xFF)) &* 0x100_0000_01b3
                value >>= 8
            }
        }
        mix(causalLength)
        for entry in vector.entries {
            mix(entry.replica.high)
            mix(entry.replica.low)
            mix(entry.time.rawValue)
        }
        return String(hash, radix: 36)
    }
}

/// A record's causal length and version vector, readable without its fields.
@_spi(Tools) public struct RecordVersion: Hashable, Sendable {
    /// The incarnation count: odd while the record exists, even once deleted.
    public var causalLength: UInt64
    /// For each replica, its latest write to the record that is merged in.
    public var vector: VersionVector

    /// The version of a state with this causal length and vector.
    public init(causalLength: UInt64, vector: VersionVector) {
        self.causalLength = causalLength
        self.vector = vector
    }

    /// Whether a state of this version already holds everything `incoming` holds,
    /// so merging it would change nothing (for states that keep the invariants
    /// `RecordCodec` checks: every stamp of a state is covered by its vector).
    public func covers(_ incoming: RecordVersion) -> Bool {
        causalLength >= incoming.causalLength && vector.dominates(incoming.vector)
    }
}

/// A zone's own register: incarnations as for records (odd exists, even deleted).
@_spi(Tools) public struct ZoneState: Hashable, Sendable {
    /// The incarnation count: odd while the zone exists, even once deleted; the larger wins.
    public var causalLength: UInt64
    /// The stamp of the zone's latest creation or deletion: it breaks ties between equal lengths.
    public var stamp: Stamp

    /// A zone state as read or received.
    public init(causalLength: UInt64, stamp: Stamp) {
        self.causalLength = causalLength
        self.stamp = stamp
    }

    /// Whether the zone exists: the causal length is odd.
    public var exists: Bool { causalLength % 2 == 1 }

    /// The winner of the two: the larger causal length, then the later stamp.
    public func merged(with other: ZoneState) -> ZoneState {
        if causalLength != other.causalLength { return causalLength > other.causalLength ? self : other }
        return stamp >= other.stamp ? self : other
    }
}
