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
/// - a write that comes back shown (a tombstone's type and creation, see
///   `ProofCollector.note`) comes with its block, and the block is kept again;
/// - this replica's own heads that peers hold are entry times of its blocks
///   (`holdsOwnHead`): the storage notes how far its own blocks went
///   (`noteOwnBlocksCollected`), and a head up to there is one it signed.
extension ReplicaStorage {
    /// Drops the zone's write blocks that prove no write the replica shows,
    /// but each writer's latest two; returns how many went.
    @discardableResult
    public func collectWriteBlocks(in zone: ZoneKey) throws -> Int {
        guard let sync = try syncState(of: zone) else { return 0 }
        var shown: [ReplicaID: Set<HLCTimestamp>] = [:]
        shown[sync.zoneState.stamp.replica, default: []].insert(sync.zoneState.stamp.time)
        try forEachRecord(in: zone) { state in
            state.forEachPart { stamp, _, _ in shown[stamp.replica, default: []].insert(stamp.time) }
        }
        var dropped = 0
        let end = HLCTimestamp(rawValue: UInt64(Int64.max))
        for writer in try blockWriters(in: zone) {
            let blocks = try writeBlocks(of: writer, in: zone, endingIn: .zero...end, entries: true)
            let held = shown[writer] ?? []
            var ownThrough: HLCTimestamp?
            for block in blocks.dropLast(2) {
                guard let entries = block.entries, !entries.contains(where: { held.contains($0.time) }) else { continue }
                try removeWriteBlock(block)
                dropped += 1
                if writer == replica { ownThrough = block.last }
            }
            if let ownThrough { try noteOwnBlocksCollected(through: ownThrough, in: zone) }
        }
        return dropped
    }
}
