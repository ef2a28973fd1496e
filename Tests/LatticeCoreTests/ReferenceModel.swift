import LatticeCore

/// DESIGN §2 written as an operation log, independently of the state-based
/// merge: a replica's view of a record is a fold over the write events it has
/// received, whatever their order.
struct ReferenceModel {
    struct Event {
        var record: String
        var stamp: Stamp
        /// The incarnation the event belongs to, decided from its writer's view:
        /// a save continues a live incarnation or starts the next odd one; a
        /// delete ends the one its writer saw (moving to the even one after it).
        var incarnation: UInt64
        var isDelete: Bool
        /// Field writes: nil removes.
        var fields: [String: FieldValue?]
    }

    struct View: Equatable {
        var incarnation: UInt64
        var fields: [String: FieldValue]
        var vector: [ReplicaID: HLCTimestamp]
    }

    var events: [Event] = []

    /// What a replica holding `eventIDs` of one record sees of it.
    func view(_ eventIDs: Set<Int>) -> View? {
        guard !eventIDs.isEmpty else { return nil }
        let mine = eventIDs.map { events[$0] }
        let incarnation = mine.map(\.incarnation).max()!
        var vector: [ReplicaID: HLCTimestamp] = [:]
        for event in mine { vector[event.stamp.replica] = max(vector[event.stamp.replica] ?? .zero, event.stamp.time) }
        var winners: [String: (Stamp, FieldValue?)] = [:]
        if incarnation % 2 == 1 {
            for event in mine where event.incarnation == incarnation && !event.isDelete {
                for (name, value) in event.fields where (winners[name]?.0 ?? Stamp(time: .zero, replica: ReplicaID(high: 0, low: 0))) < event.stamp {
                    winners[name] = (event.stamp, value)
                }
            }
        }
        return View(incarnation: incarnation, fields: winners.compactMapValues { $0.1 }, vector: vector)
    }

    static func view(of state: RecordState?) -> View? {
        guard let state else { return nil }
        var fields: [String: FieldValue] = [:]
        for (name, value) in state.presentFields { fields[name] = value }
        var vector: [ReplicaID: HLCTimestamp] = [:]
        for entry in state.vector.entries { vector[entry.replica] = entry.time }
        return View(incarnation: state.causalLength, fields: fields, vector: vector)
    }
}
