import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// An asset live records reference, and where this store stands with it.
public struct AssetEntry: Hashable, Sendable {
    /// The content's hash and size.
    public var asset: AssetReference
    /// Whether its content is in the store.
    public var isLocal: Bool
    /// Whether someone asked for it (`lattice asset fetch`) and it has not arrived.
    public var isWanted: Bool
    /// The records that reference it.
    public var records: [(zone: ZoneKey, name: String)]

    /// The same asset, state and records (records compared by zone and name).
    public static func == (lhs: AssetEntry, rhs: AssetEntry) -> Bool {
        lhs.asset == rhs.asset && lhs.isLocal == rhs.isLocal && lhs.isWanted == rhs.isWanted
            && lhs.records.map { "\($0.zone)/\($0.name)" } == rhs.records.map { "\($0.zone)/\($0.name)" }
    }

    /// Hashed by its asset alone.
    public func hash(into hasher: inout Hasher) { hasher.combine(asset) }

    /// The zones its records are in.
    public var zones: Set<ZoneKey> { Set(records.map(\.zone)) }
}

extension StoreSnapshot {
    /// Every asset live records reference (or only those whose content is
    /// not here), largest number of references first is not promised:
    /// ordered by hash.
    package func assetEntries(missingOnly: Bool = false, limit: Int = .max) throws -> [AssetEntry] {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT r.hash, r.size, z.scope, z.name, z.owner, r.source,
                   EXISTS (SELECT 1 FROM assets a WHERE a.hash = r.hash) AS local,
                   EXISTS (SELECT 1 FROM asset_wants w WHERE w.hash = r.hash) AS wanted
            FROM asset_refs r JOIN zones z ON z.id = r.zone
            \(missingOnly ? "WHERE NOT EXISTS (SELECT 1 FROM assets a WHERE a.hash = r.hash)" : "")
            ORDER BY r.hash, z.scope, z.name, z.owner, r.source
            """))
        var entries: [AssetEntry] = []
        while let row = try rows.next() {
            let asset = AssetReference(hash: [UInt8](row[0] as Data), size: row[1])
            guard let scope = DatabaseScope(rawValue: row[2]) else { continue }
            let zone = ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[3], ownerName: row[4]))
            if entries.last?.asset == asset {
                entries[entries.count - 1].records.append((zone, row[5]))
            } else {
                if entries.count == limit { break }
                entries.append(AssetEntry(asset: asset, isLocal: row[6], isWanted: row[7], records: [(zone, row[5])]))
            }
        }
        return entries
    }

    /// The zones whose live records reference the asset `hash`.
    package func zonesReferencing(asset hash: [UInt8]) throws -> [ZoneKey] {
        try AssetScope.zonesReferencing(hash, in: db)
    }

    /// Content here that no live record references, with the zone of its last
    /// reference and the vector a device must hold to have seen every reference go.
    package func orphanedAssets() throws -> [(asset: AssetReference, zone: ZoneKey, dropped: VersionVector)] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT o.hash, a.size, z.scope, z.name, z.owner, o.dropped FROM asset_orphans o
            JOIN assets a ON a.hash = o.hash JOIN zones z ON z.id = o.zone
            """)).compactMap { row in
            guard let scope = DatabaseScope(rawValue: row[2]) else { return nil }
            return (AssetReference(hash: [UInt8](row[0] as Data), size: row[1]), ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[3], ownerName: row[4])),
                    try RecordBlob.decodeVector([UInt8](row[5] as Data)))
        }
    }

    /// What each device said it holds of each zone, as last saved (`savePeerHolds`).
    package func peerHolds() throws -> [String: [ZoneKey: VersionVector]] {
        var holds: [String: [ZoneKey: VersionVector]] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: """
            SELECT h.peer, z.scope, z.name, z.owner, h.vector FROM peer_holds h JOIN zones z ON z.id = h.zone
            """)) {
            guard let scope = DatabaseScope(rawValue: row[1]) else { continue }
            holds[row[0], default: [:]][ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[2], ownerName: row[3]))] = try RecordBlob.decodeVector([UInt8](row[4] as Data))
        }
        return holds
    }

}

extension StoreTransaction {
    /// Saves what each device said it holds of each zone (zones not held here are skipped).
    package func savePeerHolds(_ holds: [String: [ZoneKey: VersionVector]]) throws {
        for (peer, zones) in holds {
            for (key, vector) in zones {
                guard let zone = try zoneRow(key) else { continue }
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO peer_holds (peer, zone, vector) VALUES (?, ?, ?)")
                    .execute(arguments: [peer, zone.id, Data(RecordBlob.encodeVector(vector))])
            }
        }
        markChanged()
    }

    /// Asks for an asset's content: a running node fetches it from a peer that holds it.
    package func wantAsset(_ asset: AssetReference, at time: UInt64) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO asset_wants (hash, size, asked_at) VALUES (?, ?, ?)")
            .execute(arguments: [Data(asset.hash), asset.size, Int64(time)])
        if db.changesCount > 0 {
            markChanged()
            wakesWatchers = true
        }
    }
}
