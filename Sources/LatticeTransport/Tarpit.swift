import NIOConcurrencyHelpers
import NIOCore

/// Holds connections refused for bringing too many strangers: unread, and
/// closed after `holding`, a few at a time. A client that loops on connect
/// then waits for each refusal instead of costing the node a socket accept
/// per loop; past `maximum` held, refusals close at once.
final class Tarpit: Sendable {
    let maximum: Int
    let holding: TimeAmount
    private let held = NIOLockedValueBox(0)

    init(maximum: Int = 64, holding: TimeAmount = .milliseconds(250)) {
        self.maximum = maximum
        self.holding = holding
    }

    /// Holds `channel` and closes it later; false when the tarpit is full.
    func hold(_ channel: Channel) -> Bool {
        let taken = held.withLockedValue { count -> Bool in
            guard count < maximum else { return false }
            count += 1
            return true
        }
        guard taken else { return false }
        channel.closeFuture.whenComplete { [held] _ in held.withLockedValue { $0 -= 1 } }
        channel.eventLoop.scheduleTask(in: holding) { channel.close(promise: nil) }
        return true
    }

    /// Connections held now.
    var count: Int { held.withLockedValue { $0 } }
}
