import Foundation
import GRDB
@_spi(Tools) import LatticeCore

extension ZoneKey {
    /// The zone as a line of a zone-list setting (`assets.eagerZones`, `sync.excludedZones`).
    package var settingLine: String { "\(scope.rawValue)\t\(zoneID.zoneName)\t\(zoneID.ownerName)" }

    package init?(settingLine line: String) {
        let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = UInt8(parts[0]), let scope = DatabaseScope(rawValue: raw) else { return nil }
        self.init(scope: scope, zoneID: ZoneID(zoneName: String(parts[1]), ownerName: String(parts[2])))
    }
}

/// Selective sync: the zones this device chose not to replicate. It keeps
/// none of their records, blocks or history, is sent none (it says so in its
/// hello) and takes none.
extension StoreSnapshot {
    package static let excludedZonesSetting = "sync.excludedZones"
    /// With it, the private zones replicated are those it lists, and no other.
    package static let onlyZonesSetting = "sync.onlyZones"

    /// The zones this device does not replicate.
    package func excludedZones() throws -> Set<ZoneKey> {
        guard let text = try setting(Self.excludedZonesSetting) else { return [] }
        return Set(text.split(separator: "\n").compactMap { ZoneKey(settingLine: String($0)) })
    }

    /// The private zones this device replicates alone, if it chose a list (`ModelConfiguration.replicatedZones`).
    package func onlyZones() throws -> Set<ZoneKey>? {
        guard let text = try setting(Self.onlyZonesSetting) else { return nil }
        return Set(text.split(separator: "\n").compactMap { ZoneKey(settingLine: String($0)) })
    }

    package func isExcluded(_ zone: ZoneKey) throws -> Bool {
        // The default zone is always replicated, as CloudKit's cannot be deleted.
        if zone.zoneID.isDefault { return false }
        if zone.scope == .private, let only = try onlyZones(), !only.contains(zone) { return true }
        guard let text = try setting(Self.excludedZonesSetting) else { return false }
        return text.split(separator: "\n").contains { $0 == zone.settingLine }
    }

    /// The zones each peer said it does not replicate, by peer device ID.
    package func peerExclusions() throws -> [String: Set<ZoneKey>] {
        var exclusions: [String: Set<ZoneKey>] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT peer, scope, zone_name, owner_name FROM peer_exclusions")) {
            guard let scope = DatabaseScope(rawValue: UInt8(truncatingIfNeeded: row[1] as Int)) else { continue }
            exclusions[row[0], default: []].insert(ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[2], ownerName: row[3])))
        }
        return exclusions
    }
}

extension StoreTransaction {
    package func replicates(_ zone: ZoneKey) throws -> Bool { try !isExcluded(zone) }

    /// Turns a zone's replication off (dropping all it holds of the zone
    /// here: records, tombstones, blocks, digests, history) or back on (the
    /// zone is then absent, so peers send it whole, as to a new device).
    /// Returns the hashes of assets no zone references any more.
    package func setReplicated(_ zone: ZoneKey, _ replicated: Bool) throws -> [[UInt8]] {
        var zones = try excludedZones()
        if replicated { zones.remove(zone) } else { zones.insert(zone) }
        try setSetting(Self.excludedZonesSetting, to: zones.map(\.settingLine).sorted().joined(separator: "\n"), wakingNodes: true)
        if replicated, zone.scope == .private, var only = try onlyZones(), !only.contains(zone) {
            only.insert(zone)
            try setSetting(Self.onlyZonesSetting, to: only.map(\.settingLine).sorted().joined(separator: "\n"), wakingNodes: true)
        }
        guard !replicated else { return [] }
        return try drop(zone)
    }

    /// Makes `zones` the private zones replicated here, and no other (nil:
    /// every zone not turned off one by one); drops what it holds of the others.
    package func setOnlyZones(_ zones: Set<ZoneKey>?) throws -> [[UInt8]] {
        guard try onlyZones() != zones else { return [] }
        if let zones {
            try setSetting(Self.onlyZonesSetting, to: zones.map(\.settingLine).sorted().joined(separator: "\n"), wakingNodes: true)
        } else {
            try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: ["setting." + Self.onlyZonesSetting])
            wakesWatchers = true
            markChanged()
        }
        var orphaned: [[UInt8]] = []
        for zone in try self.zones(in: .private).map(\.key) where try isExcluded(zone) { orphaned += try drop(zone) }
        return orphaned
    }

    /// Drops all this device holds of a zone it stops replicating; returns the assets no zone references any more.
    private func drop(_ zone: ZoneKey) throws -> [[UInt8]] {
        guard let row = try zoneRow(zone) else { return [] }
        try removeAllRecords(in: zone, by: nil)
        var orphaned: [[UInt8]] = []
        for hash in try Data.fetchAll(db.cachedStatement(sql: "SELECT hash FROM asset_orphans WHERE zone = ?"), arguments: [row.id]) {
            if try collectOrphanedAsset([UInt8](hash)) { orphaned.append([UInt8](hash)) }
        }
        for table in ["peer_holds", "digest_dirty", "history", "asset_refs", "asset_orphans"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE zone = ?", arguments: [row.id])
        }
        try db.execute(sql: "DELETE FROM write_blocks WHERE scope = ? AND zone_name = ? AND owner_name = ?",
                       arguments: [Int(zone.scope.rawValue), zone.zoneID.zoneName, zone.zoneID.ownerName])
        try forgetZone(row.id, key: zone)
        return orphaned
    }

    /// Notes the zones a peer said (in its hello) it does not replicate.
    package func setPeerExclusions(_ zones: Set<ZoneKey>, of peer: String) throws {
        guard try peerExclusions()[peer] ?? [] != zones else { return }
        try db.execute(sql: "DELETE FROM peer_exclusions WHERE peer = ?", arguments: [peer])
        for zone in zones {
            try db.execute(sql: "INSERT OR IGNORE INTO peer_exclusions (peer, scope, zone_name, owner_name) VALUES (?, ?, ?, ?)",
                           arguments: [peer, Int(zone.scope.rawValue), zone.zoneID.zoneName, zone.zoneID.ownerName])
            // Its acknowledgements of the zone are stale: it holds nothing there.
            if let row = try zoneRow(zone) { try db.execute(sql: "DELETE FROM peer_holds WHERE peer = ? AND zone = ?", arguments: [peer, row.id]) }
        }
        markChanged()
    }
}
