import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@testable import LatticeStore
import LatticeTestSupport
import Testing

/// A private zone's change set made for a replica at a vector leaves out the
/// ghosts of the writes that vector covers (format 5): the receiver holds
/// those writes' parts and restores them. It must merge to exactly what the
/// whole change set gives, on disk and in memory, check every write as
/// before, and say so clearly when it reaches a replica that lacks them.
@Suite struct ElidedGhostsTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))


    static func version(_ bytes: [UInt8]) -> UInt8 { bytes[4] }

    /// Random histories of three writers that sync in random pairs; then a
    /// receiver at some vector takes the delta made for it, and a copy of it
    /// takes everything whole: both end with the same states, store and memory alike.
    @Test(arguments: 0..<24 as Range<UInt64>) func aDeltaWithoutCoveredGhostsMergesAsTheWholeChangeSet(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let writers = try writersSharing(zone, clock: clock).writers
        var elided = 0
        for round in 0..<60 {
            clock.now += UInt64.random(in: 0...2, using: &rng)
            let writer = writers.randomElement(using: &rng)!
            let name = "r\(Int.random(in: 0..<6, using: &rng))"
            switch Int.random(in: 0..<10, using: &rng) {
            case 0 where writer.record(name, in: zone)?.isAlive == true: try writer.delete(name, in: zone)
            default:
                // Several fields at once, as the merge workload's records: an edit of some leaves ghosts of the others.
                var fields: [String: FieldValue] = [:]
                for _ in 0..<Int.random(in: 1...4, using: &rng) { fields["f\(Int.random(in: 0..<4, using: &rng))"] = .int64(Int64.random(in: 0...99, using: &rng)) }
                try writer.save(name, type: "T", in: zone, changes: fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
            }
            guard round % 4 == 3 else { continue }
            let (from, to) = (writers.randomElement(using: &rng)!, writers.randomElement(using: &rng)!)
            guard from !== to else { continue }
            let delta = try from.makeChangeSet(for: zone, since: to.syncState(of: zone)!.vector)
            let whole = try from.makeChangeSet(for: zone, since: VersionVector())
            #expect(Self.version(whole) == ChangeSetFormat.version, "a change set for a replica holding nothing leaves nothing out")
            if Self.version(delta) == ChangeSetFormat.elidingVersion { elided += 1 }

            // The receiver as it is, and a copy of it, in memory and on disk.
            let everything = try to.makeChangeSet(for: zone, since: VersionVector())
            let copy = try MemoryReplica(identity: .numbered(50), wallClock: { clock.now })
            try copy.apply(everything)
            let directory = TemporaryDirectory()
            let store = try directory.store()
            try store.apply(everything)
            try to.apply(delta)
            try copy.apply(whole)
            try store.apply(delta)
            #expect(copy.records(in: zone) == to.records(in: zone), "seed \(seed): the delta and the whole change set merge differently")
            let stored = try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
            #expect(stored == to.records(in: zone), "seed \(seed): the store merged the delta differently")
        }
        #expect(elided > 0, "seed \(seed): no delta was made for a replica that held something")
    }

    /// A delta made for a replica that holds a write, applied to one that
    /// does not: refused with what to do, and nothing of it is applied.
    @Test func aDeltaReachingAReplicaThatLacksWhatItLeftOutIsRefusedClearly() throws {
        let clock = ManualClock()
        let a = try MemoryReplica(identity: .numbered(1), wallClock: { clock.now })
        let b = try MemoryReplica(identity: .numbered(2), wallClock: { clock.now })
        a.createZone(zone)
        // Eight fields of twenty letters, as the merge workload's records.
        func fields(_ letter: Character) -> [(name: String, value: FieldValue?)] { (0..<8).map { ("f\($0)", .string(String(repeating: letter, count: 20))) } }
        try a.save("m", type: "T", in: zone, changes: fields("a"))
        let start = try a.makeChangeSet(for: zone, since: VersionVector())
        try b.apply(start)
        clock.now += 10
        try a.save("m", type: "T", in: zone, changes: fields("b"))
        let delta = try a.makeChangeSet(for: zone, since: b.syncState(of: zone)!.vector)
        #expect(Self.version(delta) == ChangeSetFormat.elidingVersion)
        // The same record whole carries the creation's eight replaced fields again, as ghosts.
        let whole = try a.makeChangeSet(for: zone, since: VersionVector())
        #expect(delta.count + 8 * 20 < whole.count, "the delta (\(delta.count) bytes) left out no ghost (whole: \(whole.count))")
        try b.apply(delta)
        #expect(b.records(in: zone) == a.records(in: zone))

        // A third replica knew only the zone: the creation's ghosts are not here to restore.
        let c = try MemoryReplica(identity: .numbered(3), wallClock: { clock.now })
        #expect(throws: ChangeSetError.madeForMoreThanHeld(replica: a.replica.description)) { try c.apply(delta) }
        #expect(c.records(in: zone).isEmpty, "a refused change set left records behind")
        // Made for it, the same records arrive whole.
        try c.apply(try a.makeChangeSet(for: zone, since: VersionVector()))
        #expect(c.records(in: zone) == a.records(in: zone))
    }

    /// A store restored from an older copy can be told, in its own entry, that
    /// it holds writes of its own it lost: a change set for it keeps the ghosts
    /// of its own writes, and leaves out those of the others' it covers.
    @Test func theReceiversOwnWritesKeepTheirGhosts() throws {
        let clock = ManualClock()
        let a = try MemoryReplica(identity: .numbered(1), wallClock: { clock.now })
        let b = try MemoryReplica(identity: .numbered(2), wallClock: { clock.now })
        a.createZone(zone)
        try b.apply(try a.makeChangeSet(for: zone, since: VersionVector()))
        let fields: [(name: String, value: FieldValue?)] = (0..<4).map { ("f\($0)", .string("first")) }
        try b.save("byB", type: "T", in: zone, changes: fields)
        try a.save("byA", type: "T", in: zone, changes: fields)
        try a.apply(try b.makeChangeSet(for: zone, since: VersionVector()))
        clock.now += 10
        // A edits every field of both: each creation is shown by its type and creation alone.
        let edit: [(name: String, value: FieldValue?)] = (0..<4).map { ("f\($0)", .string("second")) }
        try a.save("byB", type: "T", in: zone, changes: edit)
        try a.save("byA", type: "T", in: zone, changes: edit)
        let base = a.syncState(of: zone)!.vector
        var header = ChangeSetHeader(zone: zone, sync: a.syncState(of: zone)!, base: base, schema: Schema())
        header.elidesCoveredGhosts = true
        var bytes: [UInt8] = []
        var writer = try ChangeSetWriter(header: header, proofs: nil, receiver: b.replica) { bytes += $0 }
        for name in ["byA", "byB"] { try writer.append(a.record(name, in: zone)!) }
        try writer.finish()
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        _ = try reader.readHeader()
        var sent: [String: RecordState] = [:]
        while let state = try reader.nextRecord() { sent[state.recordName] = state }
        #expect(sent["byB"]?.ghosts == a.record("byB", in: zone)?.ghosts, "the receiver's own creation lost its ghosts")
        #expect(sent["byB"]?.ghosts.count == 4)
        #expect(sent["byA"]?.ghosts.isEmpty == true, "another writer's covered creation kept its ghosts")
        #expect(a.record("byA", in: zone)?.ghosts.count == 4)
    }
}
