import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

/// What to be told about, as `CKRecordZoneSubscription` and `CKQuerySubscription`.
public enum Subscription: Sendable {
    /// Every change in a zone.
    case zone(Zone.ID)
    /// Records of a type in a zone that match a predicate (and their deletions).
    case query(recordType: String, predicate: QueryPredicate, zoneID: Zone.ID)
}

/// One change a subscription delivers.
public struct RecordNotification: Sendable {
    public enum Reason: String, Sendable {
        case recordCreated, recordUpdated, recordDeleted
    }

    public var reason: Reason
    public var recordID: Record.ID
    public var recordType: String
    /// The record as saved; nil for deletions.
    public var record: Record?
}

extension Database {
    /// Changes as they commit, from this process or any other on the same
    /// store, until the stream's consumer stops. Every commit wakes the stream
    /// at once (the store's wake-up sockets, as the sync node uses); where the
    /// store's path is too long for a Unix socket, it polls every `interval` seconds instead.
    public func notifications(for subscription: Subscription, interval: Double = 0.02) throws(LatticeError) -> AsyncThrowingStream<RecordNotification, Error> {
        let zoneID: Zone.ID
        switch subscription {
        case .zone(let id): zoneID = id
        case .query(let recordType, let predicate, let id):
            try RecordValidation.checkIdentifier(recordType, what: "record type")
            if let problem = predicate.validationError() { throw LatticeError(.invalidArguments, "invalid predicate: \(problem)") }
            zoneID = id
        }
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let watcher = try? CommitWatcher(store: store.directory) { wake.yield(()) }
        // Start from now: what is already there is not news.
        let start = try currentChangeToken(inZoneWith: zoneID)
        let database = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                var token = start
                var nextWake = wakes.makeAsyncIterator()
                do {
                    while !Task.isCancelled {
                        let changes = try await database.recordZoneChanges(inZoneWith: zoneID, since: token)
                        for record in changes.modifications where subscription.wants(record) {
                            let created = record.creationDate == record.modificationDate
                            continuation.yield(RecordNotification(reason: created ? .recordCreated : .recordUpdated, recordID: record.recordID, recordType: record.recordType, record: record))
                        }
                        for deletion in changes.deletions where subscription.wantsDeletion(of: deletion.recordType) {
                            continuation.yield(RecordNotification(reason: .recordDeleted, recordID: deletion.recordID, recordType: deletion.recordType, record: nil))
                        }
                        token = changes.changeToken
                        guard !changes.moreComing else { continue }
                        if watcher != nil {
                            guard await nextWake.next() != nil else { break }
                        } else {
                            try await Task.sleep(nanoseconds: UInt64(interval * 1e9))
                        }
                    }
                    continuation.finish()
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in
                watcher?.stop()
                wake.finish()
                task.cancel()
            }
        }
    }
}

extension Subscription {
    func wants(_ record: Record) -> Bool {
        switch self {
        case .zone: return true
        case .query(let recordType, let predicate, _):
            guard record.recordType == recordType else { return false }
            return predicate.matches(RecordState.view(of: record))
        }
    }

    func wantsDeletion(of recordType: String) -> Bool {
        switch self {
        case .zone: return true
        case .query(let type, _, _): return type == recordType
        }
    }
}

extension RecordState {
    /// A state carrying a record's visible fields, for evaluating predicates on it.
    static func view(of record: Record) -> RecordState {
        let stamp = Stamp(time: HLCTimestamp(milliseconds: UInt64(max(0, record.modificationDate ?? 0)), counter: 0), replica: record.lastModifierReplica ?? ReplicaID(high: 0, low: 0))
        let created = Stamp(time: HLCTimestamp(milliseconds: UInt64(max(0, record.creationDate ?? 0)), counter: 0), replica: record.creatorReplica ?? stamp.replica)
        let fields = record.fields.sorted { $0.key < $1.key }.map { FieldRegister(name: $0.key, value: $0.value, stamp: stamp) }
        return RecordState(recordName: record.recordID.recordName, causalLength: 1, recordType: record.recordType, typeStamp: stamp, created: created, fields: fields, vector: VersionVector())
    }
}
