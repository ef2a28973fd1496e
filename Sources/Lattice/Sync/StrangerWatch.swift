import LatticeTransport
import NIOCore

/// What the node does about connections it turns away, as a value with time
/// as an input: each is counted in a bounded `StrangerLog` (the status shows
/// it); the recent untrusted devices reach the store's peers at most once a
/// minute (so a person can trust one by its ID), never once per attempt; and
/// at most 5 refusals in 10 seconds get a `refused` event of their own. A
/// flood of strangers costs memory bounded by the log and one store write a
/// minute (`StrangerWatchTests`).
struct StrangerWatch {
    static let saveInterval = TimeAmount.seconds(60)

    private(set) var log = StrangerLog()
    private var refusedEvents = RateWindow(interval: .seconds(10), burst: 5)
    private var savedAt: NIODeadline
    private var unsaved = false

    /// `now`: when the node started (the first save comes a minute later).
    init(at now: NIODeadline) { savedAt = now }

    /// A connection was turned away (or a device of another account let sync the public database only).
    /// Returns whether the recent untrusted devices are to be saved now (`takeUnsaved`).
    mutating func note(_ reason: StrangerLog.Reason, address: String, deviceID: String?, wallClock: UInt64, at now: NIODeadline) -> Bool {
        log.note(reason, address: address, deviceID: deviceID, at: wallClock)
        if deviceID != nil { unsaved = true }
        guard unsaved, now - savedAt >= Self.saveInterval else { return false }
        // Counted as saved now: the save waits for a store thread, and refusals go on meanwhile.
        savedAt = now
        return true
    }

    /// Whether a refusal gets its own `refused` event.
    mutating func announcesRefusal(at now: NIODeadline) -> Bool { refusedEvents.take(at: now) != nil }

    /// The recent untrusted devices, if any are not saved yet; they count as saved from `now`.
    mutating func takeUnsaved(at now: NIODeadline) -> [StrangerLog.Device] {
        guard unsaved else { return [] }
        unsaved = false
        savedAt = now
        return log.devices
    }
}
