/// How long a node waits before dialing a peer again: from `first`, doubling
/// after each attempt up to `cap`, back to `first` once a connection lasted
/// more than `longEnough` (a peer that restarts is redialed at once; one that
/// is away is not dialed in a tight loop). Time is an input: the node sleeps
/// what this says, with jitter, and the rule is tested without a clock
/// (`NodePolicyTests`). Static addresses cap at 30 s; discovered devices,
/// whose liveness mDNS does not tell, at 5 s.
package struct DialBackoff: Sendable {
    package static let first = 0.25
    package static let longEnough = 5.0
    package let cap: Double

    /// The wait the next attempt's end will ask for, in seconds.
    package private(set) var delay = first

    package init(cap: Double = 30) { self.cap = cap }

    /// How an attempt at an address ended.
    package enum Outcome: Equatable {
        /// A connection was made, and ended after this many seconds.
        case ended(after: Double)
        /// No connection could be made.
        case unreachable
    }

    /// A connection to the peer ended after `lasted` seconds (one that lasted long starts over).
    package mutating func connectionEnded(after lasted: Double) {
        if lasted > Self.longEnough { reset() }
    }

    /// The peer is connected (by its own dial, say): the next wait starts over.
    package mutating func reset() { delay = Self.first }

    /// The seconds to wait before the next attempt (before jitter); the one after waits twice as long, up to `cap`.
    package mutating func nextWait() -> Double {
        let wait = delay
        delay = min(delay * 2, cap)
        return wait
    }

    /// The last attempt ended so: the seconds to wait before the next one.
    package mutating func attemptEnded(_ outcome: Outcome) -> Double {
        if case .ended(let lasted) = outcome { connectionEnded(after: lasted) }
        return nextWait()
    }
}
