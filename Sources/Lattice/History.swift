import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// A point in this device's history: the order it stored changes in, as
/// SwiftData's `DefaultHistoryToken`. Printed `h` and a number.
public struct HistoryToken: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    /// The last history entry the token covers.
    public let entry: Int64

    public init(entry: Int64) { self.entry = entry }

    /// Parses the printed form (`h42`).
    public init?(_ text: String) {
        guard text.first == "h", let entry = Int64(text.dropFirst()), entry >= 0 else { return nil }
        self.entry = entry
    }

    public var description: String { "h\(entry)" }
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool { lhs.entry < rhs.entry }
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = HistoryToken(text) else { throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a history token: \(text)")) }
        self = token
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// What a change did to a record.
public enum HistoryChangeKind: String, Sendable, Codable {
    case insert, update, delete
    /// A new incarnation of the record replaced a live one (a concurrent delete and re-creation).
    case replace
}

/// One field's part in a change.
public struct HistoryFieldChange: Hashable, Sendable {
    /// The field.
    public var field: String
    /// Its value on this device before the change; nil when it had none.
    public var oldValue: FieldValue?
    /// The write removed the field (or deleted the record).
    public var removed: Bool
    /// A concurrent write that lost to the value held: it shows as a conflict and changed no value.
    public var lost: Bool
    /// After the change the field has conflicting values (`Database.conflicts`).
    public var conflicted: Bool
    /// The write's clock reading: milliseconds since 1970, and a counter.
    public var stampMilliseconds: Int64
    public var stampCounter: Int
}

/// What one writer commit did to one record.
public struct HistoryRecordChange: Sendable {
    public var kind: HistoryChangeKind
    public var recordID: Record.ID
    public var recordType: String
    /// The fields it wrote, with the values they replaced here (a delete lists every field it ended).
    public var fields: [HistoryFieldChange]
    /// The fields whose values changed (lost writes left out): SwiftData's `updatedAttributes`.
    public var changedFields: [String] { fields.filter { !$0.lost }.map(\.field) }
}

/// One writer commit as this device stored it: SwiftData's `DatabaseTransaction`.
public struct DatabaseTransaction: Sendable {
    /// The writer commit's identity, the same on every device that holds it:
    /// the author's device ID and the clock reading of its first write.
    public var transactionIdentifier: String
    /// The device that made the commit. Its signature was checked when the
    /// writes arrived: a relay cannot change it.
    public var author: String
    /// The app's author string (`Database.withHistoryAuthor`, `ModelContext.author`) for a commit made on this device.
    public var contextAuthor: String?
    /// When the writer made the commit (its clock).
    public var timestamp: Date
    /// When this device stored it.
    public var storedAt: Date
    /// The last entry it covers: read on with `history(since:)` from here.
    public var token: HistoryToken
    /// The database it changed.
    public var databaseScope: DatabaseScope
    public var changes: [HistoryRecordChange]
    /// The store's entries it is made of.
    var entryIDs: [Int64] = []
    /// Its first entry: a newest-first read goes on before it.
    var firstEntry: Int64 { entryIDs.min() ?? token.entry }
}

/// A record as this device held it at an earlier point (`Database.record(_:asOf:)`).
public enum HistoryPointInTime: Sendable {
    /// After the commit that stored the token's entry.
    case token(HistoryToken)
    /// At that time by this device's clock.
    case date(Date)
}

/// One version of a record's field in its history (`Database.recordHistory`).
public struct RecordVersion: Sendable {
    public var token: HistoryToken
    public var transactionIdentifier: String
    public var author: String
    public var storedAt: Date
    /// The write's stamp, by its writer's clock: milliseconds since 1970 and a counter.
    public var stampMilliseconds: Int64
    public var stampCounter: Int
    public var kind: HistoryChangeKind
    public var field: String?
    public var oldValue: FieldValue?
    public var newValue: FieldValue?
    public var lost: Bool
    public var conflicted: Bool
}

extension Database {
    /// A copy of this database whose local writes carry `author` in history.
    public func withHistoryAuthor(_ author: String?) -> Database {
        var copy = self
        copy.historyAuthor = author
        return copy
    }

    /// This database's history after `token` (from the oldest kept entry
    /// when nil), optionally of one zone, record or author device, oldest
    /// first or, with `newestFirst`, newest first; at most `limit` transactions.
    public func history(
        since token: HistoryToken? = nil, in zoneID: Zone.ID? = nil, record recordName: String? = nil, author: String? = nil,
        storedSince: Date? = nil, newestFirst: Bool = false, limit: Int? = nil
    ) throws(LatticeError) -> [DatabaseTransaction] {
        try history(since: token, in: zoneID, record: recordName, author: author, storedSince: storedSince, newestFirst: newestFirst, limit: limit, through: nil)
    }

    /// `history(since:…)`, read no further than `through`.
    func history(
        since token: HistoryToken? = nil, in zoneID: Zone.ID? = nil, record recordName: String? = nil, author: String? = nil,
        storedSince: Date? = nil, newestFirst: Bool = false, limit: Int? = nil, through: HistoryToken?
    ) throws(LatticeError) -> [DatabaseTransaction] {
        try LatticeError.wrap {
            try store.read { snapshot in
                var filter = HistoryFilter()
                filter.after = token?.entry
                filter.through = through?.entry
                filter.scope = databaseScope
                if let zoneID {
                    let zone = try key(zoneID, in: snapshot)
                    try requireReplicated(zone, in: snapshot)
                    guard try snapshot.syncState(of: zone) != nil || zoneID.isDefault else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist") }
                    filter.zone = zone
                }
                filter.record = recordName
                if let author { filter.author = try Self.replica(ofDevice: author) }
                filter.storedSince = storedSince.map { UInt64(max(0, $0.timeIntervalSince1970 * 1000)) }
                filter.newestFirst = newestFirst
                return try HistoryReader(snapshot: snapshot, container: container).transactions(filter, limit: limit)
            }
        }
    }

    /// The record as this device held it at `point`, or nil if it did not
    /// exist then. Fails when the history it needs is no longer kept.
    public func record(_ recordID: Record.ID, asOf point: HistoryPointInTime) throws(LatticeError) -> Record? {
        try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(recordID.zoneID, in: snapshot)
                try requireReplicated(zone, in: snapshot)
                let held = try snapshot.record(recordID.recordName, in: zone, asOf: point.storePoint)
                guard let fields = held.fields, let type = held.recordType else { return nil }
                var record = Record(recordType: type, recordID: recordID)
                for (name, value) in fields { record[name] = value }
                return record
            }
        }
    }

    /// Every version of the record's fields this device holds history of, oldest first.
    public func recordHistory(_ recordID: Record.ID) throws(LatticeError) -> [RecordVersion] {
        try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(recordID.zoneID, in: snapshot)
                try requireReplicated(zone, in: snapshot)
                var filter = HistoryFilter()
                filter.zone = zone
                filter.record = recordID.recordName
                let entries = try snapshot.historyEntries(filter)
                let reader = HistoryReader(snapshot: snapshot, container: container)
                // Read backwards from the present: the value after an entry is the one before the next.
                var after: [String: FieldValue]? = try snapshot.record(recordID.recordName, in: zone)
                    .flatMap { $0.isAlive ? $0.liveFieldValues : nil }
                var versions: [RecordVersion] = []
                for entry in entries.reversed() {
                    let author = try reader.device(of: entry.author)
                    let identifier = HistoryReader.identifier(author: author, commit: entry.commit)
                    let kind = HistoryChangeKind(entry.kind)
                    var rows: [RecordVersion] = []
                    for change in entry.changes {
                        rows.append(RecordVersion(
                            token: HistoryToken(entry: entry.id), transactionIdentifier: identifier, author: author,
                            storedAt: Date(timeIntervalSince1970: Double(entry.storedAt) / 1000),
                            stampMilliseconds: Int64(change.stamp.time.milliseconds), stampCounter: Int(change.stamp.time.counter), kind: kind, field: change.field,
                            oldValue: change.oldValue, newValue: change.lost ? change.oldValue ?? nil : after?[change.field],
                            lost: change.lost, conflicted: change.conflicted))
                    }
                    if rows.isEmpty {
                        rows.append(RecordVersion(
                            token: HistoryToken(entry: entry.id), transactionIdentifier: identifier, author: author,
                            storedAt: Date(timeIntervalSince1970: Double(entry.storedAt) / 1000),
                            stampMilliseconds: Int64(entry.commit.milliseconds), stampCounter: Int(entry.commit.counter), kind: kind, field: nil,
                            oldValue: nil, newValue: nil, lost: false, conflicted: false))
                    }
                    versions.append(contentsOf: rows.reversed())
                    after = HistoryDiff.undo(kind: entry.kind, changes: entry.changes, from: after)
                }
                return versions.reversed()
            }
        }
    }

    /// Writes the record's values as of `point` as a new save (or a delete,
    /// if it did not exist then): a write like any other, that syncs and
    /// wins as the latest. The past is not rewritten. Returns the record as
    /// saved, or nil when the restore deleted it.
    @discardableResult
    public func restore(_ recordID: Record.ID, to point: HistoryPointInTime) throws(LatticeError) -> Record? {
        guard let old = try record(recordID, asOf: point) else {
            if (try? record(for: recordID)) != nil { try deleteRecord(withID: recordID) }
            return nil
        }
        var restored = Record(recordType: old.recordType, recordID: recordID)
        for (name, value) in old.fields { restored[name] = value }
        return try save(restored, savePolicy: .allKeys)
    }

    /// Zones turned off on this device (selective sync) say so: never an empty answer.
    func requireReplicated(_ zone: ZoneKey, in snapshot: StoreSnapshot) throws {
        if try snapshot.isExcluded(zone) {
            throw LatticeError(.zoneNotFound, "zone \(zone.zoneID) is not replicated on this device (selective sync); `lattice zone sync \(zone.zoneID.zoneName) --on` fetches it")
        }
    }

    static func replica(ofDevice device: String) throws -> ReplicaID {
        if let replica = ReplicaID(canonicalHex: device) { return replica }
        guard let digest = DeviceID(device) else {
            throw LatticeError(.invalidArguments, "\(device) is not a device ID (`lattice id` prints one) or a 32-hex-digit replica")
        }
        return ReplicaID(device: digest)
    }
}

