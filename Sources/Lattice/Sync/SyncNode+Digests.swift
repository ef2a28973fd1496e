@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import LatticeTransport
import NIOCore
import Foundation

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

/// A peer's digest comparisons after syncs.
struct Verification {
    var last: NIODeadline?
    var running = false
    var scheduled = false
    /// Whether the session is quiescent now (both sides sent all they had):
    /// a comparison runs only then, so what is still streaming is not taken
    /// for a difference.
    var quiescent = false
    /// Differences the last comparison found (zone, name, both hashes): one
    /// found again by the next is confirmed; one found once may have been a
    /// write that landed on one side between the two snapshots.
    var suspects: Set<String> = []
    /// Differences already repaired once: one that comes back is reported,
    /// not re-sent again and again.
    var repaired: Set<String> = []
}

extension SyncNode {
    /// A session with `peer` went quiescent: compare digests now if the last
    /// comparison is older than the interval, else once it is.
    func verifySoon(_ peer: String, after delay: TimeAmount? = nil) {
        guard configuration.verificationInterval > .zero, !configuration.comparesOnly else { return }
        let interval = TimeAmount(configuration.verificationInterval)
        let wait = state.withLockedValue { state -> TimeAmount? in
            var entry = state.sessions.verifications[peer] ?? Verification()
            defer { state.sessions.verifications[peer] = entry }
            entry.quiescent = true
            guard !entry.running, !entry.scheduled else { return nil }
            let due = delay.map { .now() + $0 } ?? entry.last.map { $0 + interval } ?? .now()
            entry.scheduled = true
            return max(.zero, due - .now())
        }
        guard let wait else { return }
        group.next().scheduleTask(in: wait) { [weak self] in self?.verify(peer) }
    }

    /// A stream with `peer` runs again: no comparison until it is quiescent.
    func streamsRun(_ peer: String) {
        state.withLockedValue { $0.sessions.verifications[peer]?.quiescent = false }
    }

    private func verify(_ peer: String) {
        let handle = state.withLockedValue { state -> ConnectionHandle? in
            state.sessions.verifications[peer]?.scheduled = false
            // Within the account (each round can read a whole zone), on sessions that sync, once they are quiescent.
            guard let handle = state.connections[peer]?.first, handle.access.isAccount, !handle.comparesOnly, !state.runtime.stopped,
                  state.sessions.verifications[peer]?.quiescent == true else { return nil }
            state.sessions.verifications[peer]?.running = true
            return handle
        }
        guard let handle else { return }
        handle.reconcile(zones: nil) { [weak self] result in
            guard let self else { return }
            self.state.withLockedValue { state in
                state.sessions.verifications[peer]?.running = false
                state.sessions.verifications[peer]?.last = .now()
            }
            switch result {
            case .success(let outcome): self.verified(peer, outcome, handle: handle)
            case .failure(let error): self.logger.debug("digest comparison ended", metadata: ["peer": "\(peer)", "reason": "\(error)"])
            }
        }
    }

    /// Whether a difference is only a tombstone one side collected and the
    /// other still holds: each device collects at its own pass, so the two
    /// hold the same records meanwhile, one of them with a residue. (A peer
    /// holding a live record here collected is not this: its own comparison
    /// reports it.)
    private func isCollectionLag(_ difference: DigestDifference) -> Bool {
        guard let name = difference.recordName, difference.zone.scope == .private else { return false }
        return (try? container.store.read { snapshot in
            if difference.here != nil, difference.there == nil { return try snapshot.record(name, in: difference.zone)?.isAlive == false }
            if difference.here == nil, difference.there != nil { return try snapshot.collectedResidue(of: name, in: difference.zone) != nil }
            return false
        }) ?? false
    }

    /// Notes what a comparison after a sync found. A difference found twice
    /// in a row, the same both times, is a bug (both sides said they had sent
    /// all they had): reported as one, and repaired (this side sends its
    /// states of what differs; the peer's comparison sends the peer's). One
    /// found once is compared again a second later.
    private func verified(_ peer: String, _ outcome: ReconcileOutcome, handle: ConnectionHandle) {
        var outcome = outcome
        outcome.differences.removeAll(where: isCollectionLag)
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        var toRepair: [ZoneKey: [String]] = [:]
        var confirmed: [DigestDifference] = []
        var persisting: [DigestDifference] = []
        var unconfirmed = false
        state.withLockedValue { state in
            var entry = state.sessions.verifications[peer] ?? Verification()
            var found: Set<String> = []
            for difference in outcome.differences {
                let mark = "\(difference.zone) \(difference.key) \(difference.here ?? []) \(difference.there ?? [])"
                found.insert(mark)
                guard entry.suspects.contains(mark) else { unconfirmed = true; continue }
                confirmed.append(difference)
                if entry.repaired.insert(mark).inserted {
                    if difference.here != nil, let name = difference.recordName { toRepair[difference.zone, default: []].append(name) }
                } else {
                    persisting.append(difference)
                }
            }
            entry.suspects = found
            // Bounded: differences repaired long ago need not be remembered for ever.
            if entry.repaired.count > 10_000 { entry.repaired = [] }
            state.sessions.verifications[peer] = entry
            updatePeer(&state, peer) { status in
                var verified = Dictionary(uniqueKeysWithValues: (status.verified ?? []).map { ($0.zone, $0) })
                let byZone = Dictionary(grouping: outcome.differences, by: \.zone)
                for zone in outcome.zones {
                    let name = zone.description
                    let count = byZone[zone]?.count ?? 0
                    verified[name] = NodeStatus.ZoneVerification(zone: name, inSyncAt: count == 0 ? now : verified[name]?.inSyncAt, differences: count)
                }
                status.verified = verified.values.sorted { $0.zone < $1.zone }
                if !confirmed.isEmpty {
                    let names = confirmed.prefix(5).map { "\($0.zone.zoneID.zoneName)/\($0.recordName ?? "(zone)")" }.joined(separator: ", ")
                    status.lastMismatch = "at \(ISO8601DateFormatter().string(from: Date())), \(confirmed.count) record(s) held differently after a completed sync (\(names)\(confirmed.count > 5 ? ", …" : "")): "
                        + (persisting.isEmpty ? "this side's states were sent again" : "\(persisting.count) still differ after a repair")
                }
            }
        }
        publishStatus()
        if unconfirmed { verifySoon(peer, after: .seconds(1)) }
        guard !confirmed.isEmpty else { return }
        let sample = confirmed.prefix(10).map { "\($0.zone)/\($0.recordName ?? "(zone state)")" }.joined(separator: ", ")
        logger.error("digests differ after a sync both sides said was complete: this is a bug in Lattice, please report it with this line; sending this side's states of the records again", metadata: [
            "peer": "\(peer)", "differences": "\(confirmed.count)", "records": "\(sample)", "persisting": "\(persisting.count)",
        ])
        for (zone, names) in toRepair {
            // Batches of a few hundred records: each stays under the receiver's batch limit.
            for start in stride(from: 0, to: names.count, by: 256) { handle.repair(zone: zone, names: Array(names[start..<min(start + 256, names.count)])) }
        }
    }
}
