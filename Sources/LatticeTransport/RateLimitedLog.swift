import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Logs one kind of event (refusals, evictions) at most `burst` times per
/// `interval`: a flood of strangers must not fill the log or cost a write per
/// attempt. The first message of the next interval says how many were left out.
final class RateLimitedLog: @unchecked Sendable {
    private let logger: Logger
    private let interval: TimeAmount
    private let burst: Int
    private let lock = NIOLock()
    private var windowStart = NIODeadline.distantPast
    private var logged = 0
    private var suppressed = 0

    init(logger: Logger, interval: TimeAmount = .seconds(10), burst: Int = 5) {
        self.logger = logger
        self.interval = interval
        self.burst = burst
    }

    func notice(_ message: String, metadata: Logger.Metadata) {
        let left: Int? = lock.withLock {
            let now = NIODeadline.now()
            if now - windowStart >= interval {
                windowStart = now
                logged = 0
            }
            guard logged < burst else {
                suppressed += 1
                return nil
            }
            logged += 1
            defer { suppressed = 0 }
            return suppressed
        }
        guard let left else { return }
        var metadata = metadata
        if left > 0 { metadata["suppressedBefore"] = "\(left)" }
        logger.notice("\(message)", metadata: metadata)
    }
}
