import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// One writer's part of one stored record change, kept until commit, when its
/// writer commit is known (a peer's from the marks in the blocks the change
/// set proved, `CommitMark`).
struct PendingHistoryEntry {
    var zone: Int64
    var key: ZoneKey
    var record: String
    var type: String
    var part: HistoryDiff.Part
    /// For a record created whole by one write (what an initial sync stores): its
    /// fields' names, kept instead of a change per field.
    var createdFields: [String]?
}

extension StoreTransaction {
    /// The setting that turns history off; absent, history is kept.
    static let historyOffSetting = "history.off"
    /// The setting holding how many days history is kept (`HistoryRetention`).
    static let historyDaysSetting = "history.days"

    var historyIsKept: Bool {
        get throws {
            if let keepsHistory { return keepsHistory }
            let kept = try setting(Self.historyOffSetting) == nil
            keepsHistory = kept
            return kept
        }
    }

    /// Notes what storing `state` over `previous` changed, if history is kept.
    func noteHistory(of state: RecordState, previous: RecordState?, zone: Int64, key: ZoneKey) throws {
        guard try historyIsKept else { return }
        if previous?.isAlive != true, state.isAlive, state.fields.allSatisfy({ $0.stamp == state.created && !$0.hasLosers && $0.value != nil }) {
            pendingHistory.append(PendingHistoryEntry(
                zone: zone, key: key, record: state.recordName, type: state.recordType,
                part: HistoryDiff.Part(author: state.created.replica, kind: .insert, changes: [], creation: state.created), createdFields: state.fields.map(\.name)))
            return
        }
        for part in HistoryDiff.parts(previous: previous, state: state) {
            pendingHistory.append(PendingHistoryEntry(zone: zone, key: key, record: state.recordName, type: state.recordType, part: part))
        }
    }

    /// Writes, for history, the deletes of the zone's live records that the
    /// zone write `stamp` makes: a row at a time, as the records are read (a
    /// zone of a million records is not held in memory), after what the
    /// transaction noted before it.
    func noteZoneReset(_ zone: Int64, key: ZoneKey, by stamp: Stamp) throws {
        guard try historyIsKept else { return }
        let localCommit = pendingLocalWrites.lazy.map(\.stamp.time).min()
        try recordHistory(sequence: try commitSequence, localCommit: localCommit)
        let commit = try historyCommit(of: stamp, in: key, localCommit: localCommit)
        let author = try replicaIndex(of: stamp.replica)
        let context = stamp.replica == replica ? historyAuthor : nil
        let at = Int64(bitPattern: wallClockNow())
        let sequence = Int64(try commitSequence)
        let insert = try HistoryRows(self)
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND alive = 1"), arguments: [zone])
        while let row = try rows.next() {
            let state = try decode(row[0] as Data)
            let changes = state.fields.map { HistoryFieldChange(field: $0.name, stamp: stamp, oldValue: $0.value, removed: true) }
            try insert.append(sequence: sequence, at: at, zone: zone, record: state.recordName, type: state.recordType, author: author,
                              commit: commit, kind: .delete, context: context, changes: changes)
        }
    }

    /// The writer commit a zone write belongs to: this transaction's for a
    /// local one, else the mark its block signs (or its own time).
    private func historyCommit(of stamp: Stamp, in key: ZoneKey, localCommit: HLCTimestamp?) throws -> HLCTimestamp {
        if stamp.replica == replica { return localCommit ?? stamp.time }
        return try writeBlock(of: stamp.replica, in: key, covering: stamp.time).flatMap { BlockCommits($0).commit(ofWriteAt: stamp.time) } ?? stamp.time
    }

    /// Rows of `history`, through a statement prepared once per flush and bound
    /// without boxing (`RecordRowStatement`): the merge of a large change set
    /// writes one per record.
    struct HistoryRows {
        private let statement: RecordRowStatement
        private let transaction: StoreTransaction

