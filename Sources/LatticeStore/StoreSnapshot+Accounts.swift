import Foundation
import GRDB
import LatticeCore
import LatticeCrypto

/// Which devices write for which account, so the public database's
/// creator-only rule holds per account (a record created on the laptop can
/// be edited on the phone of the same account) on every replica that holds
/// the account's roster. A device writes for an account when it founded it,
/// or was added to it and signed that it joined (`RosterEntry.Action.joined`:
/// an add alone is the adder's word); a removed one up to its removal's mark.
/// Peers send their account's roster and others' they hold in their hello; a
/// store keeps at most `maximumForeignRosters` of other accounts, the most
/// recently changed, each of at most `maximumForeignRosterBytes`.
extension StoreSnapshot {
    /// Rosters of other accounts a store keeps; past it, the one changed longest ago goes.
    public static let maximumForeignRosters = 256
    /// The largest roster of another account kept (about 50 entries): anyone can make accounts.
    public static let maximumForeignRosterBytes = 16 * 1024

    /// Other accounts' rosters, encoded, the most recently changed first.
    public func foreignRosters(limit: Int) throws -> [[UInt8]] {
        try Data.fetchAll(db.cachedStatement(sql: "SELECT bytes FROM account_rosters ORDER BY seen DESC, founder LIMIT ?"), arguments: [limit]).map { [UInt8]($0) }
    }

    /// The stored roster of another account, as sent (to tell a copy sent again without decoding it).
    public func foreignRoster(founder: [UInt8]) throws -> [UInt8]? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM account_rosters WHERE founder = ?"), arguments: [Data(founder)]).map { [UInt8]($0) }
    }
}

extension StoreTransaction {
    /// Takes another account's roster: the entries this store lacks of it,
    /// while the whole stays within `maximumForeignRosterBytes`. A roster of
    /// this store's own account is not taken here (`adoptRoster` takes it from
    /// the account's devices alone), nor one that names no device besides its
    /// founder's (nothing to tell). Returns whether anything changed.
    @discardableResult
    public func adoptForeignRoster(_ incoming: AccountRoster) throws -> Bool {
        guard incoming.founder != (try accountFounder()) else { return false }
        let stored = try foreignRoster(founder: incoming.founder)
        // Stored rosters were checked on their way in; one that no longer reads is replaced.
        var roster = stored.flatMap { try? AccountRoster(decoding: $0) } ?? AccountRoster(founder: incoming.founder)
        let before = roster.entries.count
        do { try roster.merge(incoming.entries.values) } catch { return false }
        guard roster.entries.count > before, roster.state.writers.count > 1 else { return false }
        let encoded = roster.encoded
        guard encoded.count <= Self.maximumForeignRosterBytes else { return false }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO account_rosters (founder, bytes, seen) VALUES (?, ?, ?)").execute(arguments: [
            Data(roster.founder), Data(encoded), Int64(clamping: RecordStore.systemWallClock()),
        ])
        try db.cachedStatement(sql: "DELETE FROM account_members WHERE founder = ?").execute(arguments: [Data(roster.founder)])
        for writer in roster.state.writers {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO account_members (replica, founder, joined, up_to) VALUES (?, ?, ?, ?)").execute(arguments: [
                Data(try WriteBlock.replica(of: writer.publicKey).bytes), Data(roster.founder), Int64(clamping: writer.joinedAt),
                writer.upTo.map { Int64(bitPattern: $0.rawValue) },
            ])
        }
        // Anyone can make accounts: only the most recently changed are kept.
        let evicted = try Data.fetchAll(db.cachedStatement(sql: "SELECT founder FROM account_rosters ORDER BY seen DESC, founder LIMIT -1 OFFSET ?"), arguments: [Self.maximumForeignRosters])
        for founder in evicted {
            try db.cachedStatement(sql: "DELETE FROM account_rosters WHERE founder = ?").execute(arguments: [founder])
            try db.cachedStatement(sql: "DELETE FROM account_members WHERE founder = ?").execute(arguments: [founder])
        }
        accountCache.removeAll()
        markChanged()
        return true
    }

    /// Signs that this device joined its account, if it was added to one and
    /// has not yet (a store from before joins were signed, or one that just
    /// joined). Returns whether it signed.
    @discardableResult
    public func signJoinedIfNeeded() throws -> Bool {
        let roster = try roster()
        let own = store.identity.publicKey
        guard roster.founder != own, let member = roster.state.members[own], member.joinedAt == nil else { return false }
        _ = try signRosterEntry(.joined, subject: own)
        return true
    }

    /// Whether `writer`'s write stamped `time` is one of `owner`'s account:
    /// the same device, or both write for one account by the rosters held here.
    public func writesForAccount(of owner: ReplicaID, writer: ReplicaID, at time: HLCTimestamp) -> Bool {
        guard writer != owner else { return true }
        guard enforcesWriteRights else { return true }
        guard let account = account(of: owner, at: .max) else { return false }
        return self.account(of: writer, at: time) == account
    }

    /// The account `replica` writes for at `time`: of the accounts that claim
    /// it (it founded, or joined), the one it joined last; nil when none.
    private func account(of replica: ReplicaID, at time: HLCTimestamp) -> [UInt8]? {
        let candidates: [(founder: [UInt8], joined: UInt64, upTo: HLCTimestamp?)]
        if let known = accountCache[replica] {
            candidates = known
        } else {
            var found: [(founder: [UInt8], joined: UInt64, upTo: HLCTimestamp?)] = []
            do {
                if ownWriters == nil {
                    let roster = try roster()
                    var writers: [ReplicaID: (founder: [UInt8], joined: UInt64, upTo: HLCTimestamp?)] = [:]
                    for writer in roster.state.writers {
                        writers[try WriteBlock.replica(of: writer.publicKey)] = (roster.founder, writer.joinedAt, writer.upTo)
                    }
                    ownWriters = writers
                }
                if let own = ownWriters?[replica] { found.append(own) }
                let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT founder, joined, up_to FROM account_members WHERE replica = ?"), arguments: [Data(replica.bytes)])
                for row in rows {
                    let upTo: Int64? = row[2]
                    found.append(([UInt8](row[0] as Data), UInt64(clamping: row[1] as Int64), upTo.map { HLCTimestamp(rawValue: UInt64(bitPattern: $0)) }))
                }
            } catch {
                found = []
            }
            accountCache[replica] = found
            candidates = found
        }
        return candidates.filter { $0.upTo.map { time <= $0 } ?? true }
            .max { a, b in a.joined != b.joined ? a.joined < b.joined : a.founder.lexicographicallyPrecedes(b.founder) }?.founder
    }
}
