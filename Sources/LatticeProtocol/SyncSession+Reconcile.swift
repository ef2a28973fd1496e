@_spi(Tools) import LatticeCore

/// Reconciliation inside a session: one round of each side's at a time, on
/// zones the peer may sync here. The session checks the traffic; the digests
/// and the `Reconciler` that reads them live outside it.
extension SyncSession {
    /// Sends a round of this side's reconciliation; its answer comes as the `reconcileReply` event.
    package mutating func beginReconcileRound(_ message: ReconcileMessage) -> [Action] {
        guard !closed, peerHello != nil, !awaitingReconcileReply else { return [] }
        awaitingReconcileReply = true
        return [.send(.reconcile(message))]
    }

    /// The store answered the peer's round (`answerReconcile`).
    package mutating func reconcileAnswered(_ reply: ReconcileMessage) -> [Action] {
        guard !closed, answeringReconcile else { return [] }
        answeringReconcile = false
        return [.send(.reconcileReply(reply))]
    }

    /// Sends the states of records the peer holds otherwise (a comparison
    /// found them; `SyncDelegate.repairBatch` made the batch), at the
    /// stream's cursor, as the window allows.
    package mutating func sendRepair(_ batch: OutgoingBatch, of zone: ZoneKey) -> [Action] {
        guard !closed, peerHello != nil, !batch.final, batch.claimedTop == nil, streams.allows(zone) else { return [] }
        repairs.append((zone, batch))
        sentCaughtUp = false
        return pump()
    }

    /// Whether this side waits for the answer to a round it sent.
    package var isReconciling: Bool { awaitingReconcileReply }

    mutating func receiveReconcile(_ message: ReconcileMessage) -> [Action] {
        guard !answeringReconcile else { return close(.unexpected("a reconciliation round before the last one was answered")) }
        // Each round can read a whole zone's digests: the account's devices only, not any stranger that connects.
        guard access.isAccount else { return close(.forbidden("only a device of this account may compare digests here (\(access))")) }
        if let zone = message.zones.first(where: { !access.allows($0.zone) }) {
            return close(.forbidden("the peer compares zone \(zone.zone), which it may not sync here (\(access))"))
        }
        answeringReconcile = true
        return [.answerReconcile(message)]
    }

    mutating func receiveReconcileReply(_ message: ReconcileMessage) -> [Action] {
        guard awaitingReconcileReply else { return close(.unexpected("a reconciliation answer nothing asked for")) }
        awaitingReconcileReply = false
        return [.event(.reconcileReply(message))]
    }
}
