import ArgumentParser
import Foundation
import Lattice

/// `lattice history`: the transactions this device stored, and how long it keeps them.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history",
        abstract: "List the transactions this device stored: who wrote what, when, and what it replaced.",
        discussion: """
            One transaction per writer commit, in the order this device stored them, each with its author
            (a device ID, checked against the writer's signature when the writes arrived) and, for a write
            made here, the app's author string. --since takes a token (h42, as printed) or a time
            (ISO 8601, or 30s, 10m, 2h, 7d ago). History is kept 30 days unless --retain-days says otherwise;
            --off stops keeping it (costing nothing), --on starts again (complete from then on).
            Examples: lattice history Movies --since 2h
                      lattice history Movies/toy-story --json
                      lattice history --retain-days 90
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "ZONE or ZONE/NAME (without it: every zone of the database).") var path: String?
    @Option(help: "After this token (h42) or since this time (ISO 8601, or 10m, 2h, 7d ago).") var since: String?
    @Option(help: "Only transactions by this device ID.") var author: String?
    @Option(help: "At most this many transactions.") var limit: Int?
    @Flag(name: .customLong("newest-first"), help: "Newest transactions first.") var newestFirst = false
    @Option(name: .customLong("retain-days"), help: "Keep history this many days (default 30).") var retainDays: Int?
    @Flag(help: "Stop keeping history.") var off = false
    @Flag(help: "Keep history again.") var on = false
    @Option(name: .customLong("delete-through"), help: "Delete history up to and including this token (SwiftData's deleteHistory).") var deleteThrough: String?

    func validate() throws {
        if off && on { throw ValidationError("--off and --on cannot be combined") }
        if let retainDays, retainDays < 1 { throw ValidationError("--retain-days must be at least 1") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let since { _ = try HistoryPointArgument(parsing: since) }
        if let deleteThrough, HistoryToken(deleteThrough) == nil { throw ValidationError("--delete-through takes a token as printed (h42)") }
    }

    func run() throws {
        let container = try options.values.openContainer(forOneCommand: true)
        let database = container.database(with: options.scope)
        if off || on || retainDays != nil || deleteThrough != nil {
            if off || on { try library { try container.setHistoryKept(on) } }
            if let retainDays { try library { try container.setHistoryRetention(days: retainDays) } }
            var deleted: Int?
            if let deleteThrough { deleted = try library { try container.deleteHistory(through: HistoryToken(deleteThrough)!) } }
            let settings = try library { try container.historySettings() }
            Output.emit(HistorySettingsOutput(settings: settings, deleted: deleted), json: options.json)
            return
        }
        var zoneID: Zone.ID?
        var recordName: String?
        if let path {
            if path.contains("/") {
                let target = try RecordPath(parsing: path).resolved(in: database)
                zoneID = target.zoneID
                recordName = target.recordName
            } else {
                zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: path)) }
            }
        }
        var token: HistoryToken?
        var storedSince: Date?
        switch try since.map(HistoryPointArgument.init(parsing:)) {
        case .token(let value): token = value
        case .date(let date): storedSince = date
        case nil: break
        }
        let transactions = try library {
            try database.history(since: token, in: zoneID, record: recordName, author: author, storedSince: storedSince, newestFirst: newestFirst, limit: limit)
        }
        Output.emit(HistoryOutput(transactions: transactions), json: options.json)
    }
}

/// A point of history as the command line names it: a token or a time.
enum HistoryPointArgument {
    case token(HistoryToken)
    case date(Date)

    init(parsing text: String) throws {
        if let token = HistoryToken(text) { self = .token(token); return }
        if let milliseconds = ISO8601Milliseconds.parse(text) { self = .date(Date(timeIntervalSince1970: Double(milliseconds) / 1000)); return }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        if let unit = text.last.flatMap({ units[$0] }), let count = Double(text.dropLast()), count >= 0 {
            self = .date(Date(timeIntervalSinceNow: -count * unit))
            return
        }
        throw ValidationError("\(text) is neither a history token (h42) nor a time (ISO 8601 such as 2026-11-29T12:00:00Z, or 30s, 10m, 2h, 7d ago)")
    }

    var point: HistoryPointInTime {
        switch self {
        case .token(let token): return .token(token)
        case .date(let date): return .date(date)
        }
    }
}

/// What `lattice history` prints: transactions, oldest first (or as asked), and the token to read on from.
struct HistoryOutput: CommandOutput {
    struct Field: Encodable {
        var field: String
        var oldValue: WebServicesField?
        var removed: Bool
        var lost: Bool
        var conflicted: Bool
    }
    struct Change: Encodable {
        var kind: String
        var zoneName: String
        var recordName: String
        var recordType: String
        var fields: [Field]
    }
    struct Transaction: Encodable {
        var token: String
        var transactionIdentifier: String
        var author: String
        var contextAuthor: String?
        var timestamp: String
        var storedAt: String
        var database: String
        var changes: [Change]
    }
    var transactions: [Transaction]
    /// The last token listed: `--since` it lists what comes next.
    var token: String?

    init(transactions list: [DatabaseTransaction]) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        transactions = list.map { transaction in
            Transaction(
                token: transaction.token.description, transactionIdentifier: transaction.transactionIdentifier, author: transaction.author,
                contextAuthor: transaction.contextAuthor, timestamp: formatter.string(from: transaction.timestamp),
                storedAt: formatter.string(from: transaction.storedAt), database: "\(transaction.databaseScope)",
                changes: transaction.changes.map { change in
                    Change(kind: change.kind.rawValue, zoneName: change.recordID.zoneID.zoneName, recordName: change.recordID.recordName,
                           recordType: change.recordType, fields: change.fields.map { field in
                               Field(field: field.field, oldValue: field.oldValue.map { WebServicesField($0) }, removed: field.removed, lost: field.lost, conflicted: field.conflicted)
                           })
                })
        }
        token = list.map(\.token).max()?.description
    }

    var text: String {
        transactions.map { transaction in
            let who = String(transaction.author.prefix(12)) + (transaction.contextAuthor.map { " (\($0))" } ?? "")
            var lines = ["\(transaction.token)  \(transaction.timestamp)  by \(who)"]
            for change in transaction.changes {
                let fields = change.fields.map { field in
                    var text = field.field
                    if field.lost { text += " (lost, conflict)" } else if field.conflicted { text += " (conflict)" }
                    if field.removed, change.kind == "update" { text += " (removed)" }
                    return text
                }
                lines.append("  \(change.kind) \(change.zoneName)/\(change.recordName) (\(change.recordType))" + (fields.isEmpty || change.kind == "delete" ? "" : ": " + fields.joined(separator: ", ")))
            }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

/// What `lattice history --retain-days|--off|--on|--delete-through` prints.
struct HistorySettingsOutput: CommandOutput {
    var kept: Bool
    var retainDays: Int
    var entries: Int
    var bytes: Int64
    var deleted: Int?

    init(settings: HistorySettings, deleted: Int?) {
        kept = settings.isKept
        retainDays = settings.retentionDays
        entries = settings.entries
        bytes = settings.bytes
        self.deleted = deleted
    }

    var text: String {
        var lines = [kept ? "history kept \(retainDays) days: \(Output.count(entries, "entry", plural: "entries")), \(AssetQuota.describe(bytes))" : "history off (\(Output.count(entries, "entry", plural: "entries")) kept from before)"]
        if let deleted { lines.append("deleted \(Output.count(deleted, "entry", plural: "entries"))") }
        return lines.joined(separator: "\n")
    }
}
