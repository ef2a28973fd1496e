import Foundation
import GRDB
import LatticeCore

extension StoreTransaction {
    public func forEachRecord(in key: ZoneKey, _ body: (RecordState) throws -> Void) throws {
        guard let zone = try zoneRow(key)?.id else { return }
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ?"), arguments: [zone])
        while let row = try rows.next() { try body(try decode(row[0])) }
    }

    private static func keptBlocksKey(_ key: ZoneKey) -> String { "blocks_kept.\(key.scope.rawValue).\(key.zoneID.ownerName).\(key.zoneID.zoneName)" }

    /// Collects a zone's write blocks (`collectWriteBlocks`) once it holds
    /// twice the blocks the last collection kept (and a few more): each
    /// collection reads every record of the zone, so its cost spreads over
    /// as many writes as the zone holds blocks for, and a churning zone keeps
    /// at most about twice the blocks its present states need.
    func collectWriteBlocksIfGrown(in keys: [ZoneKey]) throws {
        for key in keys {
            let scope = [Int64(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName] as StatementArguments
            let count = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ?"), arguments: scope) ?? 0
            let kept = try Int.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [Self.keptBlocksKey(key)]) ?? 0
            guard count > 2 * kept + Self.blocksGrowthAllowance else { continue }
            let dropped = try collectWriteBlocks(in: key)
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").execute(arguments: [Self.keptBlocksKey(key), count - dropped])
        }
    }

    /// Blocks a zone may gain beyond twice those kept before it is collected again.
    static let blocksGrowthAllowance = 32
}
