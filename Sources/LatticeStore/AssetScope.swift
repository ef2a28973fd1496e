import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// Where an asset's content may be served: the public database, the private
/// one, or one shared zone. Content is content-addressed and unkeyed, so
/// anyone who knows (or guesses) a file's bytes can write a record naming
/// its hash; a store serves the content only in the scopes where it was
/// vouched for — referenced by a write of this device, or referenced where
/// it came from — never on the strength of a reference alone.
enum AssetScope {
    /// The scope's key as `asset_scopes` holds it.
    static func key(of zone: ZoneKey) -> String {
        switch zone.scope {
        case .private: return "private"
        case .public: return "public"
        case .shared: return "shared/\(zone.zoneID.ownerName)/\(zone.zoneID.zoneName)"
        }
    }

    static func grant(_ hash: [UInt8], _ zone: ZoneKey, in db: GRDB.Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO asset_scopes (hash, scope) VALUES (?, ?)").execute(arguments: [Data(hash), key(of: zone)])
    }

    /// Grants content that arrived (fetched, or from a bundle) the scopes of
    /// the zones that reference it here: its private and shared ones alone
    /// when it has any, the public database only when nothing else references
    /// it (a stranger's public reference to a private file's hash must not
    /// open that file to the LAN).
    static func grantFromReferences(_ hash: [UInt8], in db: GRDB.Database) throws {
        let zones = try zonesReferencing(hash, in: db)
        let kept = zones.filter { $0.scope != .public }
        for zone in kept.isEmpty ? zones : kept { try grant(hash, zone, in: db) }
    }

    /// The zones whose live records reference the asset `hash`.
    static func zonesReferencing(_ hash: [UInt8], in db: GRDB.Database) throws -> [ZoneKey] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT z.scope, z.name, z.owner FROM asset_refs r JOIN zones z ON z.id = r.zone WHERE r.hash = ?
            """), arguments: [Data(hash)]).compactMap { row in
            DatabaseScope(rawValue: row[0]).map { ZoneKey(scope: $0, zoneID: ZoneID(zoneName: row[1], ownerName: row[2])) }
        }
    }

    static func isGranted(_ hash: [UInt8], _ zone: ZoneKey, in db: GRDB.Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM asset_scopes WHERE hash = ? AND scope = ?"), arguments: [Data(hash), key(of: zone)]) ?? false
    }
}

extension StoreSnapshot {
    /// Whether this store serves the asset's content to a peer reading `zone`
    /// (`AssetScope`): the content is here and was vouched for in its scope.
    package func servesAsset(_ hash: [UInt8], in zone: ZoneKey) throws -> Bool {
        try hasAsset(hash) && AssetScope.isGranted(hash, zone, in: db)
    }
}
