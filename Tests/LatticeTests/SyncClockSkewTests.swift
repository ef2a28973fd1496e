import Foundation
@_spi(Tools) @testable import Lattice
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCrypto

/// A peer whose clock runs ahead sends records this node must defer: the
/// session takes no claim for them and keeps its resume point before them,
/// so they come again, and land, once the clocks allow.
@Suite struct SyncClockSkewTests {
    final class WallClock: @unchecked Sendable {
        var now: UInt64
        init(_ now: UInt64) { self.now = now }
    }

    /// Runs one session between two adapters until neither has anything left to do.
    static func session(_ a: StoreSyncAdapter, _ b: StoreSyncAdapter) throws {
        let ids = [a.store.identity.deviceID, b.store.identity.deviceID]
        let adapters = [a, b]
        var sessions = [SyncSession(localHello: try a.hello(for: ids[1])), SyncSession(localHello: try b.hello(for: ids[0]))]
        var inbox: [[SyncMessage]] = [[], []]
        var work: [[SyncSession.Action]] = [[], []]
        func perform(_ actions: [SyncSession.Action], _ side: Int) {
            for action in actions {
                switch action {
                case .send(let message): inbox[1 - side].append(message)
                case .produce, .apply, .adoptRoster: work[side].append(action)
                case .serveAsset, .answerReconcile, .answerHolds, .applyCollected: Issue.record("no asset, comparison, holds or collection was asked for")
                case .close(let reason): Issue.record("closed: \(reason)")
                case .event: break
                }
            }
        }
        perform(sessions[0].start(), 0)
        perform(sessions[1].start(), 1)
        while inbox.contains(where: { !$0.isEmpty }) || work.contains(where: { !$0.isEmpty }) {
            for side in 0...1 {
                while !inbox[side].isEmpty { perform(sessions[side].receive(inbox[side].removeFirst()), side) }
                while !work[side].isEmpty {
                    switch work[side].removeFirst() {
                    case .produce(let request): perform(sessions[side].batchProduced(try adapters[side].produceBatch(request, for: ids[1 - side])), side)
                    case .apply(let batch): perform(sessions[side].batchApplied(try adapters[side].applyBatch(batch, from: ids[1 - side])), side)
                    case .adoptRoster(let roster):
                        try adapters[side].adoptRoster(roster, from: ids[1 - side])
                        perform(sessions[side].rosterAdopted(), side)
                    default: break
                    }
                }
            }
        }
    }

    @Test func recordsFromAClockAheadLandOnceTheClocksAllow() throws {
        let directory = TemporaryDirectory()
        let start: UInt64 = 1_800_000_000_000
        let hour: UInt64 = 3_600_000
        let fastClock = WallClock(start + hour)
        let slowClock = WallClock(start)
        let fast = try RecordStore(directory: directory.url.appendingPathComponent("fast"), wallClock: { fastClock.now })
        let slow = try RecordStore(directory: directory.url.appendingPathComponent("slow"), wallClock: { slowClock.now })
        let zone = ZoneKey(scope: .private, zoneID: LatticeCore.ZoneID(zoneName: "notes", ownerName: LatticeCore.ZoneID.defaultOwnerName))
        slowClock.now = start
        try slow.write { _ = try $0.createZone(zone) }
        try Self.session(StoreSyncAdapter.trusting(slow, store: fast), StoreSyncAdapter.trusting(fast, store: slow))
        try fast.write { _ = try $0.save("future", type: "Note", in: zone, changes: [("text", .string("from ahead"))]) }
        let fastAdapter = try StoreSyncAdapter.trusting(slow, store: fast)
        let slowAdapter = try StoreSyncAdapter.trusting(fast, store: slow)
        try Self.session(fastAdapter, slowAdapter)
        #expect(try slow.read { try $0.record("future", in: zone) } == nil)
        // Nothing claims the deferred write is held, and the resume point stays before it.
        let fastWrite = try fast.read { try $0.record("future", in: zone)!.vector }
        #expect(!(try slow.read { try $0.syncState(of: zone)!.vector }).dominates(fastWrite))
        // An hour later the next session brings it.
        slowClock.now = start + hour + 1000
        try Self.session(fastAdapter, slowAdapter)
        #expect(try slow.read { try $0.record("future", in: zone) }?.isAlive == true)
        #expect(try slow.read { try $0.syncState(of: zone)!.vector }.dominates(fastWrite))
    }
}
