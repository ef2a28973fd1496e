import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

extension StoreSnapshot {
    private static let blockColumns = "last, entry_count, entries_hash, signature, public_key, entries"
    private static let headColumns = "last, entry_count, entries_hash, signature, public_key, NULL"
    private static let blockZone = "scope = ? AND zone_name = ? AND owner_name = ? AND replica = ?"

    private func blockArguments(_ replica: ReplicaID, _ key: ZoneKey) -> StatementArguments {
        [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Data(replica.bytes)]
    }

    private func block(_ row: Row, replica: ReplicaID, zone key: ZoneKey) throws -> WriteBlock {
        let entries = try (row[5] as Data?).map { try WriteBlockEntries.decode([UInt8]($0)) }
        return WriteBlock(
            zone: key, publicKey: [UInt8](row[4] as Data), replica: replica, last: HLCTimestamp(rawValue: UInt64(bitPattern: row[0])),
            count: row[1], entriesHash: [UInt8](row[2] as Data), signature: [UInt8](row[3] as Data), entries: entries)
    }

    /// A block of `replica` in `key`: the first whose `last` is at or after
    /// `time` and that holds a write at `time` (else the first at or after
    /// it), or with nil the latest.
    package func writeBlock(of replica: ReplicaID, in key: ZoneKey, covering time: HLCTimestamp?) throws -> WriteBlock? {
        guard let time else {
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.blockColumns) FROM write_blocks WHERE \(Self.blockZone) ORDER BY last DESC LIMIT 1"), arguments: blockArguments(replica, key))
            return try row.map { try block($0, replica: replica, zone: key) }
        }
        // Versions of a block a restored store signed again can overlap: a few are looked at.
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.blockColumns) FROM write_blocks WHERE \(Self.blockZone) AND last >= ? ORDER BY last LIMIT 8"),
                                    arguments: blockArguments(replica, key) + [Int64(bitPattern: time.rawValue)])
        // Decoded one at a time: the first almost always holds the write.
        var first: WriteBlock?
        for row in rows {
            let candidate = try block(row, replica: replica, zone: key)
            if candidate.digest(at: time) != nil { return candidate }
            if first == nil { first = candidate }
        }
        return first
    }

    package func writeBlock(of replica: ReplicaID, in key: ZoneKey, endingBefore time: HLCTimestamp) throws -> WriteBlock? {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.blockColumns) FROM write_blocks WHERE \(Self.blockZone) AND last < ? ORDER BY last DESC LIMIT 1"),
                                   arguments: blockArguments(replica, key) + [Int64(bitPattern: time.rawValue)])
        return try row.map { try block($0, replica: replica, zone: key) }
    }

    package func writeBlocks(of replica: ReplicaID, in key: ZoneKey, endingIn range: ClosedRange<HLCTimestamp>, entries: Bool = true) throws -> [WriteBlock] {
        let sql = entries
            ? "SELECT \(Self.blockColumns) FROM write_blocks WHERE \(Self.blockZone) AND last >= ? AND last <= ? ORDER BY last"
            : "SELECT \(Self.headColumns) FROM write_blocks WHERE \(Self.blockZone) AND last >= ? AND last <= ? ORDER BY last"
        return try Row.fetchAll(db.cachedStatement(sql: sql),
                         arguments: blockArguments(replica, key) + [Int64(bitPattern: range.lowerBound.rawValue), Int64(bitPattern: min(range.upperBound.rawValue, UInt64(Int64.max)))])
            .map { try block($0, replica: replica, zone: key) }
    }

    /// The replicas with blocks in `key`.
    package func blockWriters(in key: ZoneKey) throws -> [ReplicaID] {
        try Data.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT replica FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ?"),
                          arguments: [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName])
            .map { ReplicaID(bytes: [UInt8]($0)) }
    }

    /// What a change set to a peer at `base` carries to prove its writes.
    func proofCollector(for key: ZoneKey, base: VersionVector) -> ProofCollector {
        ProofCollector(base: base) { [self] replica, time in try writeBlock(of: replica, in: key, covering: time) }
    }
}

extension StoreTransaction {
    private func blockKey(_ block: WriteBlock) -> StatementArguments {
        [Int64(block.zone.scope.rawValue), block.zone.zoneID.zoneName, block.zone.zoneID.ownerName, Data(block.replica.bytes), Int64(bitPattern: block.last.rawValue)]
    }

    package func insertWriteBlock(_ block: WriteBlock) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO write_blocks (scope, zone_name, owner_name, replica, last, entry_count, entries_hash, signature, public_key, entries)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: blockKey(block) + [
                block.count, Data(block.entriesHash), Data(block.signature), Data(block.publicKey), block.entries.map { Data(WriteBlockEntries.encode($0)) },
            ])
        markChanged()
    }

    package func noteOwnBlocksCollected(through last: HLCTimestamp, in key: ZoneKey) throws {
        guard last > (try ownBlocksCollectedThrough(in: key)) else { return }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").execute(arguments: [Self.collectedBlocksKey(key), Int64(bitPattern: last.rawValue)])
        markChanged()
    }

    package func removeWriteBlock(_ block: WriteBlock) throws {
        try db.cachedStatement(sql: "DELETE FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ? AND replica = ? AND last = ?").execute(arguments: blockKey(block))
        markChanged()
    }
}

// MARK: A store restored from an older copy

extension StoreSnapshot {
    /// A per-zone key of the `meta` table: `name.scope.owner.zone`.
    static func zoneMetaKey(_ name: String, _ key: ZoneKey) -> String { "\(name).\(key.scope.rawValue).\(key.zoneID.ownerName).\(key.zoneID.zoneName)" }
    static func gapKey(_ key: ZoneKey) -> String { zoneMetaKey("own_gap", key) }