extension HistoryPointInTime {
    var storePoint: HistoryPoint {
        switch self {
        case .token(let token): return .token(token.entry)
        case .date(let date): return .time(milliseconds: UInt64(max(0, date.timeIntervalSince1970 * 1000)))
        }
    }
}

extension HistoryChangeKind {
    init(_ kind: HistoryKind) {
        switch kind {
        case .insert: self = .insert
        case .update: self = .update
        case .delete: self = .delete
        case .replace: self = .replace
        }
    }
}

/// Reads history entries as transactions: entries of one local commit and
/// one writer commit are one transaction.
struct HistoryReader {
    let snapshot: StoreSnapshot
    let container: Container
    private final class Devices { var byReplica: [ReplicaID: String] = [:] }
    private let devices = Devices()

    init(snapshot: StoreSnapshot, container: Container) {
        self.snapshot = snapshot
        self.container = container
    }

    static func identifier(author: String, commit: HLCTimestamp) -> String { "\(author)/\(commit.rawValue)" }

    /// The device ID a replica writes as, from the key its blocks are signed with
    /// (this device's own, else a kept block's); its hex form when no key is kept.
    func device(of replica: ReplicaID) throws -> String {
        if let known = devices.byReplica[replica] { return known }
        let own = container.store.identity.deviceID
        var name = replica.description
        if replica == ReplicaID(device: own) {
            name = own.description
        } else if let key = try snapshot.signingKey(of: replica), let device = try? DeviceID(publicKey: key) {
            name = device.description
        }
        devices.byReplica[replica] = name
        return name
    }

