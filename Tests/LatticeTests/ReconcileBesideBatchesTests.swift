import Foundation
@_spi(Tools) @testable import Lattice
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeStore
@testable import LatticeTransport
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import LatticeTestSupport
import Testing

/// A reconciliation round may first hash every record of a zone written since
/// the last one (a million after an initial sync: many seconds). It runs on a
/// pool of its own, so batches to and from the same peer are not held behind it.
@Suite struct ReconcileBesideBatchesTests {
    /// The store's adapter, with reconciliation rounds held at a gate until the test opens it.
    final class GatedReconciliation: SyncDelegate, @unchecked Sendable {
        let inner: StoreSyncAdapter
        let gate = DispatchSemaphore(value: 0)
        let entered = NIOLockedValueBox(false)
        init(_ inner: StoreSyncAdapter) { self.inner = inner }

        func reconcileOpening(zones: [ZoneKey]) throws -> ReconcileMessage {
            entered.withLockedValue { $0 = true }
            gate.wait()
            return try inner.reconcileOpening(zones: zones)
        }

        func access(for peer: DeviceID) -> PeerAccess? { inner.access(for: peer) }
        func noteConnected(_ peer: DeviceID, address: String) throws { try inner.noteConnected(peer, address: address) }
        func hello(for peer: DeviceID) throws -> Hello { try inner.hello(for: peer) }
        func zones() throws -> [ZoneKey] { try inner.zones() }
        func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch? { try inner.produceBatch(request, for: peer) }
        func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch { try inner.applyBatch(batch, from: peer) }
        func adoptRoster(_ roster: [UInt8], from peer: DeviceID) throws { try inner.adoptRoster(roster, from: peer) }
        func roster() throws -> [UInt8] { try inner.roster() }
        func notePeerMembership(_ membership: [UInt8], of peer: DeviceID) -> Bool { inner.notePeerMembership(membership, of: peer) }
        func noteOfferedZones(_ zones: [ZoneID], from peer: DeviceID) throws { try inner.noteOfferedZones(zones, from: peer) }
        func sharedZoneAdverts(_ zones: Set<ZoneID>, for peer: DeviceID) throws -> [ZoneAdvert] { try inner.sharedZoneAdverts(zones, for: peer) }
        func serveAsset(_ request: AssetRequest, for peer: DeviceID) throws -> AssetReply { try inner.serveAsset(request, for: peer) }
        func reconcileRound(_ message: ReconcileMessage, reconciler: Reconciler) throws -> (ReconcileMessage, Reconciler) {
            try inner.reconcileRound(message, reconciler: reconciler)
        }
        func repairBatch(zone: ZoneKey, names: [String], for peer: DeviceID) throws -> (OutgoingBatch?, left: [String]) {
            try inner.repairBatch(zone: zone, names: names, for: peer)
        }
        func localChanges(after sequence: UInt64?) throws -> LocalChanges { try inner.localChanges(after: sequence) }
        func holdings(for peer: DeviceID) throws -> [ZoneAdvert] { try inner.holdings(for: peer) }
        func applyCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock], from peer: DeviceID) throws -> Int {
            try inner.applyCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks, from: peer)
        }
    }

    @Test func aReconciliationThatTakesLongHoldsNoBatchBack() async throws {
        let directory = TemporaryDirectory()
        let a = try directory.container("a")
        let b = try directory.container("b")
        let zone = Zone.ID(zoneName: "Films")
        try await a.privateCloudDatabase.save(Zone(zoneName: "Films"))
        _ = try await a.privateCloudDatabase.save(movie("first", zone: zone, ["title": "First"]))

        // One thread for store work on each side: were the held round on it, nothing else would run.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let pool = NIOThreadPool(numberOfThreads: 1)
        let background = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        background.start()
        let gatedA = GatedReconciliation(try StoreSyncAdapter.trusting(b.store, store: a.store, container: a.containerIdentifier))
        let adapterB = try StoreSyncAdapter.trusting(a.store, store: b.store, container: b.containerIdentifier)
        let handles = NIOLockedValueBox<[DeviceID: ConnectionHandle]>([:])
        let noting: @Sendable (ConnectionEvent) -> Void = { event in
            if case .authenticated(let peer, _, let handle) = event { handles.withLockedValue { $0[peer] = handle } }
        }
        let endpointA = SyncEndpoint(identity: a.store.identity, delegate: gatedA, group: group, threadPool: pool, backgroundPool: background,
                                     logger: Logger(label: "a"), onEvent: noting)
        let endpointB = SyncEndpoint(identity: b.store.identity, delegate: adapterB, group: group, threadPool: pool, backgroundPool: background,
                                     logger: Logger(label: "b"), onEvent: { _ in })
        let listener = try await endpointA.listen(host: "127.0.0.1", port: 0)
        let port = try #require(listener.localAddress?.port)
        let dialed = try await endpointB.connect(host: "127.0.0.1", port: port)
        let database = b.privateCloudDatabase
        #expect(await eventually { (try? await database.record(for: Record.ID(recordName: "first", zoneID: zone))) != nil }, "the first record never synced")
        let handle = try #require(handles.withLockedValue { $0[b.store.identity.deviceID] })

        // A reconciliation is held in its opening round on A...
        let outcome = NIOLockedValueBox<Result<ReconcileOutcome, Error>?>(nil)
        handle.reconcile(zones: nil) { result in outcome.withLockedValue { $0 = result } }
        #expect(await eventually { gatedA.entered.withLockedValue { $0 } }, "the reconciliation never began")

        // ...while A saves and tells the session: the save reaches B all the same.
        _ = try await a.privateCloudDatabase.save(movie("second", zone: zone, ["title": "Second"]))
        handle.localCommit(try gatedA.localChanges(after: nil))
        let arrived = await eventually { (try? await database.record(for: Record.ID(recordName: "second", zoneID: zone))) != nil }
        #expect(arrived, "a save waited behind a reconciliation round")
        #expect(outcome.withLockedValue { $0 } == nil, "the reconciliation finished before its gate opened")

        // Opened, the reconciliation ends and finds the two in sync.
        gatedA.gate.signal()
        #expect(await eventually { outcome.withLockedValue { $0 } != nil }, "the reconciliation never finished")
        let differences = try outcome.withLockedValue { try #require($0).get() }.differences
        #expect(differences.isEmpty, "the stores differ after syncing: \(differences)")

        try await dialed.close()
        try await listener.close()
        try await pool.shutdownGracefully()
        try await background.shutdownGracefully()
        try await group.shutdownGracefully()
    }
}
