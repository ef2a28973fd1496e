import Foundation
import GRDB
@_spi(Tools) import LatticeCore

extension StoreSnapshot {
    package func forEachRecord(in key: ZoneKey, _ body: (RecordState) throws -> Void) throws {
        guard let zone = try zoneRow(key)?.id else { return }
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ?"), arguments: [zone])
        while let row = try rows.next() { try body(try decode(row[0])) }
    }

    static func keptBlocksKey(_ key: ZoneKey) -> String { zoneMetaKey("blocks_kept", key) }

    /// The zone's write blocks, and how many its last collection kept.
    func blockCounts(in key: ZoneKey) throws -> (now: Int, kept: Int) {
        let scope = [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName] as StatementArguments
        let now = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ?"), arguments: scope) ?? 0
        let kept = try Int.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [Self.keptBlocksKey(key)]) ?? 0
        return (now, kept)
    }

}

extension RecordStore {
    /// Blocks a zone may gain beyond twice those kept before `collectWriteBlocks(ifGrown:)` collects again.
    static let blocksGrowthAllowance = 32

    /// Collects the zone's write blocks that prove no write it shows
    /// (`ReplicaStorage.collectWriteBlocks` says which and why), without
    /// holding the write lock while it reads the zone: the records are read
    /// on a snapshot, and a short write then drops the blocks found, after
    /// checking them against the records changed since (a block a record
    /// shows again stays) and against a block replaced meanwhile. With
    /// `ifGrown`, only once the zone's blocks doubled since the last
    /// collection (plus 32): the reading spreads over the writes that made them.
    @discardableResult
    package func collectWriteBlocks(in key: ZoneKey, ifGrown: Bool = false) throws -> Int {
        let found = try read { snapshot -> (sequence: UInt64, candidates: [WriteBlock])? in
            let counts = try snapshot.blockCounts(in: key)
            if ifGrown, counts.now <= 2 * counts.kept + Self.blocksGrowthAllowance { return nil }
            guard let sync = try snapshot.syncState(of: key) else { return nil }
            let shown = try WriteBlockCollection.shownStamps(zoneState: sync.zoneState, residueDeletions: try snapshot.residueDeletions(in: key)) { body in
                try snapshot.forEachRecord(in: key, body)
            }
            let candidates = try snapshot.blockWriters(in: key).flatMap { writer in
                WriteBlockCollection.collectable(try snapshot.writeBlocks(of: writer, in: key, endingIn: WriteBlockCollection.anyEnd), shown: shown[writer] ?? [])
            }
            return (try snapshot.sequence(), candidates)
        }
        guard let found else { return 0 }
        return try write { transaction in
            // What changed since the snapshot may show some of those writes again: only those records are read.
            // Tombstones collected since left residues whose deletes stay proven.
            let shownSince = try WriteBlockCollection.shownStamps(
                zoneState: try transaction.syncState(of: key)?.zoneState, residueDeletions: try transaction.residueDeletions(in: key)
            ) { body in
                for (state, _) in try transaction.records(changedAfter: found.sequence, in: key) { try body(state) }
            }
            var dropped = 0
            var ownThrough: HLCTimestamp?
            for block in found.candidates where !WriteBlockCollection.proves(block, anyOf: shownSince[block.replica] ?? []) {
                // Still the block read (a peer may have sent another version with the same end).
                guard let current = try transaction.writeBlocks(of: block.replica, in: key, endingIn: block.last...block.last, entries: false).first,
                      current.entriesHash == block.entriesHash else { continue }
                try transaction.removeWriteBlock(block)
                dropped += 1
                if block.replica == replica { ownThrough = max(ownThrough ?? .zero, block.last) }
            }
            if let ownThrough { try transaction.noteOwnBlocksCollected(through: ownThrough, in: key) }
            try transaction.db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
                .execute(arguments: [StoreSnapshot.keptBlocksKey(key), try transaction.blockCounts(in: key).now])
            transaction.markChanged()
            return dropped
        }
    }
}
