import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

extension StoreSnapshot {
    /// The founder's key of this store's account: its own until it joins another by pairing.
    package func accountFounder() throws -> [UInt8] {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'account'")).map { [UInt8]($0) } ?? store.identity.publicKey
    }

    /// The account's roster as held here.
    package func roster() throws -> AccountRoster {
        var roster = AccountRoster(founder: try accountFounder())
        // Every stored entry was checked on its way in; one that no longer reads is dropped, not fatal.
        let entries = try Data.fetchAll(db.cachedStatement(sql: "SELECT bytes FROM roster_entries")).compactMap { try? RosterEntry(bytes: [UInt8]($0)) }
        try roster.merge(entries)
        return roster
    }

    /// The roster as `AccountRoster.encoded` gives it, from the stored bytes
    /// without checking signatures again (a node reads it on every commit).
    package func encodedRoster() throws -> [UInt8] {
        let entries = try Data.fetchAll(db.cachedStatement(sql: "SELECT bytes FROM roster_entries ORDER BY hash"))
        return AccountRoster.encode(founder: try accountFounder(), entries: entries.map { [UInt8]($0) })
    }

    /// The highest stamp of `replica` any zone of this store holds: its
    /// knowledge (records applied, a stream's claim taken or not yet).
    package func heldWrites(of replica: ReplicaID) throws -> HLCTimestamp {
        var highest = HLCTimestamp.zero
        for scope in DatabaseScope.allCases {
            for zone in try zones(in: scope) { highest = max(highest, zone.sync.vector[replica], zone.sync.knowledge[replica]) }
        }
        return highest
    }
}

extension StoreTransaction {
    /// Takes the entries of `roster` this store lacks, if it is this store's
    /// account (or, with `joining`, makes it this store's account: the store
    /// joins it and leaves its own), then brings trust in line with the
    /// roster's state. A removal this store learns of while it holds the
    /// removed device's writes beyond the removal's mark gets an entry of
    /// its own (`held`), so every member keeps those writes alike.
    /// Returns whether anything changed.
    @discardableResult
    package func adoptRoster(_ incoming: AccountRoster, joining: Bool = false) throws -> Bool {
        try adoptRoster(founder: incoming.founder, entries: Array(incoming.entries.values), joining: joining)
    }

    /// The same with entries checked one by one but not merged yet: a piece
    /// of a roster (`AccountRoster.checkedEntries`), whose entries may need
    /// those of earlier pieces, which this store holds.
    @discardableResult
    package func adoptRoster(founder: [UInt8], entries incoming: [RosterEntry], joining: Bool = false) throws -> Bool {
        var roster = try roster()
        if founder != roster.founder {
            guard joining else { return false }
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('account', ?)").execute(arguments: [Data(founder)])
            try db.cachedStatement(sql: "DELETE FROM roster_entries").execute()
            roster = AccountRoster(founder: founder)
        }
        let removedBefore = Set(roster.state.removed.keys)
        let taken = try roster.merge(incoming)
        for entry in taken { try insertRosterEntry(entry) }
        for hash in roster.dropped { try db.cachedStatement(sql: "DELETE FROM roster_entries WHERE hash = ?").execute(arguments: [Data(hash)]) }
        guard !taken.isEmpty || joining else { return false }
        var state = roster.state
        let own = store.identity.publicKey
        if state.members[own] != nil {
            // Only for removals learnt now: what was taken after one knew of it cannot pass its mark.
            for removal in state.removed.values where removal.publicKey != own && !removedBefore.contains(removal.publicKey) {
                let held = try heldWrites(of: try WriteBlock.replica(of: removal.publicKey))
                guard held > removal.writesUpTo else { continue }
                try insertRosterEntry(try roster.sign(.held(writesUpTo: held), subject: removal.publicKey, by: store.identity, at: RecordStore.systemWallClock()))
                state = roster.state
            }
        }
        try applyRosterState(state)
        return true
    }

    /// Signs `action` on `subject` into this store's roster.
    package func signRosterEntry(_ action: RosterEntry.Action, subject: [UInt8]) throws -> RosterEntry {
        var roster = try roster()
        let entry = try roster.sign(action, subject: subject, by: store.identity, at: RecordStore.systemWallClock())
        try insertRosterEntry(entry)
        try applyRosterState(roster.state)
        return entry
    }

