import NIOCore

/// When the node writes its status file: `settle` after a change, and no
/// sooner than `spacing` after the last write while changes keep coming (the
/// file holds every peer: on a busy node of a large LAN, writing it after
/// each commit cost more than the commit). A value with time as an input, so
/// the rule is tested on a manual clock (`NodePolicyTests`); the node runs it
/// under its lock and schedules the write it asks for.
struct StatusDebounce {
    static let settle = TimeAmount.milliseconds(100)
    static let spacing = TimeAmount.milliseconds(250)

    /// Whether a write is scheduled and not yet made.
    private(set) var isScheduled = false
    private var lastWritten = NIODeadline.uptimeNanoseconds(0)

    /// Something the file shows changed at `now`: how long until the write,
    /// or nil when a write is already scheduled (it will show this change too).
    mutating func changed(at now: NIODeadline) -> TimeAmount? {
        guard !isScheduled else { return nil }
        isScheduled = true
        return max(Self.settle, Self.spacing - (now - lastWritten))
    }

    /// The scheduled write is made at `now`.
    mutating func writing(at now: NIODeadline) {
        isScheduled = false
        lastWritten = now
    }
}
