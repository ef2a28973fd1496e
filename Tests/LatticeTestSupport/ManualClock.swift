/// A wall clock (milliseconds since 1970) that a test moves by hand.
public final class ManualClock: @unchecked Sendable {
    public var now: UInt64
    public init(_ now: UInt64 = 1_700_000_000_000) { self.now = now }
}