        init(_ transaction: StoreTransaction) throws {
            self.transaction = transaction
            statement = try RecordRowStatement(transaction.db, sql: """
                INSERT INTO history (seq, at, zone, record, type, author, commit_time, kind, context, changes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        }

        /// An entry of `changes`, or, with `created`, of a record those fields were created with by one write at `commit`.
        func append(sequence: Int64, at: Int64, zone: Int64, record: String, type: String, author: Int,
                    commit: HLCTimestamp, kind: HistoryKind, context: String?, changes: [HistoryFieldChange] = [], created: (fields: [String], stamp: HLCTimestamp)? = nil) throws {
            let blob = try created.map { try HistoryChangeCodec.encodeCreation($0.fields, stamp: $0.stamp, commit: commit, name: transaction.historyNameIndex) }
                ?? HistoryChangeCodec.encode(changes, commit: commit, name: transaction.historyNameIndex)
            try statement.execute([
                .integer(sequence), .integer(at), .integer(zone), .text(record), .text(type), .integer(Int64(author)),
                .integer(Int64(bitPattern: commit.rawValue)), .integer(Int64(kind.rawValue)), context.map { .text($0) } ?? .null, .blob(blob),
            ])
        }
    }

    /// The number `history_names` gives a field name, adding it when new.
    func historyNameIndex(_ name: String) throws -> Int {
        if historyNameIndexes == nil {
            historyNameIndexes = Dictionary(uniqueKeysWithValues: try historyNames().enumerated().map { ($1, $0) })
        }
        if let known = historyNameIndexes![name] { return known }
        let index = historyNameIndexes!.count
        try db.cachedStatement(sql: "INSERT INTO history_names (idx, name) VALUES (?, ?)").execute(arguments: [index, name])
        historyNameIndexes![name] = index
        return index
    }

    /// Writes the noted changes as history entries of commit `sequence`: one
    /// per record and writer commit, in the order they were stored. A local
    /// write's commit is `localCommit` (the first stamp this transaction took);
    /// a peer's is the mark its block signs before it, or, in a block sealed
    /// before commits were marked, the write's own stamp.
    func recordHistory(sequence: UInt64, localCommit: HLCTimestamp?) throws {
        guard !pendingHistory.isEmpty else { return }
        let entries = pendingHistory
        pendingHistory = []
        let ownCommit = localCommit ?? entries.lazy.filter { $0.part.author == self.replica }.flatMap { $0.part.changes.map(\.stamp.time) }.min()
        // The block that proved a writer's last write usually holds its next: read and searched once per block, not per write.
        var blocks: [Int64: [ReplicaID: BlockCommits]] = [:]
        var last: (zone: Int64, stamp: Stamp, commit: HLCTimestamp)?
        func commit(of change: HistoryFieldChange, in entry: PendingHistoryEntry) throws -> HLCTimestamp {
            try commit(of: change.stamp, lost: change.lost, in: entry)
        }
        func commit(of stamp: Stamp, lost: Bool, in entry: PendingHistoryEntry) throws -> HLCTimestamp {
            let change = (stamp: stamp, lost: lost)
            let writer = change.stamp.replica
            if writer == replica, let ownCommit, !change.lost { return ownCommit }
            // A write's fields share its stamp.
            if let last, last.stamp == change.stamp, last.zone == entry.zone { return last.commit }
            let found: HLCTimestamp
            if let known = blocks[entry.zone]?[writer]?.commit(ofWriteAt: change.stamp.time) {
                found = known
            } else if let block = try writeBlock(of: writer, in: entry.key, covering: change.stamp.time) {
                let commits = BlockCommits(block)
                blocks[entry.zone, default: [:]][writer] = commits
                found = commits.commit(ofWriteAt: change.stamp.time) ?? change.stamp.time
            } else {
                found = change.stamp.time
            }
            last = (entry.zone, change.stamp, found)
            return found
        }
        let at = Int64(bitPattern: wallClockNow())
        let insert = try HistoryRows(self)
        for entry in entries {
            let author = try replicaIndex(of: entry.part.author)
            let context = entry.part.author == replica ? historyAuthor : nil
            if let names = entry.createdFields, let creation = entry.part.creation {
                try insert.append(sequence: Int64(sequence), at: at, zone: entry.zone, record: entry.record, type: entry.type, author: author,
                                  commit: try commit(of: creation, lost: false, in: entry), kind: .insert, context: context, created: (names, creation.time))
                continue
            }
            // A part's changes, split by the writer commit each belongs to (in order of commit).
            var byCommit: [(commit: HLCTimestamp, changes: [HistoryFieldChange])] = []
            for change in entry.part.changes {
                let id = try commit(of: change, in: entry)
                if let index = byCommit.firstIndex(where: { $0.commit == id }) { byCommit[index].changes.append(change) } else { byCommit.append((id, [change])) }
            }
            if byCommit.isEmpty { byCommit = [(ownCommit ?? .zero, [])] }
            byCommit.sort { $0.commit < $1.commit }
            // Only the creating write's commit creates or replaces (else the earliest's): the others update what it made.
            let creating = entry.part.creation.flatMap { creation in byCommit.firstIndex { $0.changes.contains { $0.stamp == creation } } } ?? 0
            for (index, group) in byCommit.enumerated() {
                let kind = index == creating ? entry.part.kind : .update
                try insert.append(sequence: Int64(sequence), at: at, zone: entry.zone, record: entry.record, type: entry.type, author: author,
                                  commit: group.commit, kind: kind, context: context, changes: group.changes)
            }
        }
    }

    /// Drops history older than the retention (`history.days`, by default
    /// `HistoryRetention.defaultDays`); returns how many entries went.
    @discardableResult
    package func collectHistory() throws -> Int {
        let days = try setting(Self.historyDaysSetting).flatMap { Int($0) } ?? HistoryRetention.defaultDays
        let cutoff = Int64(bitPattern: wallClockNow()) - Int64(days) * 86_400_000
        guard let first = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM history WHERE at >= ? ORDER BY id LIMIT 1"), arguments: [cutoff])
                ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT MAX(id) + 1 FROM history")) else { return 0 }
        return try deleteHistory(before: first)
    }

    /// Deletes the history entries before the token `id`; reads as of a
    /// commit before them are refused from then on (`historyFloor`).
    @discardableResult
    package func deleteHistory(before id: Int64) throws -> Int {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT MAX(seq), MAX(at) FROM history WHERE id < ?"), arguments: [id]),
              let last = row[0] as Int64?, let at = row[1] as Int64? else { return 0 }
        try db.cachedStatement(sql: "DELETE FROM history WHERE id < ?").execute(arguments: [id])
        let deleted = db.changesCount
        try raiseHistoryFloor(to: UInt64(last), at: at)
        return deleted
    }

    /// Deletes the given entries; reads as of a commit before the last of them are refused from then on.
    @discardableResult
    package func deleteHistory(ids: [Int64]) throws -> Int {
        var deleted = 0
        var floor: (seq: Int64, at: Int64) = (0, 0)
        for id in ids {
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT seq, at FROM history WHERE id = ?"), arguments: [id]) else { continue }
            try db.cachedStatement(sql: "DELETE FROM history WHERE id = ?").execute(arguments: [id])
            deleted += 1
            floor = (max(floor.seq, row[0]), max(floor.at, row[1]))
        }
        if deleted > 0 { try raiseHistoryFloor(to: UInt64(floor.seq), at: floor.at) }
        return deleted
    }

    /// History is incomplete up to commit `sequence`, stored at `at` (ms): no read goes back past it.
    private func raiseHistoryFloor(to sequence: UInt64, at: Int64) throws {
        guard sequence > (try historyFloor().sequence) else { return }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('history_floor', ?)").execute(arguments: [Int64(sequence)])
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('history_floor_at', ?)").execute(arguments: [at])
        markChanged()
    }

    /// Turns history on or off; history turned on again is complete only from then on.
    package func setHistoryKept(_ kept: Bool) throws {
        if kept {
            guard try setting(Self.historyOffSetting) != nil else { return }
            try db.cachedStatement(sql: "DELETE FROM meta WHERE key = ?").execute(arguments: ["setting." + Self.historyOffSetting])
            try raiseHistoryFloor(to: try sequence(), at: Int64(bitPattern: wallClockNow()))
        } else {
            try setSetting(Self.historyOffSetting, to: "1")
        }
        keepsHistory = kept
        markChanged()
    }

    /// Keeps history `days` days.
    package func setHistoryDays(_ days: Int) throws {
        try setSetting(Self.historyDaysSetting, to: String(days))
    }
}

/// How long history is kept.
package enum HistoryRetention {
    /// Days history is kept unless `lattice history retain` says otherwise.
    package static let defaultDays = 30
}
