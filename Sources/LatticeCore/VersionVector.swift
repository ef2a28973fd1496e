/// For each replica, the latest clock reading of its writes that is accounted for.
///
/// Stored as a small array sorted by replica: vectors hold one entry per device
/// that ever wrote, a handful in practice, where an array beats a dictionary.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// One entry per replica, sorted by replica.
    public private(set) var entries: [(replica: ReplicaID, time: HLCTimestamp)]

    /// The empty vector: it accounts for no write.
    public init() { entries = [] }

    /// A vector of `pairs`, keeping the latest time given for each replica.
    public init<S: Sequence>(_ pairs: S) where S.Element == (ReplicaID, HLCTimestamp) {
        entries = []
        for (replica, time) in pairs { advance(replica, to: time) }
    }

    /// Whether the vector has no entry at all.
    public var isEmpty: Bool { entries.isEmpty }

    /// The entry of `replica`; `.zero` when the vector has none.
    public subscript(replica: ReplicaID) -> HLCTimestamp {
        guard let index = index(of: replica) else { return .zero }
        return entries[index].time
    }

    /// Raises the entry of `replica` to `time` if it is lower.
    public mutating func advance(_ replica: ReplicaID, to time: HLCTimestamp) {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].replica < replica { low = mid + 1 } else { high = mid }
        }
        if low < entries.count, entries[low].replica == replica {
            if entries[low].time < time { entries[low].time = time }
        } else {
            entries.insert((replica, time), at: low)
        }
    }

    /// Lowers the entry of `replica` below `time` if it is at or above it
    /// (an entry that would reach zero goes): what a replica holds no more.
    public mutating func lower(_ replica: ReplicaID, below time: HLCTimestamp) {
        guard let index = index(of: replica), entries[index].time >= time else { return }
        if time.rawValue <= 1 { entries.remove(at: index) } else { entries[index].time = HLCTimestamp(rawValue: time.rawValue - 1) }
    }

    /// Whether `stamp`'s write is accounted for by this vector.
    public func covers(_ stamp: Stamp) -> Bool { self[stamp.replica] >= stamp.time }

    /// The entry-wise maximum.
    public func joined(with other: VersionVector) -> VersionVector {
        var result = self
        result.join(other)
        return result
    }

    /// Raises each entry to `other`'s where that is higher: `joined(with:)` in place.
    public mutating func join(_ other: VersionVector) {
        for entry in other.entries { advance(entry.replica, to: entry.time) }
    }

    /// The entry-wise minimum: what both vectors account for (a replica one
    /// of them lacks counts as zero there).
    public func met(with other: VersionVector) -> VersionVector {
        var result = VersionVector()
        for entry in entries {
            let time = min(entry.time, other[entry.replica])
            if time > .zero { result.advance(entry.replica, to: time) }
        }
        return result
    }

    /// How two vectors relate; `concurrent` when each has something the other lacks.
    public enum Ordering: Sendable, Equatable {
        case equal, lesser, greater, concurrent
    }

    /// How this vector relates to `other`, entry by entry; a missing entry counts as zero.
    public func compare(to other: VersionVector) -> Ordering {
        var lesser = false
        var greater = false
        var i = 0
        var j = 0
        while i < entries.count || j < other.entries.count {
            if j == other.entries.count || (i < entries.count && entries[i].replica < other.entries[j].replica) {
                if entries[i].time > .zero { greater = true }
                i += 1
            } else if i == entries.count || other.entries[j].replica < entries[i].replica {
                if other.entries[j].time > .zero { lesser = true }
                j += 1
            } else {
                if entries[i].time > other.entries[j].time { greater = true }
                if entries[i].time < other.entries[j].time { lesser = true }
                i += 1
                j += 1
            }
        }
        switch (lesser, greater) {
        case (false, false): return .equal
        case (true, false): return .lesser
        case (false, true): return .greater
        case (true, true): return .concurrent
        }
    }

    /// `self ≥ other` entry by entry.
    public func dominates(_ other: VersionVector) -> Bool {
        let ordering = compare(to: other)
        return ordering == .equal || ordering == .greater
    }

    public static func == (lhs: VersionVector, rhs: VersionVector) -> Bool {
        lhs.compare(to: rhs) == .equal
    }

    public func hash(into hasher: inout Hasher) {
        for entry in entries where entry.time > .zero {
            hasher.combine(entry.replica)
            hasher.combine(entry.time)
        }
    }

    public var description: String {
        "[" + entries.map { "\($0.replica.description.prefix(8)):\($0.time)" }.joined(separator: ", ") + "]"
    }

    private func index(of replica: ReplicaID) -> Int? {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].replica < replica { low = mid + 1 } else { high = mid }
        }
        return low < entries.count && entries[low].replica == replica ? low : nil
    }
}
