import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// A share another account's device offered this account.
public struct ShareInvitation: Sendable, Hashable {
    /// The shared zone (its owner is the offering account).
    public var zone: ZoneID
    /// The device that offered it.
    public var offeredBy: String
    /// When it was last offered, in milliseconds since 1970.
    public var receivedAt: UInt64
}

extension StoreSnapshot {
    /// This store's account ID: its founder's device ID.
    package func accountID() throws -> String { try DeviceID(publicKey: try accountFounder()).description }

    /// The members of this store's account, by replica, with their memberships (read once per snapshot).
    func ownMembers() throws -> [ReplicaID: AccountMembership] {
        if let ownMembersCache { return ownMembersCache }
        let members = try store.ownMemberships(roster: try encodedRoster())
        ownMembersCache = members
        return members
    }

    /// The accounts `replica` belongs to, as far as this store knows: its own
    /// account for its members, and what memberships proved.
    package func accounts(of replica: ReplicaID) -> Set<String> {
        if let known = accountsCache[replica] { return known }
        do {
            var accounts = Set(try String.fetchAll(db.cachedStatement(sql: "SELECT account FROM memberships WHERE replica = ?"), arguments: [Data(replica.bytes)]))
            for membership in pendingMemberships[replica] ?? [] { accounts.insert(membership.accountID) }
            if let own = try ownMembers()[replica] { accounts.insert(own.accountID) }
            accountsCache[replica] = accounts
            return accounts
        } catch {
            // Not knowing refuses: the change set comes again.
            return []
        }
    }

    /// The memberships of `replicas` this store can prove: its own account's
    /// members from the roster, others' as they came.
    package func memberships(of replicas: [ReplicaID]) throws -> [AccountMembership] {
        let members = try ownMembers()
        var proofs: [AccountMembership] = []
        for replica in replicas {
            if let own = members[replica] { proofs.append(own) }
            for blob in try Data.fetchAll(db.cachedStatement(sql: "SELECT proof FROM memberships WHERE replica = ?"), arguments: [Data(replica.bytes)]) {
                if let proof = try? AccountMembership.decodingOnce([UInt8](blob)) { proofs.append(proof) }
            }
        }
        return proofs
    }

    /// Shares offered to this account (accepted ones with `accepted`), newest first.
    package func shareInvitations(accepted: Bool = false) throws -> [ShareInvitation] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT zone_name, owner, offered_by, received_at FROM share_invitations WHERE accepted = ? ORDER BY received_at DESC"), arguments: [accepted ? 1 : 0]).map { row in
            ShareInvitation(zone: ZoneID(zoneName: row[0], ownerName: row[1]), offeredBy: row[2], receivedAt: UInt64(row[3] as Int64))
        }
    }

    /// The share of a shared zone held here, or nil.
    package func share(of zone: ZoneKey) throws -> Share? {
        guard zone.scope == .shared else { return nil }
        return Share.held(try record(Share.recordName, in: zone), in: zone)
    }

    /// Every shared zone held here, with its share (nil until it arrives), and
    /// every accepted invitation whose zone is not held yet (nil share).
    package func sharedZones() throws -> [ZoneID: Share?] {
        var zones: [ZoneID: Share?] = [:]
        for zone in try self.zones(in: .shared) where zone.sync.zoneState.exists { zones[zone.key.zoneID] = .some(try share(of: zone.key)) }
        for invitation in try shareInvitations(accepted: true) where zones[invitation.zone] == nil { zones[invitation.zone] = .some(nil) }
        return zones
    }
}

extension StoreTransaction {
    /// Memberships one replica may hold: an account can list any device, so
    /// one device may show up in several; past this, later ones are not kept.
    package static let maximumAccountsPerReplica = 8

    /// Takes the memberships a shared zone's change set carried (each checked
    /// already) for this transaction's judgement of its writers; only those
    /// of writers whose changes it stores are kept (`keepMemberships`), so a
    /// change set listing made-up devices (a chain of no entries needs no
    /// signature) leaves nothing behind.
    package func takeMemberships(_ memberships: [AccountMembership]) throws {
        let own = try accountID()
        for membership in memberships {
            // This account's own members come from its roster, which knows removals too.
            guard membership.accountID != own else { continue }
            var pending = pendingMemberships[membership.replica] ?? []
            guard !pending.contains(membership), pending.count < Self.maximumAccountsPerReplica else { continue }
            pending.append(membership)
            pendingMemberships[membership.replica] = pending
            accountsCache[membership.replica] = nil
        }
    }

    /// Keeps the memberships taken for `writers` (those of a stored change),
    /// at most `maximumAccountsPerReplica` per replica.
    func keepMemberships(of writers: some Sequence<ReplicaID>) throws {
        guard !pendingMemberships.isEmpty else { return }
        for writer in writers where !keptMembershipWriters.contains(writer) {
            guard let memberships = pendingMemberships[writer] else { continue }
            keptMembershipWriters.insert(writer)
            let replica = Data(writer.bytes)
            for membership in memberships {
                let held = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM memberships WHERE replica = ?"), arguments: [replica]) ?? 0
                guard held < Self.maximumAccountsPerReplica else { break }
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO memberships (replica, account, proof) VALUES (?, ?, ?)")
                    .execute(arguments: [replica, membership.accountID, Data(membership.encoded)])
                if db.changesCount > 0 { markChanged() }
            }
        }
    }

    /// Notes that `device` offered shared zone `zone`: a row per zone and
    /// owner, the latest offer kept, at most `maximumInvitations` (oldest go).
    package func noteShareInvitation(_ zone: ZoneID, offeredBy device: String, at time: UInt64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO share_invitations (zone_name, owner, offered_by, received_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (zone_name, owner) DO UPDATE SET offered_by = excluded.offered_by, received_at = excluded.received_at
            """).execute(arguments: [zone.zoneName, zone.ownerName, device, Int64(clamping: time)])
        try db.cachedStatement(sql: """
            DELETE FROM share_invitations WHERE accepted = 0 AND (zone_name, owner) IN (SELECT zone_name, owner FROM share_invitations WHERE accepted = 0 ORDER BY received_at DESC LIMIT -1 OFFSET ?)
            """).execute(arguments: [Self.maximumInvitations])
        markChanged()
    }

    /// Accepts an invitation: its zone is taken from the devices that offer it.
    package func acceptShareInvitation(_ zone: ZoneID) throws {
        try db.cachedStatement(sql: "UPDATE share_invitations SET accepted = 1 WHERE zone_name = ? AND owner = ?").execute(arguments: [zone.zoneName, zone.ownerName])
        // Running nodes take the zone from the devices that offer it.
        markChanged()
        wakesWatchers = true
    }

    /// Forgets an invitation (accepted, or declined).
    package func removeShareInvitation(_ zone: ZoneID) throws {
        try db.cachedStatement(sql: "DELETE FROM share_invitations WHERE zone_name = ? AND owner = ?").execute(arguments: [zone.zoneName, zone.ownerName])
        if db.changesCount > 0 {
            markChanged()
            wakesWatchers = true
        }
    }

    package static let maximumInvitations = 64
}
