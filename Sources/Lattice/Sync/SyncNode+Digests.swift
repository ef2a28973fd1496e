import LatticeCore
import LatticeProtocol
import LatticeTransport

extension SyncNode {
    /// Compares `zones` (nil: every zone both sides sync with each other, of `scope` if given)
    /// with those of `peer`, a connected device, by range-based
    /// reconciliation of their digests: the outcome lists each record the two
    /// hold differently (empty when in sync), the round trips and the bytes.
    public func compare(with peer: String, zones: [ZoneKey]? = nil, scope: DatabaseScope? = nil) async throws -> ZoneComparison {
        guard let handle = connection(to: peer) else {
            throw LatticeError(.networkUnavailable, "device \(peer) is not connected to this node")
        }
        do {
            return try await withCheckedThrowingContinuation { continuation in
                handle.reconcile(zones: zones, scope: scope) { continuation.resume(with: $0) }
            }
        } catch let failure as ReconcileFailure {
            throw LatticeError(.networkUnavailable, failure.description)
        }
    }
}
