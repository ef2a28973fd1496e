@_spi(Tools) import LatticeCore

/// A device back after the tombstone horizon: the records whose tombstones
/// were collected while it was away reach it as `collected` messages.
extension SyncSession {
    /// Sends `records` of a private zone to an account device, each with the
    /// block of `blocks` that signs its delete, in messages of at most
    /// `SyncMessage.maximumCollectedRecords` records and
    /// `maximumCollectedBlocks` blocks.
    package mutating func sendCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock] = []) -> [Action] {
        guard !closed, peerHello != nil, access.isAccount, zone.scope == .private, !records.isEmpty else { return [] }
        let byReplica = Dictionary(grouping: blocks.filter { $0.entries != nil }, by: \.replica)
        var messages: [SyncMessage] = []
        var part: [CollectedRecord] = []
        var partBlocks: [WriteBlock] = []
        var partKeys = Set<WriteBlock.Key>()
        var partBytes = 0
        func flush() {
            guard !part.isEmpty else { return }
            messages.append(.collected(zone: zone, zoneIncarnation: zoneIncarnation, records: part, blocks: partBlocks))
            part = []
            partBlocks = []
            partKeys = []
            partBytes = 0
        }
        for record in records {
            let proof = record.residue.deletion.flatMap { deletion in byReplica[deletion.replica]?.first { $0.digest(at: deletion.time) != nil } }
            let key = proof?.key
            let adds = key.map { !partKeys.contains($0) } ?? false
            // Upper bounds of what the record and its block add to the message: it stays under the frame.
            let recordBytes = record.name.utf8.count + 48 + record.residue.vector.entries.count * 26
            let blockBytes = 120 + (proof?.count ?? 0) * 42
            if part.count == SyncMessage.maximumCollectedRecords || (adds && partBlocks.count == SyncMessage.maximumCollectedBlocks)
                || partBytes + recordBytes + (adds ? blockBytes : 0) > SyncMessage.maximumCollectedBytes {
                flush()
            }
            partBytes += recordBytes
            if let proof, let key, partKeys.insert(key).inserted {
                partBlocks.append(proof)
                partBytes += blockBytes
            }
            part.append(record)
        }
        flush()
        return messages.map { .send($0) }
    }

    mutating func receiveCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock]) -> [Action] {
        // It deletes records here: the account's devices only, and only in zones the account's alone.
        guard access.isAccount else { return close(.forbidden("only a device of this account may say which records it collected (\(access))")) }
        guard zone.scope == .private, access.allows(zone) else { return close(.forbidden("the peer says it collected records of zone \(zone), which only a private zone's devices may")) }
        return [.applyCollected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks)]
    }
}
