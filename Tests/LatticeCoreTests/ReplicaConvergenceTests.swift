@_spi(Tools) import LatticeCore
import Testing

/// The core's laws on whole replicas, in memory (the store's suites check the
/// same through SQLite): random writes on several replicas, change sets
/// delivered late, twice and out of order, and every replica ends with the
/// same records; a delta carries nothing a replica already holds.
@Suite struct ReplicaConvergenceTests {
    /// Random writes on three signing replicas that exchange deltas in random pairs, with stale and repeated deliveries.
    @Test(arguments: 0..<40 as Range<UInt64>) func replicasConvergeWhateverTheDeliveryOrder(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let (replicas, _) = try writersSharing(testZone, clock: clock)
        /// Change sets made along the way, with whom they were made for, delivered again later (late, repeated, out of order).
        var sent: [(receiver: Int, bytes: [UInt8])] = []
        for _ in 0..<60 {
            clock.now += UInt64.random(in: 0...3, using: &rng)
            let index = Int.random(in: 0..<replicas.count, using: &rng)
            let replica = replicas[index]
            let name = "r\(Int.random(in: 0..<6, using: &rng))"
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                let fields = ["a", "b", "c"].shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng))
                try replica.save(name, type: "T", in: testZone, changes: fields.map { ($0, Bool.random(using: &rng) ? .int64(Int64.random(in: 0...9, using: &rng)) : nil) })
            case 5:
                if replica.record(name, in: testZone)?.isAlive == true { try replica.delete(name, in: testZone) }
            case 6:
                try replica.clearConflicts(of: name, in: testZone)
            case 7 where !sent.isEmpty:
                let (receiver, bytes) = sent.randomElement(using: &rng)!
                if receiver == index {
                    try replica.apply(bytes)
                } else {
                    // Made for another replica: its proofs start from a vector this one may not hold.
                    // Applied, or refused whole with nothing changed.
                    let before = replica.records(in: testZone)
                    do { try replica.apply(bytes) } catch { #expect(replica.records(in: testZone) == before) }
                }
            default:
                let other = replicas.randomElement(using: &rng)!
                let delta = try other.makeChangeSet(for: testZone, since: replica.syncState(of: testZone)!.vector)
                sent.append((index, delta))
                try replica.apply(delta)
            }
        }
        // Everyone sends everyone what they lack, twice round: the same records everywhere.
        for _ in 0..<2 {
            for receiver in replicas {
                for sender in replicas where sender !== receiver {
                    try receiver.apply(try sender.makeChangeSet(for: testZone, since: receiver.syncState(of: testZone)!.vector))
                }
            }
        }
        let first = replicas[0].records(in: testZone)
        #expect(!first.isEmpty)
        for replica in replicas.dropFirst() { #expect(replica.records(in: testZone) == first, "seed \(seed): replicas differ") }
        // Once in sync, a delta carries no record, and applying anything again changes nothing.
        for receiver in replicas {
            for sender in replicas where sender !== receiver {
                let delta = try sender.makeChangeSet(for: testZone, since: receiver.syncState(of: testZone)!.vector)
                #expect(try receiver.apply(delta).recordsReceived == 0)
            }
        }
        for (receiver, bytes) in sent {
            #expect(try replicas[receiver].apply(bytes).recordsChanged == 0, "seed \(seed): a stale change set changed a converged replica")
        }
        for replica in replicas { #expect(replica.records(in: testZone) == first) }
    }

    @Test(arguments: 0..<200 as Range<UInt64>) func versionVectorsJoinAsALattice(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        func random() -> VersionVector {
            VersionVector((1...4).filter { _ in Bool.random(using: &rng) }.map { (replicaID(UInt64($0)), HLCTimestamp(milliseconds: UInt64.random(in: 0...5, using: &rng), counter: 0)) })
        }
        let (a, b, c) = (random(), random(), random())
        #expect(a.joined(with: b) == b.joined(with: a))
        #expect(a.joined(with: b).joined(with: c) == a.joined(with: b.joined(with: c)))
        #expect(a.joined(with: a) == a)
        #expect(a.joined(with: b).dominates(a) && a.joined(with: b).dominates(b))
        #expect(a.met(with: b) == b.met(with: a))
        #expect(a.dominates(a.met(with: b)))
        // The join is the least vector above both: anything that dominates both dominates it.
        if c.dominates(a) && c.dominates(b) { #expect(c.dominates(a.joined(with: b))) }
    }

    @Test(arguments: 0..<100 as Range<UInt64>) func theClockNeverGoesBackWhateverTheWallClockAndRemoteStampsDo(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        var clock = HybridLogicalClock()
        var wall: UInt64 = 1_000_000
        var last = HLCTimestamp.zero
        for _ in 0..<200 {
            // The wall clock jumps back now and then; remote stamps come from a little ahead.
            wall = Bool.random(using: &rng) ? wall + UInt64.random(in: 0...5, using: &rng) : wall - UInt64.random(in: 0...50, using: &rng)
            if Int.random(in: 0..<4, using: &rng) == 0 {
                let remote = HLCTimestamp(milliseconds: wall + UInt64.random(in: 0...10, using: &rng), counter: UInt16.random(in: 0...3, using: &rng))
                if clock.accepts(remote, wallClock: wall) { clock.observe(remote) }
            }
            let now = clock.tick(wallClock: wall)
            #expect(now > last, "seed \(seed): the clock went back")
            last = now
        }
    }
}
