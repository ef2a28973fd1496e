import Foundation
import Lattice
import NIOConcurrencyHelpers

/// Hands each node event to every open event stream. A stream that falls
/// 1,000 events behind loses the oldest (it is told: `event: dropped`).
final class EventHub: Sendable {
    private let subscribers = NIOLockedValueBox<[UUID: AsyncStream<SyncNode.Event>.Continuation]>([:])
    static let backlog = 1_000

    /// The node calls this with each of its events.
    func publish(_ event: SyncNode.Event) {
        for continuation in subscribers.withLockedValue({ Array($0.values) }) { continuation.yield(event) }
    }

    /// Events from now on, until the stream's consumer stops.
    func subscribe() -> AsyncStream<SyncNode.Event> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: SyncNode.Event.self, bufferingPolicy: .bufferingNewest(Self.backlog))
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLockedValue { _ = $0.removeValue(forKey: id) } }
        subscribers.withLockedValue { $0[id] = continuation }
        return stream
    }
}
