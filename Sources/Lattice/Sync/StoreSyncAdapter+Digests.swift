import LatticeCore
import LatticeProtocol
import LatticeStore

/// Reconciliation rounds answered from the store's digests, brought up to
/// date first (records written since the last round are hashed then).
extension StoreSyncAdapter {
    func reconcileOpening(zones: [ZoneKey]) throws -> ReconcileMessage {
        try store.refreshDigests(of: zones)
        return try store.read { try Reconciler.opening(zones: zones, source: $0) }
    }

    func reconcileRound(_ message: ReconcileMessage, reconciler: Reconciler) throws -> (ReconcileMessage, Reconciler) {
        try store.refreshDigests(of: message.zones.map(\.zone))
        var reconciler = reconciler
        let reply = try store.read { try reconciler.reply(to: message, source: $0) }
        return (reply, reconciler)
    }
}
