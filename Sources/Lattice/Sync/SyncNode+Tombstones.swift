import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeTransport

extension SyncNode {
    /// One pass of tombstone collection over the private zones: a tombstone
    /// goes once every device of the account acknowledged (in a hello, an
    /// acknowledgement or a claim, in this run or saved by an earlier one) a
    /// vector of its zone covering it. A device away longer than the
    /// tombstone horizon no longer counts; it is told what went when it
    /// returns (`tellCollectedIfAway`). Shared zones and the public database
    /// keep theirs: not every device that holds them is known here.
    /// Returns how many went.
    @discardableResult
    func collectTombstones() -> Int {
        let store = container.store
        let (holds, connected) = state.withLockedValue { state in
            (state.collection.peerHolds, Set(state.connections.byPeer.filter { $0.value.contains { $0.access.isAccount } }.map(\.key)))
        }
        let now = RecordStore.systemWallClock()
        // Devices connected now were seen now: what `status` reads of the horizon is this pass's view.
        try? store.write { transaction in
            for device in connected.sorted() { try transaction.upsertPeer(device, name: nil, trusted: nil, lastSeen: now) }
        }
        let horizon = configuration.tombstoneHorizon.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        guard let pass = try? container.collectionPass(acknowledgements: holds, connected: connected, horizon: horizon) else { return 0 }
        // Signed blocks that prove nothing any record shows any more go too, in any zone whose blocks doubled.
        if let dropped = try? container.collectWriteBlocks(onlyIfGrown: true), dropped > 0 {
            logger.info("dropped write blocks no record needs", metadata: ["blocks": "\(dropped)"])
        }
        // And history older than its retention (a store that commits little would otherwise keep it).
        if let dropped = try? store.write({ try $0.collectHistory() }), dropped > 0 {
            logger.info("dropped history older than its retention", metadata: ["entries": "\(dropped)"])
        }
        for zone in pass.zones where !zone.collected.isEmpty {
            let without = pass.away.filter { holds[$0]?[zone.key].map { vector in !vector.dominates(zone.holds.acknowledged) } ?? true }
            logger.info("collected tombstones every device of the account acknowledged", metadata: [
                "zone": "\(zone.key)", "collected": "\(zone.collected.count)", "held": "\(zone.holds.held)",
                "away": "\(without.isEmpty ? "none" : without.sorted().joined(separator: ", ") + " (past the tombstone horizon; told when back)")"])
        }
        let through = Dictionary(uniqueKeysWithValues: pass.zones.filter { !$0.through.isEmpty }.map { ($0.key, $0.through) })
        let ask = pass.zones.reduce(into: Set<String>()) { $0.formUnion($1.holds.waitingFor.keys) }
        // Connected devices holding tombstones back may hold them already: a commit relayed to them
        // by another device brought this node no acknowledgement. Asked, they say (for the next pass).
        let handles = state.withLockedValue { state in
            state.collection.collectedThrough = through
            return ask.intersection(connected).compactMap { state.connections[$0]?.first(where: \.isActive) }
        }
        for handle in handles { handle.requestHolds() }
        return pass.zones.reduce(0) { $0 + $1.collected.count }
    }

    /// Reads what each private zone collected, for the devices that connect before the first pass.
    func loadCollectedThrough() {
        guard let through = try? container.store.read({ snapshot in
            try snapshot.zones(in: .private).reduce(into: [ZoneKey: VersionVector]()) { result, zone in
                let vector = try snapshot.collectedThrough(in: zone.key)
                if !vector.isEmpty { result[zone.key] = vector }
            }
        }) else { return }
        state.withLockedValue { $0.collection.collectedThrough = through }
    }

    /// A device of the account says what it holds of a private zone: if that
    /// does not cover every tombstone collected here, it was away past the
    /// horizon and may hold older states of those records; it is told which
    /// (once a connection), and deletes them as they were deleted here.
    func tellCollectedIfAway(_ peer: String, zone: ZoneKey, holding vector: VersionVector) {
        guard zone.scope == .private else { return }
        let handle = state.withLockedValue { state -> ConnectionHandle? in
            guard let through = state.collection.collectedThrough[zone], !vector.dominates(through),
                  let handle = state.connections[peer]?.first(where: \.isActive), handle.access.isAccount,
                  state.collection.toldCollected.insert("\(peer) \(zone)").inserted else { return nil }
            return handle
        }
        guard let handle else { return }
        // Read here, at the hello, on the connection's thread: the message is then queued before the
        // stream's first batch (read off the thread, after), so the peer takes it before any claim
        // that would cover what was collected.
        guard let (incarnation, records, blocks) = try? container.store.read({ snapshot in
            let records = try snapshot.residues(in: zone, notCoveredBy: vector)
            return (try snapshot.syncState(of: zone)?.zoneState.causalLength ?? 0, records, try snapshot.deletionBlocks(of: records.map(\.residue), in: zone))
        }), !records.isEmpty, incarnation % 2 == 1 else { return }
        logger.notice("a device back after the tombstone horizon is told which records were deleted and collected meanwhile", metadata: [
            "peer": "\(peer)", "zone": "\(zone)", "records": "\(records.count)"])
        handle.tellCollected(zone: zone, zoneIncarnation: incarnation, records: records.map { CollectedRecord(name: $0.name, residue: $0.residue) }, blocks: blocks)
    }
}