    func transactions(_ filter: HistoryFilter, limit: Int?) throws -> [DatabaseTransaction] {
        var transactions: [DatabaseTransaction] = []
        var page = filter
        // A limited read takes about as many entries as it returns (most commits are an entry each).
        let pageSize = min(4096, (limit ?? 1024) + 16)
        page.limit = pageSize
        // Entries of one local commit are grouped: a page ends only at a commit's end.
        var pending: [HistoryEntry] = []
        func flush() throws {
            guard !pending.isEmpty else { return }
            let grouped = try group(pending)
            transactions.append(contentsOf: filter.newestFirst ? grouped.reversed() : grouped)
            pending = []
        }
        while true {
            let entries = try snapshot.historyEntries(page)
            for entry in entries {
                if let last = pending.last, last.sequence != entry.sequence { try flush() }
                if let limit, transactions.count >= limit { return Array(transactions.prefix(limit)) }
                pending.append(entry)
            }
            guard entries.count == pageSize, let last = entries.last else { break }
            if filter.newestFirst { page.through = last.id - 1 } else { page.after = last.id }
        }
        try flush()
        return limit.map { Array(transactions.prefix($0)) } ?? transactions
    }

    /// One local commit's entries as transactions, one per writer commit, in the order stored.
    private func group(_ entries: [HistoryEntry]) throws -> [DatabaseTransaction] {
        struct Commit: Hashable {
            var author: ReplicaID
            var time: HLCTimestamp
        }
        let ordered = entries.count > 1 && entries[0].id > entries[1].id ? entries.reversed() : entries
        var transactions: [DatabaseTransaction] = []
        var index: [Commit: Int] = [:]
        for entry in ordered {
            let change = HistoryRecordChange(
                kind: HistoryChangeKind(entry.kind), recordID: Record.ID(recordName: entry.record, zoneID: entry.zone.zoneID),
                recordType: entry.recordType, fields: entry.changes.map(HistoryFieldChange.init))
            let key = Commit(author: entry.author, time: entry.commit)
            guard let at = index[key] else {
                let author = try device(of: entry.author)
                index[key] = transactions.count
                transactions.append(DatabaseTransaction(
                    transactionIdentifier: Self.identifier(author: author, commit: entry.commit), author: author, contextAuthor: entry.context,
                    timestamp: Date(timeIntervalSince1970: Double(entry.commit.milliseconds) / 1000),
                    storedAt: Date(timeIntervalSince1970: Double(entry.storedAt) / 1000), token: HistoryToken(entry: entry.id),
                    databaseScope: entry.zone.scope, changes: [change], entryIDs: [entry.id]))
                continue
            }
            transactions[at].changes.append(change)
            transactions[at].entryIDs.append(entry.id)
            transactions[at].token = max(transactions[at].token, HistoryToken(entry: entry.id))
        }
        // A transaction's token covers its commit's entries: the last transaction's covers them all.
        if let end = ordered.last, !transactions.isEmpty { transactions[transactions.count - 1].token = HistoryToken(entry: end.id) }
        return transactions
    }
}

