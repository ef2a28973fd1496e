import Foundation
import GRDB
import LatticeCore
import LatticeCrypto

extension StoreSnapshot {
    /// A block of `replica` in `key`: the first whose `last` is at or after
    /// `time`, or with nil the latest.
    public func writeBlock(of replica: ReplicaID, in key: ZoneKey, covering time: HLCTimestamp?) throws -> WriteBlock? {
        let columns = "last, entry_count, entries_hash, signature, public_key, entries"
        let zone = "scope = ? AND zone_name = ? AND owner_name = ? AND replica = ?"
        var arguments: StatementArguments = [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Data(replica.bytes)]
        let row: Row?
        if let time {
            arguments += [Int64(bitPattern: time.rawValue)]
            row = try Row.fetchOne(db, sql: "SELECT \(columns) FROM write_blocks WHERE \(zone) AND last >= ? ORDER BY last LIMIT 1", arguments: arguments)
        } else {
            row = try Row.fetchOne(db, sql: "SELECT \(columns) FROM write_blocks WHERE \(zone) ORDER BY last DESC LIMIT 1", arguments: arguments)
        }
        guard let row else { return nil }
        let entries = try (row[5] as Data?).map { try WriteBlockEntries.decode([UInt8]($0)) }
        return WriteBlock(
            zone: key, publicKey: [UInt8](row[4] as Data), replica: replica, last: HLCTimestamp(rawValue: UInt64(bitPattern: row[0])),
            count: row[1], entriesHash: [UInt8](row[2] as Data), signature: [UInt8](row[3] as Data), entries: entries)
    }

    /// What a change set to a peer at `base` carries to prove its writes.
    func proofCollector(for key: ZoneKey, base: VersionVector) -> ProofCollector {
        ProofCollector(base: base) { [self] replica, time in try writeBlock(of: replica, in: key, covering: time) }
    }
}

extension StoreTransaction {
    public func storeWriteBlock(_ block: WriteBlock) throws {
        if let stored = try writeBlock(of: block.replica, in: block.zone, covering: block.last), stored.last == block.last {
            guard stored.isHead, !block.isHead else { return }
        }
        try db.execute(sql: """
            INSERT OR REPLACE INTO write_blocks (scope, zone_name, owner_name, replica, last, entry_count, entries_hash, signature, public_key, entries)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [
                Int64(block.zone.scope.rawValue), block.zone.zoneID.zoneName, block.zone.zoneID.ownerName, Data(block.replica.bytes),
                Int64(bitPattern: block.last.rawValue), block.count, Data(block.entriesHash), Data(block.signature), Data(block.publicKey),
                block.entries.map { Data(WriteBlockEntries.encode($0)) },
            ])
        markChanged()
    }
}

/// A block's entries as the store keeps them: times as deltas, then digests.
enum WriteBlockEntries {
    static func encode(_ entries: [WriteBlock.Entry]) -> [UInt8] {
        var writer = BinaryWriter(capacity: entries.count * 36 + 4)
        writer.varint(entries.count)
        var previous: UInt64 = 0
        for entry in entries {
            writer.varint(entry.time.rawValue - previous)
            previous = entry.time.rawValue
            writer.raw(entry.digest)
        }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> [WriteBlock.Entry] {
        var reader = BinaryReader(bytes)
        var entries: [WriteBlock.Entry] = []
        var previous: UInt64 = 0
        for _ in 0..<(try reader.count(below: WriteBlock.maximumEntries + 1, "block entries")) {
            previous += try reader.varint()
            entries.append(WriteBlock.Entry(time: HLCTimestamp(rawValue: previous), digest: Array(try reader.raw(WriteDigest.length))))
        }
        return entries
    }
}

// MARK: A store restored from an older copy

extension StoreSnapshot {
    private static func gapKey(_ key: ZoneKey) -> String { "own_gap.\(key.scope.rawValue).\(key.zoneID.ownerName).\(key.zoneID.zoneName)" }

    /// Whether `head`, a peer's entry for this replica in `key`'s vector, is a
    /// head this store signed and still holds. Every such entry is one of its
    /// blocks' `last`; one it lacks means the store lost writes of its own
    /// (restored from an older copy while its peers kept them).
    public func holdsOwnHead(_ head: HLCTimestamp, in key: ZoneKey) throws -> Bool {
        guard head > .zero else { return true }
        return try writeBlock(of: store.replica, in: key, covering: head)?.last == head
    }

    /// The head of its own a peer holds and this store lost, if one was seen.
    public func ownGap(in key: ZoneKey) throws -> HLCTimestamp? {
        try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Self.gapKey(key)]).map { HLCTimestamp(rawValue: UInt64(bitPattern: $0)) }
    }

    /// The vector to tell peers for `key`: with a gap, this replica's own
    /// entry goes back to the last head it holds below the gap, so peers send
    /// its lost writes back.
    public func vectorToTell(_ sync: ZoneSyncState, in key: ZoneKey) throws -> VersionVector {
        guard let gap = try ownGap(in: key) else { return sync.vector }
        let floor = try HLCTimestamp(rawValue: UInt64(bitPattern: Int64.fetchOne(db, sql: """
            SELECT last FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ? AND replica = ? AND last < ? ORDER BY last DESC LIMIT 1
            """, arguments: [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Data(store.replica.bytes), Int64(bitPattern: gap.rawValue)]) ?? 0))
        return VersionVector(sync.vector.entries.map { entry in (entry.replica, entry.replica == store.replica ? min(entry.time, floor) : entry.time) })
    }
}

extension StoreTransaction {
    /// Remembers that a peer holds `head`, a head of this store's own it lacks.
    public func noteOwnGap(_ head: HLCTimestamp, in key: ZoneKey) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", arguments: ["own_gap.\(key.scope.rawValue).\(key.zoneID.ownerName).\(key.zoneID.zoneName)", Int64(bitPattern: head.rawValue)])
        markChanged()
    }

    /// Forgets the gap once the store holds its head again. Returns whether it closed one.
    @discardableResult
    public func closeOwnGapIfFilled(in key: ZoneKey) throws -> Bool {
        guard let gap = try ownGap(in: key), try holdsOwnHead(gap, in: key) else { return false }
        try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: ["own_gap.\(key.scope.rawValue).\(key.zoneID.ownerName).\(key.zoneID.zoneName)"])
        markChanged()
        return true
    }
}
