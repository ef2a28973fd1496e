/// Write block collection: a churning store keeps the signatures its present
/// states need, not one per write it ever took.
///
/// A block is sent only to prove a write some record (or the zone's
/// incarnation) still shows: `ProofCollector` looks up blocks by the stamps
/// a change set shows, nothing else. So a block none of whose writes this
/// replica shows any more is never sent again, and dropping it is a local
/// choice that needs no peer's acknowledgement. Three uses of old blocks are
/// kept apart:
/// - the latest two blocks of each writer stay: the latest bounds the writer's
///   vector entries (`ProofCheck`), and a rolling block folds into the one
///   before it (`sealLocalWrites`), which must be its true predecessor;
/// - a residue's delete stays proven (`RecordResidue.deletion`);
/// - a write that comes back shown (a tombstone's type and creation, see
///   `ProofCollector.note`) comes with its block, and the block is kept again;
/// - this replica's own heads that peers hold are entry times of its blocks
///   (`holdsOwnHead`): the storage notes how far its own blocks went
///   (`noteOwnBlocksCollected`), and a head up to there is one it signed.
package enum WriteBlockCollection {
    /// The stamps a zone shows, by writer: the zone's incarnation's and every
    /// part of every record `records` calls its body with (tombstones too).
    package static func shownStamps(zoneState: ZoneState?, residueDeletions: [Stamp] = [], records: ((RecordState) throws -> Void) throws -> Void) rethrows -> [ReplicaID: Set<HLCTimestamp>] {
        var shown: [ReplicaID: Set<HLCTimestamp>] = [:]
        if let zoneState { shown[zoneState.stamp.replica, default: []].insert(zoneState.stamp.time) }
        // A residue's delete is proven to devices back after the horizon (`takeCollected`).
        for deletion in residueDeletions { shown[deletion.replica, default: []].insert(deletion.time) }
        try records { state in state.forEachPart { stamp, _, _ in shown[stamp.replica, default: []].insert(stamp.time) } }
        return shown
    }

    /// Of one writer's blocks in a zone (all of them, by `last`), those that
    /// may go: none of their writes is `shown`, and they are not the latest two.
    package static func collectable(_ blocks: [WriteBlock], shown: Set<HLCTimestamp>) -> [WriteBlock] {
        blocks.dropLast(2).filter { !proves($0, anyOf: shown) }
    }

    /// Whether `block` holds one of the `shown` writes (a head, whose entries are unknown, may).
    package static func proves(_ block: WriteBlock, anyOf shown: Set<HLCTimestamp>) -> Bool {
        block.entries.map { entries in entries.contains { shown.contains($0.time) } } ?? true
    }

    /// Every time a block can end at: to read all of a writer's blocks.
    package static let anyEnd = HLCTimestamp.zero...HLCTimestamp(rawValue: UInt64(Int64.max))
}

extension ReplicaStorage {
    /// Drops the zone's write blocks that prove no write the replica shows,
    /// but each writer's latest two; returns how many went.
    @discardableResult
    package func collectWriteBlocks(in zone: ZoneKey) throws -> Int {
        guard let sync = try syncState(of: zone) else { return 0 }
        let shown = try WriteBlockCollection.shownStamps(zoneState: sync.zoneState, residueDeletions: try residueDeletions(in: zone)) { body in try forEachRecord(in: zone, body) }
        var dropped = 0
        for writer in try blockWriters(in: zone) {
            let collectable = WriteBlockCollection.collectable(try writeBlocks(of: writer, in: zone, endingIn: WriteBlockCollection.anyEnd, entries: true), shown: shown[writer] ?? [])
            for block in collectable { try removeWriteBlock(block) }
            dropped += collectable.count
            if writer == replica, let last = collectable.last?.last { try noteOwnBlocksCollected(through: last, in: zone) }
        }
        return dropped
    }
}