extension HistoryFieldChange {
    init(_ change: LatticeCore.HistoryFieldChange) {
        self.init(
            field: change.field, oldValue: change.oldValue, removed: change.removed, lost: change.lost, conflicted: change.conflicted,
            stampMilliseconds: Int64(change.stamp.time.milliseconds), stampCounter: Int(change.stamp.time.counter))
    }
}

/// Whether and how long a store keeps history, and how much it holds.
public struct HistorySettings: Sendable, Codable {
    /// Whether history is kept (it is unless turned off).
    public var isKept: Bool
    /// Days entries are kept (30 by default).
    public var retentionDays: Int
    /// Entries kept.
    public var entries: Int
    /// About how many bytes they take.
    public var bytes: Int64
}

extension Container {
    /// Whether and how long history is kept, and its size.
    public func historySettings() throws(LatticeError) -> HistorySettings {
        try LatticeError.wrap {
            try store.read { snapshot in
                let size = try snapshot.historySize()
                return HistorySettings(isKept: try snapshot.keepsHistory(), retentionDays: try snapshot.historyDays(), entries: size.entries, bytes: size.bytes)
            }
        }
    }

    /// Keeps history (the default) or stops: a store without it writes none
    /// and costs nothing extra. History kept again is complete from then on.
    public func setHistoryKept(_ kept: Bool) throws(LatticeError) {
        try LatticeError.wrap { try store.write { try $0.setHistoryKept(kept) } }
    }

    /// Keeps history `days` days (at least 1); older entries go as commits are made.
    public func setHistoryRetention(days: Int) throws(LatticeError) {
        guard days >= 1 else { throw LatticeError(.invalidArguments, "history is kept at least 1 day (turn it off with setHistoryKept(false))") }
        try LatticeError.wrap {
            try store.write { transaction in
                try transaction.setHistoryDays(days)
                try transaction.collectHistory()
            }
        }
    }

    /// Deletes history up to and including `token` (SwiftData's `deleteHistory`);
    /// returns how many entries went. Reads as of a point before them fail from then on.
    @discardableResult
    public func deleteHistory(through token: HistoryToken) throws(LatticeError) -> Int {
        try LatticeError.wrap { try store.write { try $0.deleteHistory(before: token.entry + 1) } }
    }

    /// Deletes the given entries (`ModelContext.deleteHistory`); reads as of
    /// a point before the last of them fail from then on.
    @discardableResult
    func deleteHistory(entries: [Int64]) throws(LatticeError) -> Int {
        try LatticeError.wrap { try store.write { try $0.deleteHistory(ids: entries) } }
    }
}
