@_spi(Tools) import LatticeCore
import Testing

/// A state's digests computed in one pass (`WriteDigest.writes`) are the
/// ones computed write by write (`WriteDigest.record`), which is what a
/// writer signed: a receiver computing them otherwise would refuse honest writes.
@Suite struct WriteDigestTests {
    static func perWrite(_ state: RecordState) -> [Stamp: [UInt8]] {
        Dictionary(uniqueKeysWithValues: state.liveStamps.map { ($0, WriteDigest.record(state, stamp: $0, in: testZone)) })
    }

    static func onePass(_ state: RecordState) -> [Stamp: [UInt8]] {
        let writes = WriteDigest.writes(of: state, in: testZone)
        #expect(writes.map(\.stamp) == writes.map(\.stamp).sorted(), "one digest per stamp, in stamp order")
        return Dictionary(uniqueKeysWithValues: writes.map { ($0.stamp, $0.digest) })
    }

    @Test(arguments: 0..<60)
    func onePassEqualsWriteByWriteOnRandomStatesAndTheirMerges(seed: Int) throws {
        let states = try MergeLawTests.randomStates(seed: UInt64(seed))
        var checked = 0
        for state in states {
            #expect(Self.onePass(state) == Self.perWrite(state))
            checked += 1
            for other in states {
                let merged = Merge.merge(local: state, incoming: other).state
                #expect(Self.onePass(merged) == Self.perWrite(merged))
            }
        }
        #expect(checked == states.count)
    }

    /// Long values (their items are hashes), losers, a deletion and ghosts of both sizes.
    @Test func longValuesGhostsAndConflictsDigestAlike() throws {
        let clock = ManualClock()
        let a = makeReplica(1, clock: clock), b = makeReplica(2, clock: clock)
        for replica in [a, b] { replica.createZone(testZone) }
        let long = String(repeating: "x", count: 40)
        try a.save("r", type: "T", in: testZone, changes: [("title", .string(long)), ("n", .int64(1)), ("tag", .string("short"))])
        _ = try b.apply(try a.makeChangeSet(for: testZone, since: VersionVector()))
        clock.now += 1
        try a.save("r", type: "T", in: testZone, changes: [("title", .string(long + "y"))])
        try b.save("r", type: "T", in: testZone, changes: [("title", .string("b's")), ("n", .int64(2))])
        _ = try a.apply(try b.makeChangeSet(for: testZone, since: VersionVector()))
        let merged = try #require(a.record("r", in: testZone))
        #expect(!merged.ghosts.isEmpty && merged.fields.contains { !$0.losers.isEmpty }, "the case covers ghosts and conflicts")
        #expect(Self.onePass(merged) == Self.perWrite(merged))
        clock.now += 1
        try a.delete("r", in: testZone)
        let deleted = try #require(a.record("r", in: testZone))
        #expect(Self.onePass(deleted) == Self.perWrite(deleted))
    }
}
