import NIOCore

/// When the node writes its status file: `settle` after a change, and no
/// sooner than `spacing` after the last write while changes keep coming (the
/// file holds every peer: on a busy node of a large LAN, writing it after
/// each commit cost more than the commit). A value with time as an input, so
/// the rule is tested on a manual clock (`NodePolicyTests`); the node runs it
/// under its lock and schedules the write it asks for.
package struct StatusDebounce: Sendable {
    package static let settle = TimeAmount.milliseconds(100)
    package static let spacing = TimeAmount.milliseconds(250)

    /// Whether a write is scheduled and not yet made.
    package private(set) var isScheduled = false
    private var lastWritten = NIODeadline.uptimeNanoseconds(0)

    package init() {}

    /// Something the file shows changed at `now`: how long until the write,
    /// or nil when a write is already scheduled (it will show this change too).
    package mutating func changed(at now: NIODeadline) -> TimeAmount? {
        guard !isScheduled else { return nil }
        isScheduled = true
        return max(Self.settle, Self.spacing - (now - lastWritten))
    }

    /// The scheduled write is made at `now`.
    package mutating func writing(at now: NIODeadline) {
        isScheduled = false
        lastWritten = now
    }
}
