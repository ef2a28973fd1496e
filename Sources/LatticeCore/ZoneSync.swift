/// What a replica knows about one zone's history, for anti-entropy.
///
/// - `vector`: everything up to it is held ("I have all writes of r up to t").
///   Only ever advanced by local writes and by change sets that claim it.
/// - `knowledge`: everything held is below it (an upper bound). Merging any
///   record raises it, even out of order.
///
/// A store also keeps, per commit, the knowledge it had then (a checkpoint).
/// To serve a peer whose `vector` is V, it sends the records changed after the
/// last checkpoint whose knowledge V covers: every record unchanged since then
/// holds only writes V already has. Cost follows what V lacks, not store size.
@_spi(Tools) public struct ZoneSyncState: Hashable, Sendable {
    /// The zone's incarnation (odd causal length while it exists) and the stamp of its last creation or deletion.
    public var zoneState: ZoneState
    /// Every write up to it is held: raised only by local writes and claims taken (`applyClaim`).
    public var vector: VersionVector
    /// Every write held is below it: raised by every record merged, even out of order.
    public var knowledge: VersionVector

    /// A zone's state as read, or a new zone's: by default nothing held (both vectors empty).
    public init(zoneState: ZoneState, vector: VersionVector = VersionVector(), knowledge: VersionVector = VersionVector()) {
        self.zoneState = zoneState
        self.vector = vector
        self.knowledge = knowledge
    }

    /// Accounts for a local write.
    public mutating func recordLocalWrite(_ stamp: Stamp) {
        vector.advance(stamp.replica, to: stamp.time)
        knowledge.advance(stamp.replica, to: stamp.time)
    }

    /// Accounts for a fully applied change set: its claim holds if we had its base.
    /// Returns whether the claim was taken.
    @discardableResult
    public mutating func applyClaim(of header: ChangeSetHeader) -> Bool {
        guard header.claimsTop, vector.dominates(header.base) else { return false }
        vector.join(header.top)
        knowledge.join(vector)
        return true
    }
}

/// A commit's checkpoint: the change sequence it got and the knowledge it had.
package struct Checkpoint: Hashable, Sendable {
    package var sequence: UInt64
    package var knowledge: VersionVector

    package init(sequence: UInt64, knowledge: VersionVector) {
        self.sequence = sequence
        self.knowledge = knowledge
    }

    /// The sequence after which a peer at `vector` may lack records: the last
    /// checkpoint whose knowledge `vector` covers, or 0 for "everything".
    /// Knowledge only grows along the checkpoints, so a binary search finds it.
    package static func deltaStart(in checkpoints: [Checkpoint], for vector: VersionVector) -> UInt64 {
        var low = 0
        var high = checkpoints.count
        while low < high {
            let mid = (low + high) / 2
            if vector.dominates(checkpoints[mid].knowledge) { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? 0 : checkpoints[low - 1].sequence
    }
}
