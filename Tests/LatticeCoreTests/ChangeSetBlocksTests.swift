@testable import LatticeCore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCore

/// The proof check finds each write's signed digest among a change set's
/// blocks by replica and time (`ChangeSetBlocks`), not in a table of every
/// entry: it must find what such a table finds, and refuse two blocks that
/// sign two writes under one stamp however the blocks overlap.
@Suite struct ChangeSetBlocksTests {
    static func block(_ replica: ReplicaID, _ entries: [(UInt64, UInt8)], last: UInt64? = nil) -> WriteBlock {
        let list = entries.map { WriteBlock.Entry(time: HLCTimestamp(rawValue: $0.0), digest: [UInt8](repeating: $0.1, count: WriteDigest.length)) }
        return WriteBlock(zone: testZone, publicKey: [], replica: replica, last: HLCTimestamp(rawValue: last ?? entries.map(\.0).max()!),
                          count: list.count, entriesHash: [], signature: [], entries: list)
    }

    static let replicas = [ReplicaID(high: 1, low: 1), ReplicaID(high: 2, low: 2)]

    @Test(arguments: 0..<40)
    func findsWhatATableOfEveryEntryFinds(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var blocks: [WriteBlock] = []
        var table: [Stamp: [UInt8]] = [:]
        for replica in Self.replicas {
            var time: UInt64 = 10
            for _ in 0..<Int.random(in: 1...12, using: &random) {
                let count = Int.random(in: 1...6, using: &random)
                var entries: [(UInt64, UInt8)] = []
                for _ in 0..<count {
                    time += UInt64.random(in: 1...4, using: &random)
                    entries.append((time, UInt8(truncatingIfNeeded: time)))
                }
                // Some blocks end past their last entry (a head the commit signed), some are
                // re-signed versions that a later block extends (so the two overlap).
                let last = entries.last!.0 + (Bool.random(using: &random) ? 0 : UInt64.random(in: 1...3, using: &random))
                blocks.append(Self.block(replica, entries, last: last))
                if Int.random(in: 0..<4, using: &random) == 0 {
                    let longer = entries + [(time + 1, UInt8(truncatingIfNeeded: time + 1))]
                    time += 1
                    blocks.append(Self.block(replica, longer))
                }
                time = max(time, last)
                for block in blocks.suffix(2) where block.replica == replica {
                    for entry in block.entries! { table[Stamp(time: entry.time, replica: replica)] = entry.digest }
                }
            }
        }
        blocks.shuffle(using: &random)
        let proven = try ChangeSetBlocks(blocks)
        for replica in Self.replicas {
            for time in UInt64(0)...200 {
                let stamp = Stamp(time: HLCTimestamp(rawValue: time), replica: replica)
                #expect(proven.digest(at: stamp) == table[stamp], "\(stamp)")
            }
        }
        #expect(proven.digest(at: Stamp(time: HLCTimestamp(rawValue: 11), replica: ReplicaID(high: 9, low: 9))) == nil)
    }

    @Test func twoBlocksSigningTwoWritesUnderOneStampAreRefused() throws {
        let replica = Self.replicas[0]
        // The conflicting stamp lies in the third block of a run of overlapping ones.
        let blocks = [
            Self.block(replica, [(1, 1), (5, 5)]),
            Self.block(replica, [(4, 4), (9, 9)]),
            Self.block(replica, [(8, 8), (12, 12)]),
            Self.block(replica, [(12, 99)]),
            Self.block(replica, [(20, 20)]),
        ]
        #expect(throws: WriteProofError.twoBlocksOneStamp(replica: replica, last: HLCTimestamp(rawValue: 12))) {
            try ChangeSetBlocks(blocks.reversed())
        }
        // The same blocks agreeing are taken, and each write found in its run's table.
        var agreeing = blocks
        agreeing[3] = Self.block(replica, [(12, 12)])
        let proven = try ChangeSetBlocks(agreeing)
        for (time, digest) in [(1, 1), (4, 4), (9, 9), (12, 12), (20, 20)] {
            #expect(proven.digest(at: Stamp(time: HLCTimestamp(rawValue: UInt64(time)), replica: replica)) == [UInt8](repeating: UInt8(digest), count: 32))
        }
        #expect(proven.digest(at: Stamp(time: HLCTimestamp(rawValue: 13), replica: replica)) == nil)
    }
}
