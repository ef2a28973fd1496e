import Foundation
@_spi(Tools) @testable import Lattice
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeTestSupport
import Testing

/// The store side of the protocol on its own.
@Suite struct SyncStoreAdapterTests {
    /// A device the stores in these tests trust.
    let peer = try! Identity.generate().deviceID

    func store(with records: Int) throws -> (TemporaryDirectory, Container, ZoneKey) {
        let directory = TemporaryDirectory()
        let container = try directory.container()
        try container.trust(deviceID: peer.description)
        let database = container.privateCloudDatabase
        try database.save(Zone(zoneName: "notes"))
        for i in 0..<records { try database.save(movie("m\(i)", zone: Zone.ID(zoneName: "notes"), ["rating": .int64(Int64(i))])) }
        return (directory, container, ZoneKey(scope: .private, zoneID: LatticeCore.ZoneID(zoneName: "notes", ownerName: LatticeCore.ZoneID.defaultOwnerName)))
    }

    func request(_ zone: ZoneKey, after: StreamCursor, peerVector: VersionVector = VersionVector(), records: Int = 100) -> BatchRequest {
        BatchRequest(zone: zone, after: after, peerVector: peerVector, peerZoneState: nil, wantsTotals: true, maximumRecords: records, maximumBytes: 1 << 20)
    }

    @Test func aResumePointPastTheStoresHistoryIsIgnored() throws {
        // A peer remembers a cursor from before this store was restored from an older copy.
        let (directory, container, zone) = try store(with: 5)
        _ = directory
        let batch = try #require(try container.syncDelegate().produceBatch(request(zone, after: StreamCursor(sequence: 1_000_000, row: 3)), for: peer))
        #expect(batch.records == 5 && batch.final)
    }

    @Test func batchesCoverTheZoneOnceInOrderAndTheLastClaims() throws {
        let (directory, container, zone) = try store(with: 10)
        _ = directory
        let delegate = try container.syncDelegate()
        var cursor = StreamCursor.start
        var sent = 0
        var finals = 0
        while let batch = try delegate.produceBatch(request(zone, after: cursor, records: 3), for: peer) {
            sent += batch.records
            #expect(batch.cursor > cursor)
            cursor = batch.cursor
            if batch.final {
                finals += 1
                #expect(batch.claimedTop == (try container.vector(for: zone)))
                break
            }
        }
        #expect(sent == 10 && finals == 1)
        // Nothing new after the end: nothing to send to a peer that holds it all,
        // and the stream stands at the end of the store's change order.
        var holdsAll = request(zone, after: cursor, peerVector: try container.vector(for: zone))
        holdsAll.peerZoneState = try container.store.read { try $0.syncState(of: zone)!.zoneState }
        let nothing = try #require(try delegate.produceBatch(holdsAll, for: peer))
        #expect(nothing.isEmpty && nothing.records == 0)
        #expect(nothing.cursor == .end(of: try container.store.read { try $0.sequence() }))
    }

    @Test func recordsThePeerHoldsAreSkipped() throws {
        let (directory, container, zone) = try store(with: 4)
        _ = directory
        let batch = try #require(try container.syncDelegate().produceBatch(request(zone, after: .start, peerVector: try container.vector(for: zone)), for: peer))
        #expect(batch.records == 0 && batch.final)
    }

    @Test func aDeviceNoLongerTrustedGetsNoBatchAndCommitsNone() throws {
        let (directory, container, zone) = try store(with: 3)
        _ = directory
        let delegate = try container.syncDelegate()
        let batch = try #require(try delegate.produceBatch(request(zone, after: .start), for: peer))
        let otherDirectory = TemporaryDirectory()
        let other = try otherDirectory.container()
        try other.trust(deviceID: container.deviceID)
        let incoming = IncomingBatch(zone: zone, bytes: batch.bytes, cursor: batch.cursor, final: batch.final, records: batch.records, claimedTop: batch.claimedTop)
        // The in-memory set still trusts it; the transactions look at the store.
        try container.untrust(deviceID: peer.description)
        #expect(delegate.access(for: peer) == .account)
        #expect(throws: PeerNoLongerTrusted(peer: peer)) { try delegate.produceBatch(request(zone, after: .start), for: peer) }
        let otherDelegate = try other.syncDelegate()
        try other.untrust(deviceID: container.deviceID)
        #expect(throws: PeerNoLongerTrusted(peer: container.store.identity.deviceID)) { try otherDelegate.applyBatch(incoming, from: container.store.identity.deviceID) }
        #expect(try other.store.read { try $0.resumePoints(of: container.deviceID) }.isEmpty)
        #expect(try other.store.read { try $0.record("m0", in: zone) } == nil)
    }

    /// A commit is recorded as a peer's (so relaying may skip it) only when it
    /// holds nothing but that peer's batch: a cascade the batch sets off here
    /// writes on this replica's behalf, and every peer must get that.
    @Test func aCommitIsThePeersOnlyWhenItHoldsNoWriteOfThisReplica() throws {
        let directory = TemporaryDirectory()
        let a = try directory.container("a"), b = try directory.container("b")
        try a.trust(deviceID: b.deviceID)
        try b.trust(deviceID: a.deviceID)
        let zone = ZoneKey(scope: .private, zoneID: .default)
        let (ida, idb) = (try #require(DeviceID(a.deviceID)), try #require(DeviceID(b.deviceID)))
        /// a's batch applied on b through the adapters; b's sequence before it.
        func deliver() throws -> UInt64 {
            let before = try b.store.read { try $0.sequence() }
            var wanted = request(zone, after: .start, peerVector: try b.vector(for: zone), records: 1000)
            wanted.wantsTotals = false
            let batch = try #require(try a.syncDelegate().produceBatch(wanted, for: idb))
            _ = try b.syncDelegate().applyBatch(
                IncomingBatch(zone: zone, bytes: batch.bytes, cursor: batch.cursor, final: batch.final, records: batch.records, claimedTop: batch.claimedTop), from: ida)
            return before
        }
        try a.privateCloudDatabase.save(movie("parent", ["title": "P"]))
        let first = try deliver()
        #expect(try b.store.read { try $0.commitSources(after: first) }.values.contains(a.deviceID))
        try b.privateCloudDatabase.save(movie("late", ["parent": .reference(RecordReference(recordName: "parent", action: .deleteSelf))]))
        try a.privateCloudDatabase.deleteRecord(withID: Record.ID(recordName: "parent"))
        let second = try deliver()
        #expect(throws: LatticeError.self, "the delete cascaded to b's child") { try b.privateCloudDatabase.record(for: Record.ID(recordName: "late")) }
        #expect(try b.store.read { try $0.sequence() } > second)
        #expect(try b.store.read { try $0.commitSources(after: second) }.isEmpty, "the cascade's commit holds b's own writes")
    }
}