    /// Whether `head`, a peer's entry for this replica in `key`'s vector, is a
    /// head this store signed and still holds. Every such entry is the last
    /// stamp of one of its commits, so an entry time of its blocks (or a
    /// block's `last`); one it lacks means the store lost writes of its own
    /// (restored from an older copy while its peers kept them).
    package func holdsOwnHead(_ head: HLCTimestamp, in key: ZoneKey) throws -> Bool {
        guard head > .zero else { return true }
        if let block = try writeBlock(of: store.replica, in: key, covering: head), block.last == head || block.digest(at: head) != nil { return true }
        // A head among the blocks collected was signed: they went because no write of them is shown any more.
        return head <= (try ownBlocksCollectedThrough(in: key))
    }

    static func collectedBlocksKey(_ key: ZoneKey) -> String { zoneMetaKey("own_blocks_collected", key) }

    /// The greatest `last` of this store's own blocks collected in `key` (`collectWriteBlocks`).
    func ownBlocksCollectedThrough(in key: ZoneKey) throws -> HLCTimestamp {
        HLCTimestamp(rawValue: UInt64(bitPattern: try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [Self.collectedBlocksKey(key)]) ?? 0))
    }

    /// The head of its own a peer holds and this store lost, if one was seen.
    package func ownGap(in key: ZoneKey) throws -> HLCTimestamp? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [Self.gapKey(key)]).map { HLCTimestamp(rawValue: UInt64(bitPattern: $0)) }
    }

    static func refetchKey(_ key: ZoneKey) -> String { zoneMetaKey("own_refetch", key) }

    package func ownRefetchNames(in key: ZoneKey) throws -> Set<String> { try ownRefetch(in: key)?.names ?? [] }

    /// Records this store dropped that held valid writes of its own, and the
    /// earliest of those writes (`noteOwnWritesToRefetch`).
    package func ownRefetch(in key: ZoneKey) throws -> (from: HLCTimestamp, names: Set<String>)? {
        guard let text = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [Self.refetchKey(key)]) else { return nil }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let raw = UInt64(lines.removeFirst()) else { return nil }
        return (HLCTimestamp(rawValue: raw), Set(lines))
    }

    /// The vector to tell peers for `key`: with a gap, this replica's own
    /// entry goes back to the last head it holds below the gap, so peers send
    /// its lost writes back; with records of its own to fetch again, below
    /// the earliest of their writes.
    package func vectorToTell(_ sync: ZoneSyncState, in key: ZoneKey) throws -> VersionVector {
        var told = try vectorToTellForGap(sync, in: key)
        if let refetch = try ownRefetch(in: key), refetch.from > .zero, told[store.replica] >= refetch.from {
            told = VersionVector(told.entries.map { ($0.replica, $0.replica == store.replica ? HLCTimestamp(rawValue: refetch.from.rawValue - 1) : $0.time) })
        }
        return told
    }

    private func vectorToTellForGap(_ sync: ZoneSyncState, in key: ZoneKey) throws -> VersionVector {
        guard let gap = try ownGap(in: key) else { return sync.vector }
        let floor = try HLCTimestamp(rawValue: UInt64(bitPattern: Int64.fetchOne(db.cachedStatement(sql: """
            SELECT last FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ? AND replica = ? AND last < ? ORDER BY last DESC LIMIT 1
            """), arguments: [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Data(store.replica.bytes), Int64(bitPattern: gap.rawValue)]) ?? 0))
        return VersionVector(sync.vector.entries.map { entry in (entry.replica, entry.replica == store.replica ? min(entry.time, floor) : entry.time) })
    }
}

extension StoreTransaction {
    package func noteOwnWritesToRefetch(_ names: Set<String>, from earliest: HLCTimestamp, in key: ZoneKey) throws {
        let held = try ownRefetch(in: key)
        let from = min(held?.from ?? earliest, earliest)
        try setOwnRefetch(from: from, names: names.union(held?.names ?? []), in: key)
    }

    package func noteRefetched(_ names: Set<String>, in key: ZoneKey) throws {
        guard let held = try ownRefetch(in: key), !held.names.isDisjoint(with: names) else { return }
        try setOwnRefetch(from: held.from, names: held.names.subtracting(names), in: key)
    }

    private func setOwnRefetch(from: HLCTimestamp, names: Set<String>, in key: ZoneKey) throws {
        guard !names.isEmpty else {
            try db.cachedStatement(sql: "DELETE FROM meta WHERE key = ?").execute(arguments: [Self.refetchKey(key)])
            markChanged()
            return
        }
        let text = ([String(from.rawValue)] + names.sorted()).joined(separator: "\n")
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").execute(arguments: [Self.refetchKey(key), text])
        markChanged()
    }

    /// Remembers that a peer holds `head`, a head of this store's own it lacks.
    package func noteOwnGap(_ head: HLCTimestamp, in key: ZoneKey) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").execute(arguments: [Self.gapKey(key), Int64(bitPattern: head.rawValue)])
        markChanged()
    }

    /// Forgets the gap once the store holds its head again. Returns whether it closed one.
    @discardableResult
    package func closeOwnGapIfFilled(in key: ZoneKey) throws -> Bool {
        guard let gap = try ownGap(in: key), try holdsOwnHead(gap, in: key) else { return false }
        try db.cachedStatement(sql: "DELETE FROM meta WHERE key = ?").execute(arguments: [Self.gapKey(key)])
        markChanged()
        return true
    }
}
