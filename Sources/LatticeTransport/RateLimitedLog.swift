import Logging
import NIOConcurrencyHelpers
import NIOCore

/// At most `burst` events per `interval`, counting those left out: the
/// budget a flood of strangers gets for log lines and events about it.
package struct RateWindow: Sendable {
    package let interval: TimeAmount
    package let burst: Int
    private var windowStart = NIODeadline.distantPast
    private var used = 0
    private var leftOut = 0

    package init(interval: TimeAmount, burst: Int) {
        self.interval = interval
        self.burst = burst
    }

    /// Takes one event: nil when it is left out, else how many were left out before it.
    package mutating func take(at now: NIODeadline = .now()) -> Int? {
        if now - windowStart >= interval {
            windowStart = now
            used = 0
        }
        guard used < burst else {
            leftOut += 1
            return nil
        }
        used += 1
        defer { leftOut = 0 }
        return leftOut
    }
}

/// Logs one kind of event (refusals, evictions) at most `burst` times per
/// `interval`: a flood of strangers must not fill the log or cost a write per
/// attempt. The first message of the next interval says how many were left out.
final class RateLimitedLog: Sendable {
    private let logger: Logger
    private let window: NIOLockedValueBox<RateWindow>

    init(logger: Logger, interval: TimeAmount = .seconds(10), burst: Int = 5) {
        self.logger = logger
        window = NIOLockedValueBox(RateWindow(interval: interval, burst: burst))
    }

    func notice(_ message: String, metadata: Logger.Metadata) {
        guard let left = window.withLockedValue({ $0.take() }) else { return }
        var metadata = metadata
        if left > 0 { metadata["suppressedBefore"] = "\(left)" }
        logger.notice("\(message)", metadata: metadata)
    }
}
