@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeStore

/// Reconciliation rounds answered from the store's digests, brought up to
/// date first (records written since the last round are hashed then).
extension StoreSyncAdapter {
    func reconcileOpening(zones: [ZoneKey]) throws -> ReconcileMessage {
        try store.refreshDigests(of: zones)
        return try store.read { try Reconciler.opening(zones: zones, source: $0) }
    }

    func repairBatch(zone: ZoneKey, names: [String], for peer: DeviceID) throws -> (OutgoingBatch?, left: [String]) {
        try store.read { snapshot in
            let access = try requireAccess(peer, to: zone, in: snapshot)
            // A listed participant no longer admitted gets the share alone, as its stream does.
            if zone.scope == .shared, !access.isAccount, let share = try snapshot.share(of: zone), !share.admits(accounts(of: peer, in: snapshot)) { return (nil, []) }
            let (batch, left) = try snapshot.repairBatch(for: zone, names: names, includingSchema: access.isAccount, maximumBytes: 1 << 20)
            return (batch.map { OutgoingBatch(bytes: $0.bytes, cursor: StreamCursor($0.cursor), final: false, records: $0.records, zoneState: $0.zoneState) }, left)
        }
    }

    func reconcileRound(_ message: ReconcileMessage, reconciler: Reconciler) throws -> (ReconcileMessage, Reconciler) {
        try store.refreshDigests(of: message.zones.map(\.zone))
        var reconciler = reconciler
        let reply = try store.read { try reconciler.reply(to: message, source: $0) }
        return (reply, reconciler)
    }
}
