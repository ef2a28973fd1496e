import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

extension StoreSnapshot {
    /// The zone's collected tombstones' residues, by name.
    package func residues(in key: ZoneKey) throws -> [String: RecordResidue] {
        guard let zone = try zoneRow(key) else { return [:] }
        var residues: [String: RecordResidue] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, causal_length, vector, deletion FROM residues WHERE zone = ?"), arguments: [zone.id]) {
            residues[row[0]] = try Self.residue(row, from: 1)
        }
        return residues
    }

    /// A residue row's causal length, vector and deletion, from column `first` on.
    static func residue(_ row: Row, from first: Int) throws -> RecordResidue {
        let deletion = (row[first + 2] as Data?).map { [UInt8]($0) }
        return RecordResidue(
            causalLength: UInt64(row[first] as Int64), vector: try RecordBlob.decodeVector([UInt8](row[first + 1] as Data)),
            deletion: try deletion.map { try RecordBlob.decodeStamp($0) })
    }

    /// The signed blocks of the deletes `residues` name (each once): what
    /// proves them to a device back after the tombstone horizon.
    package func deletionBlocks(of residues: [RecordResidue], in key: ZoneKey) throws -> [WriteBlock] {
        var blocks: [WriteBlock] = []
        var seen = Set<WriteBlock.Key>()
        for deletion in residues.compactMap(\.deletion) {
            if blocks.contains(where: { $0.replica == deletion.replica && $0.digest(at: deletion.time) != nil }) { continue }
            guard let block = try writeBlock(of: deletion.replica, in: key, covering: deletion.time), block.entries != nil,
                  seen.insert(block.key).inserted else { continue }
            blocks.append(block)
        }
        return blocks
    }

    /// The stamps of the deletes the zone's residues stand for: their blocks stay (`collectWriteBlocks`).
    package func residueDeletions(in key: ZoneKey) throws -> [Stamp] {
        guard let zone = try zoneRow(key) else { return [] }
        return try Data.fetchAll(db.cachedStatement(sql: "SELECT deletion FROM residues WHERE zone = ? AND deletion IS NOT NULL"), arguments: [zone.id])
            .map { try RecordBlob.decodeStamp([UInt8]($0)) }
    }

    /// What is left of the record's collected tombstone, if it was collected.
    package func collectedResidue(of name: String, in key: ZoneKey) throws -> RecordResidue? {
        guard let zone = try zoneRow(key) else { return nil }
        return try collectedResidue(of: name, zoneID: zone.id)
    }

    func collectedResidue(of name: String, zoneID: Int64) throws -> RecordResidue? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT causal_length, vector, deletion FROM residues WHERE zone = ? AND name = ?"), arguments: [zoneID, name]) else { return nil }
        return try Self.residue(row, from: 0)
    }

    /// The join of the vectors of the tombstones the zone collected: a device
    /// whose vector covers it held every one of them.
    package func collectedThrough(in key: ZoneKey) throws -> VersionVector {
        guard let zone = try zoneRow(key),
              let data = try Data.fetchOne(db.cachedStatement(sql: "SELECT vector FROM collected_through WHERE zone = ?"), arguments: [zone.id]) else { return VersionVector() }
        return try RecordBlob.decodeVector([UInt8](data))
    }

    /// The zone's change sequence up to which deletions were collected: a
    /// change token of the zone from before it cannot list them any more.
    package func collectionHorizon(in key: ZoneKey) throws -> UInt64 {
        guard let zone = try zoneRow(key),
              let horizon = try Int64.fetchOne(db.cachedStatement(sql: "SELECT horizon FROM collected_through WHERE zone = ?"), arguments: [zone.id]) else { return 0 }
        return UInt64(horizon)
    }

    /// The residues of collected records a device at `vector` may still hold older states of.
    package func residues(in key: ZoneKey, notCoveredBy vector: VersionVector) throws -> [(name: String, residue: RecordResidue)] {
        try residues(in: key).filter { !vector.dominates($0.value.vector) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// How many tombstones the zone holds, and how many it collected.
    package func tombstoneCounts(in key: ZoneKey) throws -> (held: Int, collected: Int) {
        guard let zone = try zoneRow(key) else { return (0, 0) }
        let held = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM records WHERE zone = ? AND alive = 0"), arguments: [zone.id]) ?? 0
        let collected = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM residues WHERE zone = ?"), arguments: [zone.id]) ?? 0
        return (held, collected)
    }

    /// The vectors of the zone's tombstones, for telling what holds them back.
    package func tombstoneVectors(in key: ZoneKey) throws -> [VersionVector] {
        guard let zone = try zoneRow(key) else { return [] }
        return try Row.fetchAll(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND alive = 0"), arguments: [zone.id])
            .map { try decode($0[0] as Data).vector }
    }
}

extension RecordStore {
    /// Collects the zone's tombstones `acknowledged` covers (see
    /// `ReplicaStorage.collectTombstones`), in one transaction; returns their names.
    @discardableResult
    package func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] {
        try write { try $0.collectTombstones(in: zone, acknowledged: acknowledged) }
    }
}

extension StoreSnapshot {
    /// The devices that may hold this account's private zones, `own` aside:
    /// the account's members (met or not) and devices trusted by hand, not
    /// removed. Each must have acknowledged a change before what it makes
    /// obsolete (a tombstone, unreferenced content) may go.
    package func devicesHoldingPrivateZones(besides own: String) throws -> Set<String> {
        let members = try roster().state.members.keys.compactMap { try? DeviceID(publicKey: $0).description }
        let trusted = try peers().filter { $0.trusted && !$0.removed }.map(\.deviceID)
        return Set(members + trusted).subtracting([own])
    }
}
