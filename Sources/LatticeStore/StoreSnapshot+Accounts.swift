import Foundation
import GRDB
import LatticeCore
import LatticeCrypto

/// Other accounts' rosters: which devices write for which account, so the
/// public database's creator-only rule holds per account (a record created
/// on the laptop can be edited on the phone of the same account) on every
/// replica that holds the creator's roster. Peers send the rosters they hold
/// in their hello; a store keeps at most `maximumForeignRosters`, the most
/// recently seen.
extension StoreSnapshot {
    /// Rosters of other accounts a store keeps; past it, the one seen longest ago goes.
    public static let maximumForeignRosters = 256

    /// Other accounts' rosters, encoded, the most recently seen first.
    public func foreignRosters(limit: Int) throws -> [[UInt8]] {
        try Data.fetchAll(db.cachedStatement(sql: "SELECT bytes FROM account_rosters ORDER BY seen DESC, founder LIMIT ?"), arguments: [limit]).map { [UInt8]($0) }
    }

    /// The founder's key of the account `replica` writes for, as the rosters held here say; nil when unknown.
    func account(ofForeign replica: ReplicaID) throws -> [UInt8]? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT founder FROM account_members WHERE replica = ?"), arguments: [Data(replica.bytes)]).map { [UInt8]($0) }
    }
}

extension StoreTransaction {
    /// Takes another account's roster: the entries this store lacks of it.
    /// A roster of this store's own account is not taken here (`adoptRoster`
    /// takes it from the account's devices alone). Returns whether anything changed.
    @discardableResult
    public func adoptForeignRoster(_ incoming: AccountRoster) throws -> Bool {
        guard incoming.founder != (try accountFounder()) else { return false }
        var roster = AccountRoster(founder: incoming.founder)
        if let stored = try Data.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM account_rosters WHERE founder = ?"), arguments: [Data(incoming.founder)]) {
            // Stored rosters were checked on their way in; one that no longer reads is replaced.
            roster = (try? AccountRoster(decoding: [UInt8](stored))) ?? roster
        }
        let before = roster.entries.count
        let stored = try Data.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM account_rosters WHERE founder = ?"), arguments: [Data(incoming.founder)]) != nil
        try roster.merge(incoming.entries.values)
        guard !stored || roster.entries.count > before else { return false }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO account_rosters (founder, bytes, seen) VALUES (?, ?, ?)").execute(arguments: [
            Data(roster.founder), Data(roster.encoded), Int64(clamping: RecordStore.systemWallClock()),
        ])
        try db.cachedStatement(sql: "DELETE FROM account_members WHERE founder = ?").execute(arguments: [Data(roster.founder)])
        for member in roster.state.members.keys {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO account_members (replica, founder) VALUES (?, ?)").execute(arguments: [
                Data(try WriteBlock.replica(of: member).bytes), Data(roster.founder),
            ])
        }
        // Anyone can make accounts: only the most recently seen are kept.
        let evicted = try Data.fetchAll(db.cachedStatement(sql: "SELECT founder FROM account_rosters ORDER BY seen DESC, founder LIMIT -1 OFFSET ?"), arguments: [Self.maximumForeignRosters])
        for founder in evicted {
            try db.cachedStatement(sql: "DELETE FROM account_rosters WHERE founder = ?").execute(arguments: [founder])
            try db.cachedStatement(sql: "DELETE FROM account_members WHERE founder = ?").execute(arguments: [founder])
        }
        accountCache.removeAll()
        markChanged()
        return true
    }

    /// Whether two replicas write for one account: the same device, devices
    /// of this store's account, or members of one roster held here.
    public func sameAccount(_ lhs: ReplicaID, _ rhs: ReplicaID) -> Bool {
        guard lhs != rhs else { return true }
        guard let left = accountOf(lhs), let right = accountOf(rhs) else { return false }
        return left == right
    }

    /// The account `replica` writes for, read once per transaction; nil when unknown (or unreadable).
    private func accountOf(_ replica: ReplicaID) -> [UInt8]? {
        if let known = accountCache[replica] { return known }
        var account: [UInt8]?
        do {
            if ownAccountMembers == nil {
                let roster = try roster()
                ownAccountMembers = Set(try roster.state.members.keys.map { try WriteBlock.replica(of: $0) })
                ownAccountFounder = roster.founder
            }
            if ownAccountMembers?.contains(replica) == true || replica == store.replica {
                account = ownAccountFounder
            } else {
                account = try self.account(ofForeign: replica)
            }
        } catch {
            account = nil
        }
        accountCache[replica] = account
        return account
    }
}
