import LatticeCore

/// A device back after the tombstone horizon: the records whose tombstones
/// were collected while it was away reach it as `collected` messages.
extension SyncSession {
    /// Sends `records` of a private zone to an account device, in messages of
    /// at most `SyncMessage.maximumCollectedRecords`.
    public mutating func sendCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord]) -> [Action] {
        guard !closed, peerHello != nil, access.isAccount, zone.scope == .private, !records.isEmpty else { return [] }
        return stride(from: 0, to: records.count, by: SyncMessage.maximumCollectedRecords).map { start in
            .send(.collected(zone: zone, zoneIncarnation: zoneIncarnation, records: Array(records[start..<min(records.count, start + SyncMessage.maximumCollectedRecords)])))
        }
    }

    mutating func receiveCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord]) -> [Action] {
        // It deletes records here: the account's devices only, and only in zones the account's alone.
        guard access.isAccount else { return close(.forbidden("only a device of this account may say which records it collected (\(access))")) }
        guard zone.scope == .private, access.allows(zone) else { return close(.forbidden("the peer says it collected records of zone \(zone), which only a private zone's devices may")) }
        return [.applyCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records)]
    }
}
