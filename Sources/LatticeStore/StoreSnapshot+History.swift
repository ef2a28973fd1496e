import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// One history entry: what one writer commit did to one record, as this
/// device stored it.
package struct HistoryEntry: Sendable {
    /// The history token: the order this device stored entries in.
    package var id: Int64
    /// The commit that stored it here.
    package var sequence: UInt64
    /// When it was stored here (wall-clock milliseconds).
    package var storedAt: UInt64
    package var zone: ZoneKey
    package var record: String
    package var recordType: String
    /// The writer: the replica every change's stamp names, checked against its signature on arrival.
    package var author: ReplicaID
    /// The writer commit's identity: the time of its first stamp.
    package var commit: HLCTimestamp
    package var kind: HistoryKind
    /// The app's author string, for a local write that gave one.
    package var context: String?
    package var changes: [HistoryFieldChange]
}

/// Which entries a history read wants.
package struct HistoryFilter: Sendable {
    package var after: Int64?
    package var through: Int64?
    package var scope: DatabaseScope?
    package var zone: ZoneKey?
    package var record: String?
    package var author: ReplicaID?
    package var storedSince: UInt64?
    package var newestFirst = false
    package var limit: Int?

    package init() {}
}

/// A record as this device held it at a point in its history.
package struct HistoricalRecord: Sendable {
    /// Nil when the record did not exist then.
    package var fields: [String: FieldValue]?
    package var recordType: String?
}

/// A point of this device's history: a token, or a wall-clock time.
package enum HistoryPoint: Sendable {
    case token(Int64)
    /// After the commit of that sequence.
    case sequence(UInt64)
    case time(milliseconds: UInt64)
}

extension StoreSnapshot {
    /// History is complete after this commit (stored at `at`): reads go no further back.
    package func historyFloor() throws -> (sequence: UInt64, at: UInt64) {
        (try metaInteger("history_floor"), try metaInteger("history_floor_at"))
    }

    /// The field names history's changes give by number, in order.
    package func historyNames() throws -> [String] {
        let names = try Row.fetchAll(db.cachedStatement(sql: "SELECT idx, name FROM history_names ORDER BY idx"))
        var list: [String] = []
        for row in names {
            guard row[0] as Int == list.count else { throw StoreError.corrupt(path: store.directory.path, reason: "history's table of field names is out of order") }
            list.append(row[1])
        }
        return list
    }

    /// Whether history is kept.
    package func keepsHistory() throws -> Bool { try setting(StoreTransaction.historyOffSetting) == nil }

    /// Days history is kept.
    package func historyDays() throws -> Int {
        try setting(StoreTransaction.historyDaysSetting).flatMap { Int($0) } ?? HistoryRetention.defaultDays
    }

