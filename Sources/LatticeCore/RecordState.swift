/// One field's last-writer-wins register. `value == nil` records a removal,
/// which must win or lose against concurrent writes like any other value.
public struct FieldRegister: Hashable, Sendable {
    public var name: String
    public var value: FieldValue?
    public var stamp: Stamp

    public init(name: String, value: FieldValue?, stamp: Stamp) {
        self.name = name
        self.value = value
        self.stamp = stamp
    }
}

/// Everything a replica knows of one record: the merge unit, what change sets
/// carry and what the store persists.
///
/// A record lives in incarnations counted by its causal length: odd while it
/// exists, even once deleted. A delete moves an incarnation `n` to `n + 1`; a
/// write made after seeing a delete (or with nothing seen) moves to the next
/// odd length. The larger causal length wins outright; equal lengths merge
/// field by field.
public struct RecordState: Hashable, Sendable {
    public var recordName: String
    public var causalLength: UInt64
    /// The record type, a register of its own (concurrent creations may disagree).
    public var recordType: String
    public var typeStamp: Stamp
    /// The earliest creation stamp of the current incarnation.
    public var created: Stamp
    /// For a deleted incarnation: the latest delete stamp.
    public var deleted: Stamp?
    /// The current incarnation's fields, sorted by name. Empty once deleted.
    public var fields: [FieldRegister]
    /// For each replica, its latest write to this record that is merged in.
    public var vector: VersionVector

    public init(
        recordName: String, causalLength: UInt64, recordType: String, typeStamp: Stamp,
        created: Stamp, deleted: Stamp? = nil, fields: [FieldRegister], vector: VersionVector
    ) {
        self.recordName = recordName
        self.causalLength = causalLength
        self.recordType = recordType
        self.typeStamp = typeStamp
        self.created = created
        self.deleted = deleted
        self.fields = fields
        self.vector = vector
    }

    public var isAlive: Bool { causalLength % 2 == 1 }

    /// The latest stamp the record carries: its modification.
    public var lastModified: Stamp {
        var latest = max(typeStamp, created)
        if let deleted { latest = max(latest, deleted) }
        for field in fields where field.stamp > latest { latest = field.stamp }
        return latest
    }

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

/// A zone's own register: incarnations as for records (odd exists, even deleted).
public struct ZoneState: Hashable, Sendable {
    public var causalLength: UInt64
    public var stamp: Stamp

    public init(causalLength: UInt64, stamp: Stamp) {
        self.causalLength = causalLength
        self.stamp = stamp
    }

    public var exists: Bool { causalLength % 2 == 1 }

    public func merged(with other: ZoneState) -> ZoneState {
        if causalLength != other.causalLength { return causalLength > other.causalLength ? self : other }
        return stamp >= other.stamp ? self : other
    }
}
