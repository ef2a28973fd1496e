import Foundation
import Lattice

/// `GET …/events`: a server-sent event stream of one database's record
/// changes (`event: record`) and of the node's sync events (`event: sync`),
/// as `lattice watch` and `lattice serve --json` print them. After each
/// round of changes comes `event: token` with `id:` set to a database change
/// token: a client that reconnects with `Last-Event-ID` (or `?since=TOKEN`)
/// gets what it missed. `?zone=NAME` (repeatable as `zone=A,B`) narrows it to zones.
struct EventStreamSource: Sendable {
    let database: Database
    let hub: EventHub
    /// Zones to follow (nil: every zone of the database, as they come).
    let zones: [Zone.ID]?
    let since: DatabaseChangeToken?
    /// How often a comment keeps idle connections (and proxies) open.
    static let heartbeat: Duration = .seconds(15)

    init(request: WebRequest, database: Database, hub: EventHub) throws {
        self.database = database
        self.hub = hub
        zones = request.query["zone"].map { $0.split(separator: ",").map { Zone.ID(zoneName: String($0)) } }
        let resumeFrom = request.query["since"] ?? request.headers.first(name: "last-event-id")
        do {
            since = try resumeFrom.map { try DatabaseChangeToken(stringValue: $0) }
            for zone in zones ?? [] { _ = try database.currentChangeToken(inZoneWith: try database.resolveZoneID(zone)) }
        } catch {
            throw WebError.from(error)
        }
    }

    private enum Wake: Sendable {
        case commit
        case event(SyncNode.Event)
        case heartbeat
    }

    /// Streams until `send` says the client is gone (or the task is cancelled).
    func run(send: @escaping @Sendable (String) async -> Bool) async {
        let (wakes, wake) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .unbounded)
        let feeders = [
            Task { for await event in hub.subscribe() { wake.yield(.event(event)) } },
            Task { for await _ in database.container.commits() { wake.yield(.commit) } },
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.heartbeat)
                    wake.yield(.heartbeat)
                }
            },
        ]
        defer { for feeder in feeders { feeder.cancel() } }
        var follower = ChangeFollower(database: database, zones: zones)
        guard await send("retry: 1000\n\n") else { return }
        do {
            try follower.start(since: since)
            if since != nil, await !sendChanges(&follower, send: send) { return }
        } catch {
            _ = await send(Self.message(event: "error", data: Self.json(WebError.from(error).body)))
            return
        }
        var coalescedCommit = false
        for await next in wakes {
            if Task.isCancelled { return }
            switch next {
            case .commit:
                coalescedCommit = true
            case .event(let event):
                guard await send(Self.message(event: "sync", data: Self.json(event))) else { return }
            case .heartbeat:
                guard await send(": keep-alive\n\n") else { return }
            }
            if coalescedCommit {
                coalescedCommit = false
                guard await sendChanges(&follower, send: send) else { return }
            }
        }
    }

    private func sendChanges(_ follower: inout ChangeFollower, send: @Sendable (String) async -> Bool) async -> Bool {
        do {
            let round = try follower.next()
            let container = database.container
            for change in round.changes {
                let event = RecordChangeEvent(reason: change.reason, zoneID: WebServicesZoneID(change.zoneID), recordName: change.recordName, recordType: change.recordType,
                                              record: change.record.map { WebServicesRecord($0, assetURL: { container.fileURL(for: $0) }) })
                guard await send(Self.message(event: "record", data: Self.json(event))) else { return false }
            }
            if !round.changes.isEmpty || round.reset {
                return await send(Self.message(event: "token", data: Self.json(["syncToken": round.token.description]), id: round.token.description))
            }
            return true
        } catch {
            return await send(Self.message(event: "error", data: Self.json(WebError.from(error).body)))
        }
    }

    static func message(event: String, data: String, id: String? = nil) -> String {
        (id.map { "id: \($0)\n" } ?? "") + "event: \(event)\n" + "data: \(data)\n\n"
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// One change of a record as the stream sends it.
struct RecordChangeEvent: Encodable {
    var reason: String
    var zoneID: WebServicesZoneID
    var recordName: String
    var recordType: String
    var record: WebServicesRecord?
}

/// A record's change as the follower reads it.
struct FollowedChange: Sendable {
    var reason: String
    var zoneID: Zone.ID
    var recordName: String
    var recordType: String
    /// The record as saved; nil for a deletion.
    var record: Record?
}

/// Follows every zone's changes from a database token, zone by zone: each
/// zone keeps its own token, so nothing is missed or sent twice between rounds.
struct ChangeFollower {
    let database: Database
    let zones: [Zone.ID]?
    private var tokens: [Zone.ID: ChangeToken] = [:]
    private var start: DatabaseChangeToken?

    init(database: Database, zones: [Zone.ID]?) {
        self.database = database
        self.zones = zones
    }

    mutating func start(since: DatabaseChangeToken?) throws {
        start = try since ?? database.currentDatabaseChangeToken()
    }

    /// The changes since the last round, and the token to resume from after them.
    mutating func next() throws -> (changes: [FollowedChange], token: DatabaseChangeToken, reset: Bool) {
        guard let start else { throw LatticeError(.internalError, "the change follower was not started") }
        let followed = try zones.map { try $0.map { try database.resolveZoneID($0) } } ?? database.allRecordZones().map(\.zoneID)
        var changes: [FollowedChange] = []
        var reset = false
        var resume: DatabaseChangeToken?
        for zoneID in followed {
            var token = try tokens[zoneID] ?? database.changeToken(inZoneWith: zoneID, at: start)
            while true {
                let page: ZoneChanges
                if let current = try Self.changes(in: zoneID, since: token, database: database) {
                    page = current
                } else {
                    // Re-created or collected since: what the zone holds now, whole.
                    reset = true
                    page = try database.recordZoneChanges(inZoneWith: zoneID, since: nil, resultsLimit: 1_000)
                }
                for record in page.modifications {
                    let created = record.creationDate == record.modificationDate
                    changes.append(FollowedChange(reason: created ? "recordCreated" : "recordUpdated", zoneID: zoneID, recordName: record.recordID.recordName,
                                                  recordType: record.recordType, record: record))
                }
                for deletion in page.deletions {
                    changes.append(FollowedChange(reason: "recordDeleted", zoneID: zoneID, recordName: deletion.recordID.recordName, recordType: deletion.recordType))
                }
                token = page.changeToken
                if !page.moreComing { break }
            }
            tokens[zoneID] = token
            resume = resume.map { DatabaseChangeToken.earlier($0, token.databaseToken) } ?? token.databaseToken
        }
        return (changes, resume ?? start, reset)
    }

    /// A page of a zone's changes; nil when the token expired.
    private static func changes(in zoneID: Zone.ID, since token: ChangeToken, database: Database) throws -> ZoneChanges? {
        do {
            return try database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: 1_000)
        } catch {
            if error.code == .changeTokenExpired { return nil }
            throw error
        }
    }
}
