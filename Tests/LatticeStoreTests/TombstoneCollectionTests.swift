import Foundation
import GRDB
@_spi(Tools) import LatticeCore
import LatticeStore
import Testing

/// Tombstone collection on real stores: what goes, what stays, and that no
/// copy of a collected record — stale, late or from a replica that still
/// holds the tombstone — brings it back or splits the replicas.
@Suite struct TombstoneCollectionTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-collect-\(UUID().uuidString)")

    func store(_ name: String) throws -> RecordStore {
        let store = try RecordStore(directory: directory.appendingPathComponent(name))
        return store
    }

    func vector(_ store: RecordStore) throws -> VersionVector { try store.read { try $0.syncState(of: zone)?.vector } ?? VersionVector() }

    /// What `b` lacks of `a`'s zone, applied.
    func send(_ a: RecordStore, to b: RecordStore) throws {
        try b.apply(try a.changeSet(for: zone, since: try vector(b)))
    }

    func save(_ store: RecordStore, _ name: String, _ title: String) throws {
        try store.write { _ = try $0.save(name, type: "Movie", in: zone, changes: [("title", .string(title))], replacement: .changedKeys) }
    }

    /// A count read straight from the store's file, as another program would.
    func count(_ name: String, _ sql: String) throws -> Int {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: directory.appendingPathComponent(name).appendingPathComponent(RecordStore.databaseFileName).path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { try Int.fetchOne($0, sql: sql) ?? 0 }
    }

    func records(_ store: RecordStore) throws -> [RecordState] {
        try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
    }

    @Test func aCollectedTombstoneLeavesItsResidueAndNoStaleCopyBringsTheRecordBack() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "up", "Up")
        try save(a, "coco", "Coco")
        try send(a, to: b)
        let stale = try a.changeSet(for: zone, since: VersionVector()) // as a bundle exported now
        try a.write { _ = try $0.delete(["up"], in: zone) }
        // b has not acknowledged the delete: nothing goes.
        #expect(try a.collectTombstones(in: zone, acknowledged: try vector(a).met(with: try vector(b))).isEmpty)
        try send(a, to: b)
        let sequence = try a.currentSequence()
        #expect(try a.collectTombstones(in: zone, acknowledged: try vector(a).met(with: try vector(b))) == ["up"])
        #expect(try a.currentSequence() == sequence, "collecting is no commit")
        #expect(try a.read { try $0.record("up", in: zone) } == nil)
        #expect(try a.read { try $0.residues(in: zone) }["up"]?.causalLength == 2)
        #expect(try a.read { try $0.tombstoneCounts(in: zone) } == (held: 0, collected: 1))

        // The stale copy, b's tombstone and a full resend from b all leave it deleted.
        let summary = try a.apply(stale)
        #expect(summary.recordsChanged == 0)
        try b.apply(stale)
        try a.apply(try b.changeSet(for: zone, since: VersionVector()))
        #expect(try a.read { try $0.record("up", in: zone) } == nil, "a stale copy brought a collected record back")
        #expect(try records(a).map(\.recordName) == ["coco"])
        #expect(try a.currentSequence() == sequence, "copies of what was collected changed nothing")
    }

    @Test func aRecordCreatedAgainAfterItsCollectionWinsEverywhereWithTheSameBytes() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        let c = try store("c")
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "up", "Up")
        try send(a, to: b)
        try send(a, to: c)
        try b.write { _ = try $0.delete(["up"], in: zone) }
        try send(b, to: a)
        try send(b, to: c)
        let acknowledged = try vector(a).met(with: try vector(b)).met(with: try vector(c))
        #expect(try a.collectTombstones(in: zone, acknowledged: acknowledged) == ["up"])
        // a creates it again: the incarnation after the collected one, which c (still holding the tombstone) takes.
        try save(a, "up", "Up again")
        let again = try #require(try a.read { try $0.record("up", in: zone) })
        #expect(again.causalLength == 3)
        #expect(try a.read { try $0.residues(in: zone) }.isEmpty, "a record created again keeps no residue")
        try send(a, to: c)
        try send(a, to: b)
        #expect(try records(c) == [again])
        #expect(try records(b) == [again])
        // The other way round: c, holding the tombstone, creates it again; a merges with the residue as with the tombstone.
        try c.write { _ = try $0.delete(["up"], in: zone) }
        try send(c, to: a)
        try send(c, to: b)
        #expect(try b.collectTombstones(in: zone, acknowledged: try vector(a).met(with: try vector(b)).met(with: try vector(c))) == ["up"])
        try save(c, "up", "Up thrice")
        try send(c, to: b)
        try send(c, to: a)
        #expect(try records(b) == (try records(c)))
        #expect(try records(a) == (try records(c)))
        #expect(try records(c).first?.causalLength == 5)
    }

    /// The same names saved and deleted over and over: with collection, the
    /// store keeps no more rows than names, and its checkpoints thin out.
    @Test func aStoreThatChurnsKeepsItsRowsBounded() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        try a.write { _ = try $0.createZone(zone) }
        let names = (0..<100).map { "n\($0)" }
        var checkpoints: [Int] = []
        var blocks: [Int] = []
        for round in 0..<10_000 {
            let name = names[round % names.count]
            try save(a, name, "round \(round)")
            try a.write { _ = try $0.delete([name], in: zone) }
            if round % 500 == 499 {
                try a.collectTombstones(in: zone, acknowledged: try vector(a))
                // As a node's pass does: the blocks go once they doubled.
                try a.collectWriteBlocks(in: zone, ifGrown: true)
                let rows = try count("a", "SELECT (SELECT COUNT(*) FROM records) + (SELECT COUNT(*) FROM residues)")
                #expect(rows <= names.count, "round \(round): \(rows) record and residue rows for \(names.count) names")
                checkpoints.append(try count("a", "SELECT COUNT(*) FROM checkpoints"))
                blocks.append(try count("a", "SELECT COUNT(*) FROM write_blocks"))
            }
        }
        // Without collection the signed blocks grow by one per 256 writes (80 at the end);
        // collected when they double, they stay under twice what the present states need and a few more.
        #expect(blocks.max()! <= 48 && blocks.last! < 40, "write blocks every 500 rounds: \(blocks)")
        // 20,000 commits: 1,024 checkpoints dense, then about 512 per doubling of age (3,217 measured).
        #expect(checkpoints.max()! < 3_500, "\(checkpoints)")
        #expect(checkpoints.last! - checkpoints[checkpoints.count / 2] < 600, "checkpoints grow with the log of the history: \(checkpoints)")
    }

    /// Blocks of writes no record shows any more go; what they proved stays provable where it
    /// is still shown, a peer's old head of this store is not taken for a lost write, and
    /// replicas that collected at different moments still sync with each other and a new one.
    @Test func writeBlocksOfOverwrittenWritesGoAndEverythingShownStaysProvable() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        let c = try store("c")
        for small in [a, b] { small.sealedBlockEntries = 4 }
        try a.write { _ = try $0.createZone(zone) }
        for round in 0..<40 { try save(a, "r\(round % 10)", "first \(round)") }
        try send(a, to: b)
        let head = try vector(b)[a.replica]
        // Every record is overwritten: the blocks b's head of a's lies in prove nothing shown.
        for round in 0..<40 { try save(a, "r\(round % 10)", "second \(round)") }
        try a.write { _ = try $0.delete(["r0"], in: zone) }
        try save(b, "b0", "of b")
        let before = try count("a", "SELECT COUNT(*) FROM write_blocks")
        let dropped = try a.collectWriteBlocks(in: zone)
        #expect(dropped > 10, "\(dropped) of \(before) blocks collected")
        #expect(try a.read { try $0.writeBlock(of: a.replica, in: zone, covering: head)?.digest(at: head) } == nil, "the block of b's head is gone")
        #expect(try a.read { try $0.holdsOwnHead(head, in: zone) }, "a head a signed, its block collected, taken for a lost write")
        #expect(try a.read { try $0.ownGap(in: zone) } == nil)
        // Both ways, then to a store that never saw any of it, after b collects too.
        try send(a, to: b)
        try send(b, to: a)
        #expect(try b.collectWriteBlocks(in: zone) > 0)
        try send(b, to: c)
        try send(a, to: c)
        try save(c, "r1", "of c")
        try send(c, to: a)
        try send(c, to: b)
        #expect(try records(a) == (try records(b)))
        #expect(try records(c) == (try records(a)))
        #expect(try records(a).count == 11)
    }

    /// Thinned checkpoints still serve an old peer everything it lacks.
    @Test func aPeerFarBehindStillGetsAllItLacksAfterCheckpointsThinned() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        try a.write { _ = try $0.createZone(zone) }
        for round in 0..<600 { try save(a, "r\(round % 300)", "early \(round)") }
        try send(a, to: b)
        for round in 0..<3_000 { try save(a, "r\(round % 400)", "late \(round)") }
        let kept = try count("a", "SELECT COUNT(*) FROM checkpoints")
        #expect(kept < 2_500, "\(kept) checkpoints for 3,601 commits")
        try send(a, to: b)
        #expect(try records(b) == (try records(a)))
    }

    /// A device back after the horizon takes what others collected: records of older incarnations go
    /// (and what references them with deleteSelf), a newer incarnation stays, and change tokens expire.
    /// Each on a delete its writer signed: the teller's word alone, a forged block or a causal length
    /// the delete did not write change nothing (issue 38, finding 5).
    @Test func recordsCollectedElsewhereGoHereAsTheyWentThereOnDeletesTheirWritersSigned() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "up", "Up")
        try a.write { _ = try $0.save("poster", type: "Poster", in: zone, changes: [("movie", .reference(RecordReference(recordName: "up", action: .deleteSelf)))], replacement: .changedKeys) }
        try save(a, "coco", "Coco")
        try send(a, to: b)
        try b.write { _ = try $0.delete(["coco"], in: zone) }
        try save(b, "coco", "Coco again") // incarnation 3
        // A deletes while B is away, and collects.
        try save(a, "never", "Never sent")
        try a.write { _ = try $0.delete(["up", "coco", "never"], in: zone) }
        #expect(Set(try a.collectTombstones(in: zone, acknowledged: try vector(a))) == ["up", "coco", "never", "poster"])
        try a.collectWriteBlocks(in: zone)
        let (told, blocks) = try a.read { snapshot in
            let residues = try snapshot.residues(in: zone, notCoveredBy: VersionVector()).filter { $0.name != "poster" }
            return (residues, try snapshot.deletionBlocks(of: residues.map(\.residue), in: zone))
        }
        #expect(told.count == 3 && told.allSatisfy { $0.residue.deletion != nil })
        #expect(!blocks.isEmpty, "the deletes' blocks stay with the residues")

        // The word alone, a block whose writes were changed, or a causal length the delete did not sign: nothing changes.
        var unsigned = told
        for index in unsigned.indices { unsigned[index].residue.deletion = nil }
        var forged = blocks
        forged[0].entries![0].digest[0] ^= 1
        var stretched = told
        for index in stretched.indices { stretched[index].residue.causalLength = 6 }
        let before = try records(b)
        for (records, proofs) in [(unsigned, blocks), (told, []), (told, forged), (stretched, blocks)] {
            #expect(try b.write { try $0.takeCollected(records.map { ($0.name, $0.residue) }, blocks: proofs, in: zone) } == 0)
        }
        #expect(try records(b) == before)
        #expect(try b.read { try $0.residues(in: zone) }.isEmpty, "no residue on an unproven word")

        let sequence = try b.currentSequence()
        let taken = try b.write { try $0.takeCollected(told.map { ($0.name, $0.residue) }, blocks: blocks, in: zone) }
        #expect(taken == 2, "up and, by its deleteSelf reference, poster")
        #expect(try b.read { try $0.record("up", in: zone) } == nil)
        #expect(try b.read { try $0.record("poster", in: zone) }?.isAlive == false)
        #expect(try b.read { try $0.record("coco", in: zone) }?.causalLength == 3, "a newer incarnation wins over the tombstone")
        let never = try #require(told.first { $0.name == "never" }?.residue)
        #expect(try b.read { try $0.residues(in: zone) }["never"] == never, "a name not held keeps the residue, against a stale copy another device may bring")
        let kept = try #require(try b.read { try $0.residues(in: zone) }["up"])
        #expect(kept.causalLength == 2 && kept.deletion == told.first { $0.name == "up" }?.residue.deletion)
        #expect(try b.read { try $0.collectionHorizon(in: zone) } > sequence, "the zone's change tokens from before expire")
        #expect(try b.read { try $0.horizon() } == 0, "other zones' tokens stay")
        // B keeps the blocks too, through its own block collection: it can prove the deletes to the next device.
        try b.collectWriteBlocks(in: zone)
        let residues = try b.read { try $0.residues(in: zone) }
        #expect(try b.read { try $0.deletionBlocks(of: [residues["up"]!, residues["never"]!], in: zone) }.count >= 1)
        let c = try store("c")
        try c.write { _ = try $0.createZone(zone) }
        try save(c, "never", "A stale copy")
        let again = try b.read { snapshot in try snapshot.deletionBlocks(of: [residues["never"]!], in: zone) }
        #expect(try c.write { try $0.takeCollected([("never", residues["never"]!)], blocks: again, in: zone) } == 1)
    }
}
