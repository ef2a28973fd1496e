/// A hybrid logical clock reading: 48 bits of Unix milliseconds and a 16-bit
/// counter, packed so that integer order is clock order.
public struct HLCTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    /// The reading packed in `rawValue`: milliseconds in the high 48 bits, the counter in the low 16.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Packs `milliseconds` since 1970 (48 bits; higher ones are lost) with `counter`.
    public init(milliseconds: UInt64, counter: UInt16) {
        rawValue = milliseconds << 16 | UInt64(counter)
    }

    /// Wall-clock part: milliseconds since 1970.
    public var milliseconds: UInt64 { rawValue >> 16 }
    /// Logical part: orders readings within one millisecond; 0 once the wall clock moved on.
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// The earliest reading: what a version vector's missing entry reads as.
    public static let zero = HLCTimestamp(rawValue: 0)

    public static func < (lhs: HLCTimestamp, rhs: HLCTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "\(milliseconds).\(counter)" }
}

/// The clock every write of one replica is stamped with.
///
/// Readings are strictly increasing, never behind the wall clock for long and
/// never behind any remote reading this replica accepted — which is what makes
/// "the later write wins" agree with causality. A remote reading further ahead
/// of the local wall clock than `maximumSkew` is refused (see `observe`), so
/// one device with a clock set to next year cannot drag every other device's
/// stamps into the future and freeze their edits.
@_spi(Tools) public struct HybridLogicalClock: Sendable {
    /// The furthest a remote stamp may be ahead of the local wall clock.
    public static let defaultMaximumSkewMilliseconds: UInt64 = 5 * 60 * 1000

    /// The latest reading taken or observed: the next `tick` is after it.
    public private(set) var last: HLCTimestamp
    /// How far a remote reading may be ahead of the local wall clock, in milliseconds (`accepts`).
    public let maximumSkewMilliseconds: UInt64

    /// A clock resumed at `last` (`.zero` for a new replica), by default accepting 5 minutes of skew.
    public init(last: HLCTimestamp = .zero, maximumSkewMilliseconds: UInt64 = defaultMaximumSkewMilliseconds) {
        self.last = last
        self.maximumSkewMilliseconds = maximumSkewMilliseconds
    }

    /// A new reading, greater than every reading before it.
    public mutating func tick(wallClock: UInt64) -> HLCTimestamp {
        let candidate = HLCTimestamp(milliseconds: wallClock, counter: 0)
        last = candidate > last ? candidate : HLCTimestamp(rawValue: last.rawValue + 1)
        return last
    }

    /// Whether a remote reading is within the skew bound of `wallClock`.
    public func accepts(_ remote: HLCTimestamp, wallClock: UInt64) -> Bool {
        remote.milliseconds <= wallClock &+ maximumSkewMilliseconds
    }

    /// Moves the clock past an accepted remote reading.
    public mutating func observe(_ remote: HLCTimestamp) {
        if remote > last { last = remote }
    }
}