    private func insertRosterEntry(_ entry: RosterEntry) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO roster_entries (hash, bytes) VALUES (?, ?)").execute(arguments: [Data(entry.hash), Data(entry.bytes)])
    }

    /// Members are trusted (`peers.member`), removed devices refused
    /// (`peers.removed`, over any trust given by hand), and removed devices'
    /// later writes refused (`refused_writers`).
    private func applyRosterState(_ state: AccountRoster.State) throws {
        try db.cachedStatement(sql: "UPDATE peers SET member = 0, removed = 0").execute()
        try db.cachedStatement(sql: "DELETE FROM refused_writers").execute()
        let own = store.identity.publicKey
        for member in state.members.values where member.publicKey != own {
            let id = try DeviceID(publicKey: member.publicKey).description
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO peers (device_id) VALUES (?)").execute(arguments: [id])
            try db.cachedStatement(sql: "UPDATE peers SET member = 1, name = COALESCE(name, ?) WHERE device_id = ?").execute(arguments: [member.name.isEmpty ? nil : member.name, id])
        }
        for removal in state.removed.values where removal.publicKey != own {
            let id = try DeviceID(publicKey: removal.publicKey).description
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO peers (device_id) VALUES (?)").execute(arguments: [id])
            try db.cachedStatement(sql: "UPDATE peers SET removed = 1, name = COALESCE(name, ?) WHERE device_id = ?").execute(arguments: [removal.name.isEmpty ? nil : removal.name, id])
            try db.cachedStatement(sql: "DELETE FROM resume_points WHERE peer = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "INSERT INTO refused_writers (replica, device_id, writes_up_to) VALUES (?, ?, ?)").execute(arguments: [
                Data(try WriteBlock.replica(of: removal.publicKey).bytes), id, Int64(bitPattern: removal.writesUpTo.rawValue),
            ])
        }
        refusedWritersCache = nil
        ownMembersCache = nil
        accountsCache = [:]
        if state.members[own] != nil { try recordAccountRemovalsInShares(state) }
        markChanged()
        wakesWatchers = true
    }

    /// Writes the account's removals into the share of every shared zone it
    /// owns or takes part in (`recordAccountRemovals`), from `state` or the
    /// roster held here.
    package func recordAccountRemovalsInShares(_ state: AccountRoster.State? = nil) throws {
        let state = try state ?? roster().state
        guard state.members[store.identity.publicKey] != nil, !state.removed.isEmpty else { return }
        var marks: [ReplicaID: HLCTimestamp] = [:]
        for removal in state.removed.values { marks[try WriteBlock.replica(of: removal.publicKey)] = removal.writesUpTo }
        let own = try accountID()
        for zone in try zones(in: .shared) where zone.sync.zoneState.exists {
            // A share that cannot take the fields (past a record's megabyte) must not stop the roster
            // change itself: a removal always goes through; the participants of that zone miss the mark.
            try? db.inSavepoint {
                try recordAccountRemovals(marks, of: own, in: zone.key)
                return .commit
            }
        }
    }

    /// Why writes of `replica` stamped `time` are refused: its device was
    /// removed from the account, and `time` is after the removal's mark.
    package func refusal(ofWriter replica: ReplicaID, at time: HLCTimestamp) -> String? {
        if refusedWritersCache == nil {
            do {
                var writers: [ReplicaID: (device: String, upTo: HLCTimestamp)] = [:]
                for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT replica, device_id, writes_up_to FROM refused_writers")) {
                    writers[ReplicaID(bytes: [UInt8](row[0] as Data))] = (row[1], HLCTimestamp(rawValue: UInt64(bitPattern: row[2])))
                }
                refusedWritersCache = writers
            } catch {
                // Not knowing whom to refuse refuses: the change set waits for a store that answers.
                return "the store cannot tell whose writes are refused (\(error))"
            }
        }
        guard let writer = refusedWritersCache?[replica], time > writer.upTo else { return nil }
        return "device \(writer.device) was removed from the account; its writes after \(writer.upTo) are refused"
    }
}
