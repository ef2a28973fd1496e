import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// A device this store has heard of.
package struct PeerRow: Hashable, Sendable {
    package var deviceID: String
    package var name: String?
    /// Whether it may sync: a member of the account, or trusted by hand, and not removed from the account.
    package var trusted: Bool
    /// A member of this store's account (its roster).
    package var member = false
    /// Trusted by hand here (`lattice trust`), outside the roster.
    package var trustedByHand = false
    /// Removed from the account: refused whatever else says.
    package var removed = false
    package var address: String?
    /// Milliseconds since 1970.
    package var lastSeen: UInt64?
    /// Batches refused because their writes were not what their writers signed.
    package var refusedWrites: Int = 0
    /// Why the last one was.
    package var lastRefusedWrite: String?

    package init(deviceID: String, name: String? = nil, trusted: Bool = false, address: String? = nil, lastSeen: UInt64? = nil) {
        self.deviceID = deviceID
        self.name = name
        self.trusted = trusted
        self.address = address
        self.lastSeen = lastSeen
    }
}

extension StoreSnapshot {
    package func peers() throws -> [PeerRow] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(Self.peerColumns) FROM peers ORDER BY (trusted OR member) AND NOT removed DESC, name, device_id")).map(Self.peer)
    }

    package func peer(_ deviceID: String) throws -> PeerRow? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.peerColumns) FROM peers WHERE device_id = ?"), arguments: [deviceID]).map(Self.peer)
    }

    private static let peerColumns = "device_id, name, (trusted OR member) AND NOT removed, address, last_seen, refused_writes, last_refused_write, member, trusted, removed"

    private static func peer(_ row: Row) -> PeerRow {
        var peer = PeerRow(deviceID: row[0], name: row[1], trusted: (row[2] as Int64) != 0, address: row[3], lastSeen: (row[4] as Int64?).map { UInt64(max(0, $0)) })
        peer.refusedWrites = row[5]
        peer.lastRefusedWrite = row[6]
        peer.member = (row[7] as Int64) != 0
        peer.trustedByHand = (row[8] as Int64) != 0
        peer.removed = (row[9] as Int64) != 0
        return peer
    }

    /// How far `peer`'s stream of each zone was applied here.
    package func resumePoints(of peer: String) throws -> [ZoneKey: ChangeCursor] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT z.scope, z.name, z.owner, r.change_seq, r.row FROM resume_points r JOIN zones z ON z.id = r.zone WHERE r.peer = ?
            """), arguments: [peer])
        var points: [ZoneKey: ChangeCursor] = [:]
        for row in rows {
            guard let scope = DatabaseScope(rawValue: UInt8(truncatingIfNeeded: row[0] as Int64)) else { continue }
            let key = ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[1], ownerName: row[2]))
            points[key] = ChangeCursor(sequence: UInt64(max(0, row[3] as Int64)), row: UInt64(max(0, row[4] as Int64)))
        }
        return points
    }
}

extension StoreTransaction {
    /// Untrusted, unnamed devices remembered as seen.
    package static let maximumStrangers = 100

    /// Records how far `peer`'s stream of `key` is applied, in this transaction,
    /// so it commits with the batch. Commits even when the batch changed nothing.
    package func setResumePoint(_ cursor: ChangeCursor, of peer: String, for key: ZoneKey) throws {
        guard let zone = try zoneRow(key) else { return }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO resume_points (peer, zone, change_seq, row) VALUES (?, ?, ?, ?)").execute(arguments: [
            peer, zone.id, Int64(clamping: cursor.sequence), Int64(clamping: cursor.row),
        ])
        markChanged()
    }

    /// Trusts `deviceID` (with a name if given), or records it as seen.
    package func upsertPeer(_ deviceID: String, name: String?, trusted: Bool?, address: String? = nil, lastSeen: UInt64? = nil) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO peers (device_id) VALUES (?)").execute(arguments: [deviceID])
        if db.changesCount > 0, trusted != true {
            // Anyone can make new identities: keep only the most recently seen strangers.
            try db.cachedStatement(sql: """
                DELETE FROM peers WHERE trusted = 0 AND member = 0 AND removed = 0 AND name IS NULL AND device_id != ? AND device_id NOT IN (
                    SELECT device_id FROM peers WHERE trusted = 0 AND member = 0 AND removed = 0 AND name IS NULL ORDER BY last_seen DESC LIMIT ?)
                """).execute(arguments: [deviceID, Self.maximumStrangers - 1])
        }
        // A nil argument keeps the column as it is.
        try db.cachedStatement(sql: """
            UPDATE peers SET name = COALESCE(?, name), trusted = COALESCE(?, trusted), address = COALESCE(?, address),
                last_seen = COALESCE(?, last_seen) WHERE device_id = ?
            """).execute(arguments: [name, trusted.map { $0 ? 1 : 0 }, address, lastSeen.map { Int64(clamping: $0) }, deviceID])
        // A running node re-reads trust on a wake-up.
        if trusted != nil { wakesWatchers = true }
        markChanged()
    }

    /// Counts a batch of `deviceID` refused because its writes were not what their writers signed.
    /// Devices outside the account with refused writes noted here, at most.
    package static let maximumRefusingStrangers = 256

    /// With `outsideAccount`, a device of another account (a share's
    /// participant): a row is made for it only while fewer than
    /// `maximumRefusingStrangers` such rows exist (an account can make devices at will).
    package func noteRefusedWrites(of deviceID: String, reason: String, outsideAccount: Bool = false) throws {
        if outsideAccount, try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM peers WHERE device_id = ?"), arguments: [deviceID]) != true {
            let refusing = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM peers WHERE trusted = 0 AND refused_writes > 0")) ?? 0
            guard refusing < Self.maximumRefusingStrangers else { return }
        }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO peers (device_id) VALUES (?)").execute(arguments: [deviceID])
        try db.cachedStatement(sql: "UPDATE peers SET refused_writes = refused_writes + 1, last_refused_write = ? WHERE device_id = ?").execute(arguments: [reason, deviceID])
        markChanged()
    }

    /// Forgets the trust in `deviceID`; its resume points go too. Returns whether it was known.
    @discardableResult
    package func untrustPeer(_ deviceID: String) throws -> Bool {
        try db.cachedStatement(sql: "UPDATE peers SET trusted = 0 WHERE device_id = ?").execute(arguments: [deviceID])
        let known = db.changesCount > 0
        try db.cachedStatement(sql: "DELETE FROM resume_points WHERE peer = ?").execute(arguments: [deviceID])
        markChanged()
        wakesWatchers = true
        return known
    }
}
