import Foundation
@_spi(Tools) import LatticeCore

/// A change to a container's objects, or a step of its sync.
public enum ModelEvent: Sendable, Hashable {
    case inserted(PersistentIdentifier)
    case updated(PersistentIdentifier)
    case deleted(PersistentIdentifier)
    case sync(SyncEvent)
}

/// A step of sync with one peer, as `NSPersistentCloudKitContainer.Event`:
/// setup when a connection is made, import while a peer's changes arrive,
/// export while this device's changes go out. Sent when a step starts
/// (`endDate` nil) and when it ends.
public struct SyncEvent: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case setup, `import`, export }

    public var kind: Kind
    /// The peer's device ID.
    public var peer: String
    public var startDate: Date
    public var endDate: Date?
    /// Whether the step ended well; nil while it runs.
    public var succeeded: Bool?
}

/// Fans the store's commits and the node's events out to every `changes()` stream.
final class ModelEventHub: @unchecked Sendable {
    private let database: Database
    private let zoneID: Zone.ID
    private let recordTypes: Set<String>
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<ModelEvent>.Continuation] = [:]
    private var tasks: [Task<Void, Never>] = []
    private var watching = false
    private var running: [String: Date] = [:]

    init(database: Database, zoneID: Zone.ID, recordTypes: Set<String>) {
        self.database = database
        self.zoneID = zoneID
        self.recordTypes = recordTypes
    }

    func subscribe() -> AsyncStream<ModelEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ModelEvent.self, bufferingPolicy: .bufferingNewest(10_000))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        lock.lock()
        subscribers[id] = continuation
        let start = !watching
        watching = true
        lock.unlock()
        if start { watchCommits() }
        return stream
    }

    private func remove(_ id: UUID) {
        lock.lock()
        subscribers[id] = nil
        lock.unlock()
    }

    private func broadcast(_ event: ModelEvent) {
        lock.lock()
        let targets = Array(subscribers.values)
        lock.unlock()
        for continuation in targets { continuation.yield(event) }
    }

    private func watchCommits() {
        guard let notifications = try? database.notifications(for: .zone(zoneID)) else { return }
        let recordTypes = recordTypes
        let task = Task { [weak self] in
            do {
                for try await notification in notifications {
                    guard let self, recordTypes.contains(notification.recordType) else { continue }
                    let id = PersistentIdentifier(recordType: notification.recordType, recordID: notification.recordID)
                    switch notification.reason {
                    case .recordCreated: self.broadcast(.inserted(id))
                    case .recordUpdated: self.broadcast(.updated(id))
                    case .recordDeleted: self.broadcast(.deleted(id))
                    }
                }
            } catch {}
        }
        lock.lock()
        tasks.append(task)
        lock.unlock()
    }

    /// Republishes the node's events as setup, import and export steps.
    func follow(_ node: SyncNode) {
        let task = Task { [weak self] in
            for await event in node.events {
                guard let self else { return }
                for step in self.steps(for: event) { self.broadcast(.sync(step)) }
            }
        }
        lock.lock()
        tasks.append(task)
        lock.unlock()
    }

    private func steps(for event: SyncNode.Event) -> [SyncEvent] {
        let now = Date()
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .connected(let peer, _):
            return [SyncEvent(kind: .setup, peer: peer, startDate: now, endDate: now, succeeded: true)]
        case .syncStarted(let peer, _, let direction, _, _):
            let kind: SyncEvent.Kind = direction == .receiving ? .import : .export
            let key = "\(peer) \(kind.rawValue)"
            guard running[key] == nil else { return [] }
            running[key] = now
            return [SyncEvent(kind: kind, peer: peer, startDate: now, endDate: nil, succeeded: nil)]
        case .syncFinished(let peer, _, let direction):
            let kind: SyncEvent.Kind = direction == .receiving ? .import : .export
            guard let start = running.removeValue(forKey: "\(peer) \(kind.rawValue)") else { return [] }
            return [SyncEvent(kind: kind, peer: peer, startDate: start, endDate: now, succeeded: true)]
        case .disconnected(let peer?, _, _):
            var ended: [SyncEvent] = []
            for kind in [SyncEvent.Kind.import, .export] {
                if let start = running.removeValue(forKey: "\(peer) \(kind.rawValue)") {
                    ended.append(SyncEvent(kind: kind, peer: peer, startDate: start, endDate: now, succeeded: false))
                }
            }
            return ended
        default:
            return []
        }
    }

    func finish() {
        lock.lock()
        let targets = Array(subscribers.values)
        subscribers = [:]
        let running = tasks
        tasks = []
        lock.unlock()
        for task in running { task.cancel() }
        for continuation in targets { continuation.finish() }
    }
}