    /// The entries `filter` asks for, in token order (or newest first).
    package func historyEntries(_ filter: HistoryFilter) throws -> [HistoryEntry] {
        var conditions: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        if let after = filter.after { conditions.append("h.id > ?"); arguments.append(after) }
        if let through = filter.through { conditions.append("h.id <= ?"); arguments.append(through) }
        if let zone = filter.zone {
            guard let row = try zoneRow(zone) else { return [] }
            // Without a record, the entries are read in token order, not through the per-record index
            // (which would sort every entry of the zone to find the last few).
            conditions.append(filter.record == nil ? "+h.zone = ?" : "h.zone = ?"); arguments.append(row.id)
        } else if let scope = filter.scope {
            conditions.append("z.scope = ?"); arguments.append(Int(scope.rawValue))
        }
        if let record = filter.record { conditions.append("h.record = ?"); arguments.append(record) }
        if let author = filter.author {
            guard let index = try replicas.firstIndex(of: author) else { return [] }
            conditions.append("h.author = ?"); arguments.append(index)
        }
        if let since = filter.storedSince { conditions.append("h.at >= ?"); arguments.append(Int64(bitPattern: since)) }
        var sql = """
            SELECT h.id, h.seq, h.at, z.scope, z.name, z.owner, h.record, h.type, h.author, h.commit_time, h.kind, h.context, h.changes
            FROM history h JOIN zones z ON z.id = h.zone
            """
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += filter.newestFirst ? " ORDER BY h.id DESC" : " ORDER BY h.id"
        if let limit = filter.limit { sql += " LIMIT \(max(0, limit))" }
        let ids = try replicas
        let names = try historyNames()
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments)).map { row in
            let authorIndex: Int = row[8]
            guard ids.indices.contains(authorIndex), let scope = DatabaseScope(rawValue: UInt8(truncatingIfNeeded: row[3] as Int)),
                  let kind = HistoryKind(rawValue: UInt8(truncatingIfNeeded: row[10] as Int)) else {
                throw StoreError.corrupt(path: store.directory.path, reason: "history entry \(row[0] as Int64) names an unknown writer, scope or kind")
            }
            let commit = HLCTimestamp(rawValue: UInt64(bitPattern: row[9]))
            let changes = try decoding { try HistoryChangeCodec.decode([UInt8](row[12] as Data), author: ids[authorIndex], commit: commit, names: names) }
            return HistoryEntry(
                id: row[0], sequence: UInt64(row[1] as Int64), storedAt: UInt64(bitPattern: row[2]),
                zone: ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row[4], ownerName: row[5])), record: row[6], recordType: row[7],
                author: ids[authorIndex], commit: commit, kind: kind, context: row[11], changes: changes)
        }
    }

    /// The record as this device held it at `point`: its entries after the
    /// point, read backwards from its present state.
    package func record(_ name: String, in key: ZoneKey, asOf point: HistoryPoint) throws -> HistoricalRecord {
        let floor = try historyFloor()
        let condition: String
        let bound: Int64
        let unavailable = { StoreError.historyUnavailable("history of \(key.zoneID.zoneName)/\(name) before commit \(floor.sequence) is not kept here (collected, deleted, or history was off)") }
        switch point {
        case .token(let id):
            guard let sequence = try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM history WHERE id = ?"), arguments: [id]) else {
                throw StoreError.historyUnavailable("no history entry has token h\(id) (it was collected or deleted, or never was)")
            }
            guard UInt64(sequence) >= floor.sequence else { throw unavailable() }
            condition = "seq > ?"
            bound = sequence
        case .sequence(let sequence):
            guard sequence >= floor.sequence else { throw unavailable() }
            condition = "seq > ?"
            bound = Int64(sequence)
        case .time(let milliseconds):
            guard milliseconds >= floor.at else {
                throw StoreError.historyUnavailable("history before \(Self.describe(milliseconds: floor.at)) is not kept here (collected, deleted, or history was off)")
            }
            condition = "at > ?"
            bound = Int64(bitPattern: milliseconds)
        }
        guard let row = try zoneRow(key) else { throw StoreError.zoneNotFound(key.description) }
        let present = try record(name, zoneID: row.id)
        var fields: [String: FieldValue]? = present.flatMap { $0.isAlive ? $0.liveFieldValues : nil }
        // The floor was checked against the point: every entry after it is kept, and read newest first.
        let entries = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT kind, changes FROM history WHERE zone = ? AND record = ? AND \(condition) ORDER BY seq DESC, id DESC
            """), arguments: [row.id, name, bound])
        var oldest: Bool?
        let names = try historyNames()
        while let entry = try entries.next() {
            guard let kind = HistoryKind(rawValue: UInt8(truncatingIfNeeded: entry[0] as Int)) else {
                throw StoreError.corrupt(path: store.directory.path, reason: "a history entry of \(name) has an unknown kind")
            }
            fields = try decoding { try HistoryChangeCodec.undo([UInt8](entry[1] as Data), kind: kind, from: fields, names: names) }
            oldest = true
        }
        guard fields != nil else { return HistoricalRecord(fields: nil, recordType: nil) }
        // Its type then: the oldest entry read's, else the present one's.
        var recordType = present?.recordType
        if oldest != nil {
            recordType = try String.fetchOne(db.cachedStatement(sql: """
                SELECT type FROM history WHERE zone = ? AND record = ? AND \(condition) ORDER BY seq, id LIMIT 1
                """), arguments: [row.id, name, bound]) ?? recordType
        }
        return HistoricalRecord(fields: fields, recordType: recordType)
    }

    /// How many entries history holds and about how many bytes they take.
    package func historySize() throws -> (entries: Int, bytes: Int64) {
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT COUNT(*), COALESCE(SUM(LENGTH(changes) + LENGTH(record) + LENGTH(type) + COALESCE(LENGTH(context), 0) + 32), 0) FROM history
            """))!
        return (row[0], row[1])
    }

    /// The public key a writer signed its blocks with, if a block of it is kept.
    package func signingKey(of replica: ReplicaID) throws -> [UInt8]? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT public_key FROM write_blocks WHERE replica = ? LIMIT 1"), arguments: [Data(replica.bytes)]).map { [UInt8]($0) }
    }

    static func describe(milliseconds: UInt64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
