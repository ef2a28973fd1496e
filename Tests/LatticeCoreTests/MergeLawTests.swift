@_spi(Tools) import LatticeCore
import Testing

/// The laws that make replicas converge, checked on random states of one
/// record written by several replicas (random saves, removals, deletes and
/// conflict clears, so states carry conflicts too).
@Suite struct MergeLawTests {
    /// Random states of record "r", each a replica's view after random local writes and merges.
    static func randomStates(seed: UInt64) throws -> [RecordState] {
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let replicas = (1...3).map { makeReplica(UInt64($0), clock: clock) }
        for replica in replicas { replica.createZone(testZone) }
        var states: [RecordState] = []
        while states.count < 12 {
            let replica = replicas.randomElement(using: &rng)!
            clock.now += UInt64.random(in: 0...2, using: &rng)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6:
                let fields = ["a", "b", "c"].shuffled(using: &rng).prefix(Int.random(in: 1...3, using: &rng))
                try replica.save("r", type: "T", in: testZone, changes: fields.map { ($0, Bool.random(using: &rng) ? .int64(Int64.random(in: 0...9, using: &rng)) : nil) })
            case 6:
                if replica.record("r", in: testZone)?.isAlive == true { try replica.delete("r", in: testZone) }
            case 7:
                try replica.clearConflicts(of: "r", in: testZone)
            default:
                let other = replicas.randomElement(using: &rng)!
                _ = try replica.apply(try other.makeChangeSet(for: testZone, since: VersionVector()))
            }
            if let state = replica.record("r", in: testZone) { states.append(state) }
        }
        return states
    }

    @Test(arguments: 0..<300 as Range<UInt64>) func mergeIsCommutativeAssociativeAndIdempotent(seed: UInt64) throws {
        let states = try Self.randomStates(seed: seed)
        try #require(states.count >= 3)
        var rng = SeededGenerator(seed: seed ^ 0xABCDEF)
        let a = states.randomElement(using: &rng)!
        let b = states.randomElement(using: &rng)!
        let c = states.randomElement(using: &rng)!
        let merge = { (x: RecordState, y: RecordState) in Merge.merge(local: x, incoming: y).state }
        #expect(merge(a, b) == merge(b, a), "seed \(seed): not commutative")
        #expect(merge(merge(a, b), c) == merge(a, merge(b, c)), "seed \(seed): not associative")
        #expect(merge(a, a) == a, "seed \(seed): not idempotent")
        #expect(Merge.merge(local: a, incoming: a).changed == false)
        // Any order of all states gives one result.
        #expect(Merge.merge(states) == Merge.merge(states.shuffled(using: &rng)), "seed \(seed): order matters")
    }

    @Test func deleteWinsOverAConcurrentWriteAndLosesToALaterRecreation() throws {
        let clock = ManualClock()
        let a = makeReplica(1, clock: clock)
        let b = makeReplica(2, clock: clock)
        a.createZone(testZone)
        _ = try b.apply(try a.makeChangeSet(for: testZone, since: VersionVector()))
        try a.save("r", type: "T", in: testZone, changes: [("x", 1)])
        _ = try b.apply(try a.makeChangeSet(for: testZone, since: VersionVector()))
        clock.now += 10
        try b.save("r", type: "T", in: testZone, changes: [("x", 2)]) // later clock, but concurrent with the delete
        try a.delete("r", in: testZone)
        let merged = Merge.merge(local: b.record("r", in: testZone)!, incoming: a.record("r", in: testZone)!).state
        #expect(!merged.isAlive)
        clock.now += 1
        try a.save("r", type: "T", in: testZone, changes: [("y", 3)]) // re-creation after the delete
        let recreated = Merge.merge(local: merged, incoming: a.record("r", in: testZone)!).state
        #expect(recreated.isAlive && recreated.presentFields.map(\.name) == ["y"])
    }

    @Test func clockSkewBeyondTheBoundIsDeferredNotApplied() throws {
        let clock = ManualClock()
        let future = ManualClock(clock.now + 3_600_000)
        let a = makeReplica(1, clock: future)
        let b = makeReplica(2, clock: clock)
        a.createZone(testZone)
        try a.save("r", type: "T", in: testZone, changes: [("x", 1)])
        let summary = try b.apply(try a.makeChangeSet(for: testZone, since: VersionVector()))
        #expect(summary.recordsDeferred == 1 && !summary.claimTaken)
        #expect(b.record("r", in: testZone) == nil)
        #expect(b.clock.last.milliseconds < future.now)
        clock.now = future.now
        #expect(try b.apply(try a.makeChangeSet(for: testZone, since: VersionVector())).recordsChanged == 1)
    }
}
