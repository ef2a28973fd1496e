/// A wall clock (milliseconds since 1970) that a test moves by hand.
package final class ManualClock: @unchecked Sendable {
    package var now: UInt64
    package init(_ now: UInt64 = 1_700_000_000_000) { self.now = now }
}
