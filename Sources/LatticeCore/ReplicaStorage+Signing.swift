@_spi(Tools) import LatticeCrypto

/// A local write of the running transaction, to seal into a block when it commits.
@_spi(Tools) public struct PendingLocalWrite: Hashable, Sendable {
    /// The zone written: each zone's writes are sealed into blocks of their own.
    public var zone: ZoneKey
    /// The record written, or nil for a write to the zone itself.
    public var record: String?
    /// The write's stamp: its time is the entry's time in the sealed block.
    public var stamp: Stamp

    /// A write noted for sealing; `record` nil for a write to the zone itself.
    public init(zone: ZoneKey, record: String?, stamp: Stamp) {
        self.zone = zone
        self.record = record
        self.stamp = stamp
    }
}

extension ReplicaStorage {
    /// Keeps a checked block, dropping the versions of it that it supersedes;
    /// a block superseded by one kept (or a different one with the same
    /// `last` it does not supersede) is not kept.
    package func storeWriteBlock(_ block: WriteBlock) throws {
        // Heads first (no entries to decode): the usual block is the newest of its replica.
        let end = HLCTimestamp(rawValue: UInt64(Int64.max))
        if !(try writeBlocks(of: block.replica, in: block.zone, endingIn: block.last...end, entries: false)).isEmpty {
            let later = try writeBlocks(of: block.replica, in: block.zone, endingIn: block.last...end, entries: true)
            if later.contains(where: { $0.supersedes(block) || ($0.last == block.last && !block.supersedes($0)) }) { return }
        }
        if block.entries != nil {
            for older in try writeBlocks(of: block.replica, in: block.zone, endingIn: (block.firstTime ?? block.last)...block.last, entries: false)
            where block.supersedes(older) {
                try removeWriteBlock(older)
            }
        }
        try insertWriteBlock(block)
    }

    /// Notes a local write for `sealLocalWrites`.
    func noteLocalWrite(record: String?, stamp: Stamp, in zone: ZoneKey) {
        guard signer != nil else { return }
        pendingLocalWrites.append(PendingLocalWrite(zone: zone, record: record, stamp: stamp))
    }

    /// Signs the running transaction's local writes: per zone, blocks of the
    /// digests of the writes still shown, the last ending at the replica's
    /// entry in the zone's vector (its signed head), each with a mark of the
    /// commit before the first of its writes the block holds (`CommitMark`).
    /// Called just before commit; returns the commit's identity (the time of
    /// its first stamp), nil when nothing was sealed.
    @discardableResult
    package func sealLocalWrites() throws -> HLCTimestamp? {
        guard let signer, !pendingLocalWrites.isEmpty else { return nil }
        let pending = pendingLocalWrites
        pendingLocalWrites = []
        let commit = pending.lazy.map(\.stamp.time).min()!
        var byZone: [ZoneKey: [PendingLocalWrite]] = [:]
        for write in pending { byZone[write.zone, default: []].append(write) }
        for (zone, writes) in byZone.sorted(by: { $0.key.description < $1.key.description }) {
            guard let sync = try syncState(of: zone) else { continue }
            var entries: [WriteBlock.Entry] = []
            var cache: [String: RecordState] = [:]
            for write in writes {
                // Every stamp the commit took gets an entry, so every head the
                // replica ever signed is an entry time (see `holdsOwnHead`); one
                // no record shows any more gets a digest no receiver asks for.
                if let name = write.record {
                    guard let state = try cache[name] ?? stateToSeal(named: name, in: zone) else { continue }
                    cache[name] = state
                    let shown = state.liveStamps.contains(write.stamp)
                    entries.append(WriteBlock.Entry(
                        time: write.stamp.time, digest: shown ? WriteDigest.record(state, stamp: write.stamp, in: zone) : WriteDigest.gone(name, stamp: write.stamp, in: zone)))
                } else if sync.zoneState.stamp == write.stamp {
                    entries.append(WriteBlock.Entry(time: write.stamp.time, digest: WriteDigest.zone(sync.zoneState, in: zone)))
                }
            }
            entries.sort { $0.time < $1.time }
            // A zone write gets a block of its own: every change set carries
            // the block of its zone's state, which stays small that way.
            let zoneTimes = Set(writes.filter { $0.record == nil }.map(\.stamp.time))
            // Otherwise the commit extends the replica's latest block and signs it
            // again, so a history of small commits costs a signature to check per
            // block of up to `maximumRollingEntries` writes, not per commit, and
            // a commit pushed at once carries a block of at most that many.
            if zoneTimes.isEmpty, let open = try writeBlock(of: replica, in: zone, covering: nil), let held = open.entries,
               !holdsZoneState(open, sync) {
                if held.count + entries.count <= max(1, sealedBlockEntries / WriteBlock.rollingFraction) {
                    entries = held + entries
                } else {
                    try fold(open, in: zone, sync, by: signer)
                }
            }
            // Room for the commit's mark in a block of the most entries a block may hold.
            let capacity = max(1, min(sealedBlockEntries, WriteBlock.maximumEntries - 1))
            var chunks: [[WriteBlock.Entry]] = [[]]
            for entry in entries {
                let alone = zoneTimes.contains(entry.time)
                if alone || chunks[chunks.count - 1].count >= capacity, !chunks[chunks.count - 1].isEmpty { chunks.append([]) }
                chunks[chunks.count - 1].append(entry)
                if alone { chunks.append([]) }
            }
            if chunks.count > 1, chunks[chunks.count - 1].isEmpty { chunks.removeLast() }
            let commitTimes = Set(writes.map(\.stamp.time))
            chunks = chunks.map { CommitMark.marked($0, commit: commit, times: commitTimes) }
            let head = sync.vector[replica]
            for (index, chunk) in chunks.enumerated() {
                let last = index == chunks.count - 1 ? max(head, chunk.last?.time ?? .zero) : chunk.last!.time
                try storeWriteBlock(try WriteBlock.seal(chunk, last: last, in: zone, by: signer))
            }
        }
        return commit
    }

    /// Whether `block` holds the write of the zone's present incarnation (a block of its own).
    private func holdsZoneState(_ block: WriteBlock, _ sync: ZoneSyncState) -> Bool {
        sync.zoneState.stamp.replica == replica && block.digest(at: sync.zoneState.stamp.time) != nil
    }

    /// A full rolling block joins the block before it, if that has room: the
    /// earlier block signed again with both runs of entries (a later version
    /// of it, ending where the rolling one ended). Small commits then leave
    /// blocks of `maximumEntries` behind them, as bulk commits do, so a new
    /// device that takes the whole history checks few signatures.
    private func fold(_ open: WriteBlock, in zone: ZoneKey, _ sync: ZoneSyncState, by signer: Identity) throws {
        guard let entries = open.entries, let first = open.firstTime,
              let previous = try writeBlock(of: replica, in: zone, endingBefore: first), let earlier = previous.entries,
              earlier.count + entries.count <= sealedBlockEntries, !holdsZoneState(previous, sync) else { return }
        // The rolling block goes first: the joined one ends at the same `last`, and is not a later version of it.
        try removeWriteBlock(open)
        try storeWriteBlock(try WriteBlock.seal(earlier + entries, last: open.last, in: zone, by: signer))
    }
}
