import Foundation
import Lattice
import NIOPosix

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

    /// What woke the stream, gathered under a lock between its rounds: the
    /// commit flag coalesces any number of commits, sync events are kept up
    /// to `EventHub.backlog` (older ones are counted as dropped), so a client
    /// that reads slowly costs a bounded amount of memory.
    final class Pending: @unchecked Sendable {
        private let lock = NSLock()
        private var commit = false
        private var heartbeat = false
        private var events: [SyncNode.Event] = []
        private var dropped = 0

        func noteCommit() { lock.withLock { commit = true } }
        func noteHeartbeat() { lock.withLock { heartbeat = true } }
        func note(_ event: SyncNode.Event) {
            lock.withLock {
                events.append(event)
                if events.count > EventHub.backlog {
                    events.removeFirst(events.count - EventHub.backlog)
                    dropped += 1
                }
            }
        }

        func take() -> (commit: Bool, heartbeat: Bool, events: [SyncNode.Event], dropped: Int) {
            lock.withLock {
                defer { commit = false; heartbeat = false; events = []; dropped = 0 }
                return (commit, heartbeat, events, dropped)
            }
        }
    }

    /// Streams until `send` says the client is gone (or the task is cancelled).
    /// Store reads run on `pool`, never on the tasks' shared threads.
    func run(pool: NIOThreadPool, send: @escaping @Sendable (String) async -> Bool) async {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let pending = Pending()
        let events = hub.subscribe()
        let commits = database.container.commits()
        let feeders = [
            Task { for await event in events { pending.note(event); wake.yield(()) } },
            Task { for await _ in commits { pending.noteCommit(); wake.yield(()) } },
            Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.heartbeat)
                    pending.noteHeartbeat()
                    wake.yield(())
                }
            },
        ]
        defer { for feeder in feeders { feeder.cancel() } }
        let follower = ChangeFollower(database: database, zones: zones)
        guard await send("retry: 1000\n\n") else { return }
        do {
            let start = try await pool.runIfActive { try follower.start(since: since) }
            // The position at once: a client that reconnects before any change resumes from here, not from "now".
            guard await send(Self.message(event: "token", data: Self.json(["syncToken": start.description]), id: start.description)) else { return }
            if since != nil, await !sendChanges(follower, pool: pool, send: send) { return }
        } catch {
            _ = await send(Self.message(event: "error", data: Self.json(WebError.from(error).body)))
            return
        }
        for await _ in wakes {
            if Task.isCancelled { return }
            let next = pending.take()
            if next.dropped > 0, await !send(Self.message(event: "dropped", data: Self.json(["events": next.dropped]))) { return }
            for event in next.events {
                guard await send(Self.message(event: "sync", data: Self.json(event))) else { return }
            }
            if next.heartbeat, await !send(": keep-alive\n\n") { return }
            if next.commit, await !sendChanges(follower, pool: pool, send: send) { return }
        }
    }

    /// Sends what changed since the last round, a page at a time, then the token to resume from.
    private func sendChanges(_ follower: ChangeFollower, pool: NIOThreadPool, send: @Sendable (String) async -> Bool) async -> Bool {
        let container = database.container
        do {
            while true {
                // The page becomes its messages on the pool; what waits for a slow client is text, not records.
                let page = try await pool.runIfActive { () -> (messages: [String], token: DatabaseChangeToken, reset: Bool, moreComing: Bool) in
                    let read = try follower.next()
                    let messages = read.changes.map { change in
                        Self.message(event: "record", data: Self.json(RecordChangeEvent(
                            reason: change.reason, zoneID: WebServicesZoneID(change.zoneID), recordName: change.recordName, recordType: change.recordType,
                            record: change.record.map { WebServicesRecord($0, assetURL: { container.fileURL(for: $0) }) })))
                    }
                    return (messages, read.token, read.reset, read.moreComing)
                }
                for message in page.messages {
                    guard await send(message) else { return false }
                }
                if !page.messages.isEmpty || page.reset {
                    guard await send(Self.message(event: "token", data: Self.json(["syncToken": page.token.description]), id: page.token.description)) else { return false }
                }
                if !page.moreComing { return true }
            }
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
/// zone keeps its own token, so nothing is missed or sent twice between
/// rounds, and a round's tokens count only once the whole round was read.
/// Used by one task at a time (its calls run on the server's thread pool).
final class ChangeFollower: @unchecked Sendable {
    let database: Database
    let zones: [Zone.ID]?
    private var tokens: [Zone.ID: ChangeToken] = [:]
    private var start: DatabaseChangeToken?
    /// Records read per call at most (a zone's page; one commit larger than it comes whole).
    let pageSize: Int

    /// `pageSize`: an event stream reads 100 at a time, what one slow client may hold.
    init(database: Database, zones: [Zone.ID]?, pageSize: Int = 100) {
        self.database = database
        self.zones = zones
        self.pageSize = pageSize
    }

    /// Starts from `since` (now when nil); returns where it starts.
    func start(since: DatabaseChangeToken?) throws -> DatabaseChangeToken {
        let token = try since ?? database.currentDatabaseChangeToken()
        start = token
        return token
    }

    /// The next page of changes (about `pageSize` records), whether more are
    /// waiting, and the token to resume from after it.
    func next() throws -> (changes: [FollowedChange], token: DatabaseChangeToken, reset: Bool, moreComing: Bool) {
        guard let start else { throw LatticeError(.internalError, "the change follower was not started") }
        let followed = try zones.map { try $0.map { try database.resolveZoneID($0) } } ?? database.allRecordZones().map(\.zoneID)
        var changes: [FollowedChange] = []
        var reset = false
        var moreComing = false
        var read: [Zone.ID: ChangeToken] = [:]
        for zoneID in followed {
            let token = try tokens[zoneID] ?? database.changeToken(inZoneWith: zoneID, at: start)
            guard changes.count < pageSize else {
                moreComing = true
                read[zoneID] = token
                continue
            }
            let page: ZoneChanges
            if let current = try Self.changes(in: zoneID, since: token, limit: pageSize, database: database) {
                page = current
            } else {
                // Re-created or collected since: what the zone holds now, whole.
                reset = true
                page = try database.recordZoneChanges(inZoneWith: zoneID, since: nil, resultsLimit: pageSize)
            }
            for record in page.modifications {
                let created = record.creationDate == record.modificationDate
                changes.append(FollowedChange(reason: created ? "recordCreated" : "recordUpdated", zoneID: zoneID, recordName: record.recordID.recordName,
                                              recordType: record.recordType, record: record))
            }
            for deletion in page.deletions {
                changes.append(FollowedChange(reason: "recordDeleted", zoneID: zoneID, recordName: deletion.recordID.recordName, recordType: deletion.recordType))
            }
            read[zoneID] = page.changeToken
            moreComing = moreComing || page.moreComing
        }
        tokens.merge(read) { _, new in new }
        let resume = read.values.map(\.databaseToken).reduce(nil) { earliest, token in earliest.map { DatabaseChangeToken.earlier($0, token) } ?? token }
        return (changes, resume ?? start, reset, moreComing)
    }

    /// A page of a zone's changes; nil when the token expired.
    private static func changes(in zoneID: Zone.ID, since token: ChangeToken, limit: Int, database: Database) throws -> ZoneChanges? {
        do {
            return try database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: limit)
        } catch {
            if error.code == .changeTokenExpired { return nil }
            throw error
        }
    }
}
