/// Where each of a writer's commits begins, signed in its own write blocks,
/// so that every device groups a writer's writes into the commits it made
/// (history's transactions) on the writer's word, not a relay's.
///
/// A mark is a block entry like a write's: its time is the tick just before
/// the first write of the commit that the block holds (every local stamp
/// leaves that tick free, `ReplicaStorage.nextStamp`), and its 32 bytes are
/// `prefix`, the commit's identity (the time of the first stamp it took) and
/// how many of the entries after the mark are the commit's writes. A write
/// digest is a BLAKE2b hash: it begins with `prefix` with a chance of 2^-160.
/// Every block holding writes of a commit holds a mark of it, so a block
/// proves which commit its writes belong to on its own, whatever other
/// blocks a receiver gets; a write no mark covers is a commit of its own,
/// named by its own time, which is how a commit of one write goes unmarked.
package enum CommitMark {
    /// The first 20 bytes of every mark.
    static let prefix: [UInt8] = Array("lattice:commit-start".utf8)

    /// The entry that marks the `count` writes from `firstWrite` on as commit `commit`'s.
    static func entry(commit: HLCTimestamp, count: Int, beforeWriteAt firstWrite: HLCTimestamp) -> WriteBlock.Entry {
        var digest = prefix
        for shift in stride(from: 56, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: commit.rawValue >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { digest.append(UInt8(truncatingIfNeeded: UInt32(clamping: count) >> UInt32(shift))) }
        return WriteBlock.Entry(time: HLCTimestamp(rawValue: firstWrite.rawValue - 1), digest: digest)
    }

    /// The commit a mark names and how many writes after it are the commit's, or nil when `digest` is a write's.
    static func decode(_ digest: [UInt8]) -> (commit: HLCTimestamp, count: Int)? {
        guard digest.count == WriteDigest.length, digest.starts(with: prefix) else { return nil }
        var commit: UInt64 = 0
        for byte in digest[prefix.count..<prefix.count + 8] { commit = commit << 8 | UInt64(byte) }
        var count: UInt32 = 0
        for byte in digest[(prefix.count + 8)...] { count = count << 8 | UInt32(byte) }
        return (HLCTimestamp(rawValue: commit), Int(count))
    }

    /// Marks `chunk`'s run of the commit's writes (`times`), unless the run is
    /// the commit's first write alone: its own time names the commit then.
    static func marked(_ chunk: [WriteBlock.Entry], commit: HLCTimestamp, times: Set<HLCTimestamp>) -> [WriteBlock.Entry] {
        guard let start = chunk.firstIndex(where: { times.contains($0.time) }) else { return chunk }
        let run = chunk[start...].prefix { times.contains($0.time) }.count
        if run == 1, chunk[start].time == commit { return chunk }
        var marked = chunk
        marked.insert(entry(commit: commit, count: run, beforeWriteAt: chunk[start].time), at: start)
        return marked
    }
}

/// The commits a block says its writes belong to, its marks found once for
/// the many writes of the block a store's history asks about.
package struct BlockCommits: Sendable {
    package let block: WriteBlock
    /// The marks, by entry index: the commit each names and how many entries after it are its writes.
    private let marks: [(index: Int, commit: HLCTimestamp, count: Int)]

    package init(_ block: WriteBlock) {
        self.block = block
        var marks: [(index: Int, commit: HLCTimestamp, count: Int)] = []
        for (index, entry) in (block.entries ?? []).enumerated() {
            if let mark = CommitMark.decode(entry.digest) { marks.append((index, mark.commit, mark.count)) }
        }
        self.marks = marks
    }

    /// Nil when the block holds no write at `time`; else the commit it belongs to
    /// (the write's own time when no mark covers it).
    package func commit(ofWriteAt time: HLCTimestamp) -> HLCTimestamp? {
        guard let entries = block.entries else { return nil }
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].time < time { low = mid + 1 } else { high = mid }
        }
        guard low < entries.count, entries[low].time == time else { return nil }
        // The nearest mark before the write.
        var first = 0
        var last = marks.count
        while first < last {
            let mid = (first + last) / 2
            if marks[mid].index < low { first = mid + 1 } else { last = mid }
        }
        guard first > 0, case let mark = marks[first - 1], mark.index != low else { return time }
        return low - mark.index <= mark.count ? mark.commit : time
    }
}
