import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore
import LatticeTestSupport
import Testing

/// The scenarios that once broke the store on disk, each written out: a store
/// that accepted a change set can send it on, no-ops take no commit,
/// conflicts travel with records, and cascades end the same in any order.
@Suite struct StoreEngineTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-engine-\(UUID().uuidString)")

    func store(_ name: String, clock: ManualClock? = nil) throws -> RecordStore {
        let url = directory.appendingPathComponent(name)
        if let clock { return try RecordStore(directory: url, wallClock: { clock.now }) }
        return try RecordStore(directory: url)
    }

    func save(_ store: RecordStore, _ name: String, _ changes: [(name: String, value: FieldValue?)], type: String = "Movie") throws {
        try store.write { _ = try $0.save(name, type: type, in: zone, changes: changes) }
    }

    /// Sends everything `from` has that `to` lacks; returns what applying did.
    @discardableResult
    func record(_ store: RecordStore, _ name: String) throws -> RecordState? { try store.read { try $0.record(name, in: zone) } }

    /// Store a with zone and record m1, and store b that received them.
    func twoStoresHoldingM1() throws -> (a: RecordStore, b: RecordStore) {
        let a = try store("a")
        let b = try store("b")
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "m1", [("title", "x")])
        try sync(a, to: b, zone)
        return (a, b)
    }

    /// Single saves, each pushed to b as it commits: b takes every short
    /// rolling block, then the joined blocks they fold into; a third store
    /// that takes the whole history checks a few long blocks, and all agree.
    @Test func smallCommitsFoldIntoLongBlocksThatPeersTakeOverTheShortOnes() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b) = try twoStoresHoldingM1()
        for index in 0..<300 {
            try save(a, "r\(index)", [("title", .string("t\(index)"))])
            try sync(a, to: b, zone)
        }
        let ownBlocks = try a.read { try $0.writeBlocks(of: a.replica, in: zone, endingIn: .zero...HLCTimestamp(rawValue: UInt64(Int64.max))) }
        #expect(ownBlocks.count <= 4, "a keeps \(ownBlocks.count) blocks for 302 writes")
        #expect(ownBlocks.allSatisfy { ($0.entries?.count ?? 0) <= WriteBlock.maximumEntries })
        let relayed = try b.read { try $0.writeBlocks(of: a.replica, in: zone, endingIn: .zero...HLCTimestamp(rawValue: UInt64(Int64.max))) }
        #expect(relayed.count <= 16, "b keeps \(relayed.count) of a's blocks")
        let c = try store("c")
        try sync(b, to: c, zone)
        var reader = ChangeSetReader(source: ArrayByteSource(try b.changeSet(for: zone, since: VersionVector())))
        _ = try reader.readHeader()
        while try reader.nextRecord() != nil {}
        #expect(reader.proofs.count <= 16, "a new device checks \(reader.proofs.count) blocks")
        let states = try [a, b, c].map { store in try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state).sorted { $0.recordName < $1.recordName } } }
        #expect(states[0].count == 301 && states[0] == states[1] && states[1] == states[2])
    }

    @Test func aStoreThatDeployedItsSchemaCanStillSendWhatItReceived() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b) = try twoStoresHoldingM1()
        try b.write { _ = try $0.deploySchema() }
        // The deployment is stamped by b, a replica none of b's records names.
        let bytes = try b.changeSet(for: zone, since: VersionVector())
        try a.apply(bytes)
        #expect(try a.read { try $0.schema() }.isProduction)
    }

    @Test func aDeletedZoneCanBeSent() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b) = try twoStoresHoldingM1()
        try b.write { try $0.deleteZone(zone) }
        try sync(b, to: a, zone)
        #expect(try a.read { try $0.syncState(of: zone) }?.zoneState.exists == false)
        #expect(try record(a, "m1") == nil)
        _ = try b.changeSet(for: zone, since: VersionVector())
    }

    @Test func aWriterRefusesARecordItsHeaderCannotName() throws {
        let stranger = ReplicaID(high: 9, low: 9)
        let known = ReplicaID(high: 1, low: 1)
        let stamp = Stamp(time: HLCTimestamp(milliseconds: 1_700_000_000_000, counter: 0), replica: stranger)
        let state = LocalWrite.save(previous: nil, recordName: "r", recordType: "T", changes: [("f", .int64(1))], replacement: .changedKeys, stamp: stamp)
        let header = ChangeSetHeader(
            zone: zone, zoneState: ZoneState(causalLength: 1, stamp: Stamp(time: .zero, replica: known)),
            base: VersionVector(), top: VersionVector(), claimsTop: true, replicas: [known], schema: Schema())
        var writer = try ChangeSetWriter(header: header, proofs: nil) { _ in }
        #expect(throws: ChangeSetError.replicaMissingFromHeader("record \"r\"")) { try writer.append(state) }
        #expect(throws: ChangeSetError.self) { try writer.finish() }
        // A header whose own stamps name a replica it lacks is refused too.
        var schema = Schema()
        schema.merge(deployed: stamp)
        let lying = ChangeSetHeader(zone: zone, zoneState: header.zoneState, base: VersionVector(), top: VersionVector(), claimsTop: true, replicas: [known], schema: schema)
        #expect(throws: ChangeSetError.self) { _ = try ChangeSetWriter(header: lying, proofs: nil) { _ in } }
    }

    @Test func applyingWhatIsAlreadyHeldTakesNoCommit() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store("a")
        let b = try store("b")
        try a.write { _ = try $0.createZone(zone) }
        for index in 0..<20 { try save(a, "m\(index)", [("title", .string("t\(index)"))]) }
        let everything = try a.changeSet(for: zone, since: VersionVector())
        #expect(try b.apply(everything).recordsChanged == 20)
        let sequence = try b.currentSequence()
        let checkpoints = try b.read { try $0.syncState(of: zone) }
        let again = try b.apply(everything)
        #expect(again.recordsReceived == 20 && again.recordsChanged == 0)
        #expect(try b.currentSequence() == sequence)
        #expect(try b.read { try $0.syncState(of: zone) } == checkpoints)
        // A save that changes nothing is no commit either.
        try save(b, "m3", [("title", "t3")])
        #expect(try b.currentSequence() == sequence)
        try save(b, "m3", [("title", "changed")])
        #expect(try b.currentSequence() == sequence + 1)
    }

    @Test func conflictsReachEveryReplicaAndTheirClearingSyncs() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(1_700_000_000_000)
        let a = try store("a", clock: clock)
        let b = try store("b", clock: clock)
        let c = try store("c", clock: clock)
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "m1", [("rating", .int64(1))])
        try sync(a, to: b, zone)
        clock.now += 1
        try save(a, "m1", [("rating", .int64(2))])
        clock.now += 1
        try save(b, "m1", [("rating", .int64(3))])
        // A → B: B's merge sees the concurrency; B → C: C never met A.
        let merged = try sync(a, to: b, zone)
        #expect(merged.conflicts == 1)
        try sync(b, to: c, zone)
        let onB = try #require(try record(b, "m1"))
        let onC = try #require(try record(c, "m1"))
        #expect(onB == onC && onC.conflicts.count == 1)
        #expect(onC[field: "rating"] == .int64(3) && onC.conflicts.first?.losingValue == .int64(2))
        // A has not seen B's write yet: after it does, it shows the same conflict.
        try sync(b, to: a, zone)
        #expect(try record(a, "m1") == onB)
        // Clearing on C is a write that reaches A and B.
        #expect(try c.write { try $0.clearConflicts(of: "m1", in: zone) })
        try sync(c, to: b, zone)
        try sync(b, to: a, zone)
        for store in [a, b, c] { #expect(try record(store, "m1")?.conflicts.isEmpty == true) }
        #expect(try record(a, "m1") == (try record(c, "m1")))
        // Writing a merged value resolves too.
        clock.now += 1
        try save(a, "m1", [("rating", .int64(4))])
        clock.now += 1
        try save(c, "m1", [("rating", .int64(5))])
        try sync(a, to: c, zone)
        #expect(try record(c, "m1")?.conflicts.count == 1)
        try save(c, "m1", [("rating", .int64(5))]) // the same value, written over the conflict
        try sync(c, to: a, zone)
        #expect(try record(a, "m1")?.conflicts.isEmpty == true && (try record(a, "m1")) == (try record(c, "m1")))
    }

    /// The case: a target deleted and re-created on one replica, a
    /// deleteSelf reference to the old incarnation written on another. A
    /// replica that gets the re-created target first must still delete the
    /// reference, as one that got the delete first does.
    @Test func cascadesEndTheSameWhateverTheArrivalOrder() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(1_700_000_000_000)
        let a = try store("a", clock: clock)
        let b = try store("b", clock: clock)
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "target", [("title", "v1")])
        try sync(a, to: b, zone)
        clock.now += 1
        try save(b, "child", [("parent", .reference(RecordReference(recordName: "target", action: .deleteSelf)))], type: "Part")
        let child = try b.changeSet(for: zone, since: try a.read { try $0.syncState(of: zone)!.vector })
        clock.now += 1
        try a.write { _ = try $0.delete(["target"], in: zone) }
        let deletion = try a.changeSet(for: zone, since: VersionVector())
        clock.now += 1
        try save(a, "target", [("title", "v2")])
        let recreation = try a.changeSet(for: zone, since: VersionVector())

        let early = try store("early", clock: clock)
        for bytes in [deletion, child, recreation] { try early.apply(bytes) }
        let late = try store("late", clock: clock)
        for bytes in [child, recreation, deletion] { try late.apply(bytes) }
        try a.apply(child)
        for replica in [early, late, a] {
            #expect(try record(replica, "child")?.isAlive == false)
            #expect(try record(replica, "target")?.isAlive == true)
        }
        // A reference written against the new incarnation survives the old delete.
        clock.now += 1
        try save(late, "child2", [("parent", .reference(RecordReference(recordName: "target", action: .deleteSelf)))], type: "Part")
        try sync(late, to: early, zone)
        try early.apply(deletion)
        #expect(try record(early, "child2")?.isAlive == true)
        for replica in [early, late, a] { for other in [early, late, a] { try sync(other, to: replica, zone) } }
        #expect(try late.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
            == (try early.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }))
    }

    @Test func aZoneRecreationFromTheFutureWaitsWhole() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(1_700_000_000_000)
        let ahead = ManualClock(1_700_000_000_000 + 3_600_000)
        let a = try store("a", clock: clock)
        let future = try store("future", clock: ahead)
        try a.write { _ = try $0.createZone(zone) }
        try save(a, "m1", [("title", "kept")])
        try sync(a, to: future, zone)
        try future.write { try $0.deleteZone(zone) }
        try future.write { _ = try $0.createZone(zone) }
        let sequence = try a.currentSequence()
        let summary = try sync(future, to: a, zone)
        #expect(summary.zoneDeferred)
        #expect(try record(a, "m1")?[field: "title"] == "kept")
        #expect(try a.currentSequence() == sequence)
        clock.now = ahead.now
        #expect(try sync(future, to: a, zone).zoneDeferred == false)
        #expect(try record(a, "m1") == nil)
    }

    @Test func valuesALocalSaveRefusesAreRefusedFromAPeer() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(1_700_000_000_000)
        let peer = try MemoryReplica(identity: .numbered(7), wallClock: { clock.now })
        peer.createZone(zone)
        let target = try store("target", clock: clock)
        for (index, value) in [FieldValue.double(.nan), .double(.infinity), .location(Location(latitude: 91, longitude: 0)), .list([.double(-.infinity)])].enumerated() {
            try peer.save("bad", type: "Movie", in: zone, changes: [("v\(index)", value)])
            let sequence = try target.currentSequence()
            #expect(throws: ChangeSetError.self, "\(value) was accepted") { try target.apply(try peer.makeChangeSet(for: zone, since: VersionVector())) }
            #expect(try target.currentSequence() == sequence)
            try peer.save("bad", type: "Movie", in: zone, changes: [("v\(index)", nil)])
        }
    }

    /// What a local write could never make is refused from a peer too, even
    /// with valid checksums: names the CLI could not address, causal lengths
    /// that would overflow, values past CloudKit's limits.
    @Test func whatNoLocalWriteCouldMakeIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock(1_700_000_000_000)
        let target = try store("target", clock: clock)
        func peer() throws -> MemoryReplica {
            let replica = try MemoryReplica(identity: .numbered(7), wallClock: { clock.now })
            replica.createZone(zone)
            return replica
        }
        func expectRefused(_ bytes: [UInt8], _ what: String) throws {
            let sequence = try target.currentSequence()
            #expect(throws: ChangeSetError.self, "\(what) was accepted") { try target.apply(bytes) }
            #expect(try target.currentSequence() == sequence)
        }
        for (name, type, field) in [("r/rr", "Movie", "title"), ("r\u{1}r", "Movie", "title"), ("r", "1Movie", "title"), ("r", "Movie", "1title"), ("r", "Movie", "ti tle")] {
            let replica = try peer()
            try replica.save(name, type: type, in: zone, changes: [(field, .string("x"))])
            try expectRefused(try replica.makeChangeSet(for: zone, since: VersionVector()), "\(name) \(type).\(field)")
        }
        for zoneName in ["a/b", "with space", ""] {
            let replica = try MemoryReplica(identity: .numbered(7), wallClock: { clock.now })
            let bad = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: zoneName))
            replica.createZone(bad)
            try expectRefused(try replica.makeChangeSet(for: bad, since: VersionVector()), "zone \"\(zoneName)\"")
        }
        for value in [FieldValue.string(String(repeating: "x", count: Limits.maximumRecordBytes + 1)), .date(Int64.max), .date(Limits.dateRange.lowerBound - 1)] {
            let replica = try peer()
            try replica.save("r", type: "Movie", in: zone, changes: [("v", value)])
            try expectRefused(try replica.makeChangeSet(for: zone, since: VersionVector()), "\(value.type) value")
        }
        // Causal lengths past the bound: a delete of such a record would overflow.
        let replica = try peer()
        var state = try replica.save("r", type: "Movie", in: zone, changes: [("v", .int64(1))])
        state.causalLength = Limits.maximumCausalLength + 1
        let header = ChangeSetHeader(zone: zone, sync: replica.syncState(of: zone)!, base: VersionVector(), schema: replica.schema())
        try expectRefused(try MemoryReplica.encode(header: header, records: [state]), "a record's causal length past the bound")
        var zoneHeader = header
        zoneHeader.zoneState.causalLength = Limits.maximumCausalLength + 1
        try expectRefused(try MemoryReplica.encode(header: zoneHeader, records: []), "a zone's causal length past the bound")
    }
}
