/// Where each of a writer's commits begins, signed in its own write blocks,
/// so that every device groups a writer's writes into the commits it made
/// (history's transactions) on the writer's word, not a relay's.
///
/// A mark is a block entry like a write's: its time is the tick just before
/// the first write of the commit that the block holds (every local stamp
/// leaves that tick free, `ReplicaStorage.nextStamp`), and its 32 bytes are
/// `prefix` followed by the commit's identity, the time of the first stamp
/// the commit took. A write digest is a BLAKE2b hash, so it begins with
/// `prefix` with a chance of 2^-192. Every block holding a commit's writes
/// holds a mark of it, so a block proves which commit its writes belong to
/// on its own, whatever other blocks a receiver gets.
package enum CommitMark {
    /// The first 24 bytes of every mark.
    static let prefix: [UInt8] = Array("lattice:commit-begins-at".utf8)

    /// The entry that marks writes from `firstWrite` on (to the next mark) as commit `commit`'s.
    static func entry(commit: HLCTimestamp, beforeWriteAt firstWrite: HLCTimestamp) -> WriteBlock.Entry {
        var digest = prefix
        for shift in stride(from: 56, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: commit.rawValue >> UInt64(shift))) }
        return WriteBlock.Entry(time: HLCTimestamp(rawValue: firstWrite.rawValue - 1), digest: digest)
    }

    /// The commit a mark names, or nil when `digest` is a write's.
    static func commit(in digest: [UInt8]) -> HLCTimestamp? {
        guard digest.count == WriteDigest.length, digest.starts(with: prefix) else { return nil }
        var raw: UInt64 = 0
        for byte in digest[prefix.count...] { raw = raw << 8 | UInt64(byte) }
        return HLCTimestamp(rawValue: raw)
    }
}

extension WriteBlock {
    /// The commit the block says its write at `time` belongs to: the nearest
    /// mark before it. Nil for a head, a time the block does not hold, or a
    /// block sealed before commits were marked.
    public func commit(ofWriteAt time: HLCTimestamp) -> HLCTimestamp? {
        guard let entries else { return nil }
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].time < time { low = mid + 1 } else { high = mid }
        }
        guard low < entries.count, entries[low].time == time, CommitMark.commit(in: entries[low].digest) == nil else { return nil }
        for index in stride(from: low - 1, through: 0, by: -1) {
            if let commit = CommitMark.commit(in: entries[index].digest) { return commit }
        }
        return nil
    }
}
