@_spi(Tools) import LatticeCore

/// DESIGN §2 written as an operation log, independently of the state-based
/// engine: every write is an event that remembers what its writer had seen,
/// and a replica's view of a record is a fold over the events it holds,
/// whatever their order. Incarnations, winners, conflicts, cascades, zone
/// incarnations, the schema and the clocks are decided here from the events
/// alone; nothing is read back from the code under test.
struct ReferenceModel {
    /// One field written by a save: the value (nil removes) and, for each
    /// deleteSelf reference in it, the target incarnation it was written against.
    struct Written: Equatable {
        var value: FieldValue?
        var incarnations: [UInt64]
    }

    enum Kind {
        case save(fields: [String: Written])
        case delete
        /// Resolves conflicts: drops the listed versions (event, field).
        case clear(removed: Set<VersionID>)
    }

    struct VersionID: Hashable {
        var event: Int
        var field: String
    }

    struct Event {
        var record: String
        var stamp: Stamp
        var zoneIncarnation: UInt64
        /// The record incarnation, decided from the writer's view.
        var incarnation: UInt64
        var recordType: String
        var kind: Kind
        /// The events of this record its writer held (its causal past).
        var seen: Set<Int>
    }

    struct ZoneEvent: Equatable {
        var incarnation: UInt64
        var stamp: Stamp

        static func > (lhs: ZoneEvent, rhs: ZoneEvent) -> Bool {
            lhs.incarnation != rhs.incarnation ? lhs.incarnation > rhs.incarnation : lhs.stamp > rhs.stamp
        }
    }

    struct Definition: Hashable {
        var recordType: String
        var field: String
        var type: FieldType
        var stamp: Stamp
    }

    /// What one replica holds.
    struct Replica {
        var zone: ZoneEvent
        var held: [String: Set<Int>] = [:]
        var definitions: [Schema.Key: Definition] = [:]
        var recordTypes: Set<String> = []
        var deployed: Stamp?
        var clock = HLCTimestamp.zero
        var id: ReplicaID

        /// The hybrid clock rule: a reading past the wall clock and every reading before.
        /// A local write's stamp: as `ReplicaStorage.nextStamp`, the tick before it is left for a commit's mark.
        mutating func tick(wallClock: UInt64) -> Stamp {
            for _ in 0..<2 {
                let candidate = HLCTimestamp(milliseconds: wallClock, counter: 0)
                clock = candidate > clock ? candidate : HLCTimestamp(rawValue: clock.rawValue + 1)
            }
            return Stamp(time: clock, replica: id)
        }

        func events(of record: String, in model: ReferenceModel) -> Set<Int> {
            (held[record] ?? []).filter { model.events[$0].zoneIncarnation == zone.incarnation }
        }
    }

    /// What a replica shows of a record.
    struct View: Equatable, CustomStringConvertible {
        struct Loser: Hashable {
            var field: String
            var value: FieldValue?
            var stamp: Stamp
        }

        var incarnation: UInt64
        var fields: [String: FieldValue]
        var conflicts: Set<Loser>
        var vector: [ReplicaID: HLCTimestamp]

        var isAlive: Bool { incarnation % 2 == 1 }

        var description: String {
            "incarnation \(incarnation) fields \(fields.sorted { $0.key < $1.key }) conflicts \(conflicts.map { "\($0.field)=\(String(describing: $0.value))@\($0.stamp)" }.sorted()) vector \(vector.sorted { $0.key < $1.key }.map { "\($0.key.description.prefix(4)):\($0.value)" })"
        }
    }

    /// A record's fold with what the rules need beyond the view.
    struct Fold {
        var view: View
        /// Per field: surviving versions, the winner first.
        var versions: [String: [(id: VersionID, stamp: Stamp, written: Written)]]
    }

    var events: [Event] = []
    var maximumSkew: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds

    // MARK: Folds

    func fold(_ ids: Set<Int>) -> Fold? {
        guard !ids.isEmpty else { return nil }
        let mine = ids.map { (id: $0, event: events[$0]) }
        let incarnation = mine.map(\.event.incarnation).max()!
        var vector: [ReplicaID: HLCTimestamp] = [:]
        for (_, event) in mine { vector[event.stamp.replica] = max(vector[event.stamp.replica] ?? .zero, event.stamp.time) }
        var fold = Fold(view: View(incarnation: incarnation, fields: [:], conflicts: [], vector: vector), versions: [:])
        guard incarnation % 2 == 1 else { return fold }
        var candidates: [String: [(id: VersionID, stamp: Stamp, written: Written)]] = [:]
        for (id, event) in mine where event.incarnation == incarnation {
            guard case .save(let fields) = event.kind else { continue }
            for (name, written) in fields { candidates[name, default: []].append((VersionID(event: id, field: name), event.stamp, written)) }
        }
        for (name, versions) in candidates {
            // A version survives unless a held write to the field saw it, or a held clear dropped it.
            let surviving = versions.filter { version in
                !mine.contains { _, other in
                    switch other.kind {
                    case .save(let fields): return fields[name] != nil && other.seen.contains(version.id.event)
                    case .clear(let removed): return removed.contains(version.id)
                    case .delete: return false
                    }
                }
            }.sorted { $0.stamp > $1.stamp }
            guard let winner = surviving.first else { continue }
            fold.versions[name] = surviving
            if let value = winner.written.value { fold.view.fields[name] = value }
            for loser in surviving.dropFirst() { fold.view.conflicts.insert(View.Loser(field: name, value: loser.written.value, stamp: loser.stamp)) }
        }
        return fold
    }

    func view(of record: String, at replica: Replica) -> View? {
        replica.zone.incarnation % 2 == 1 ? fold(replica.events(of: record, in: self))?.view : nil
    }

    static func view(of state: RecordState?) -> View? {
        guard let state else { return nil }
        var fields: [String: FieldValue] = [:]
        for (name, value) in state.presentFields { fields[name] = value }
        var vector: [ReplicaID: HLCTimestamp] = [:]
        for entry in state.vector.entries { vector[entry.replica] = entry.time }
        let conflicts = Set(state.conflicts.map { View.Loser(field: $0.field, value: $0.losingValue, stamp: $0.losingStamp) })
        return View(incarnation: state.causalLength, fields: fields, conflicts: conflicts, vector: vector)
    }

    // MARK: Clocks


    func accepts(_ time: HLCTimestamp, wallClock: UInt64) -> Bool { time.milliseconds <= wallClock + maximumSkew }

    // MARK: Schema

    static func learn(_ definition: Definition, into replica: inout Replica) {
        let key = Schema.Key(recordType: definition.recordType, field: definition.field)
        if let existing = replica.definitions[key], existing.stamp <= definition.stamp { return }
        replica.definitions[key] = definition
        replica.recordTypes.insert(definition.recordType)
    }

    /// Whether the schema refuses a write, as the contract states it.
    static func schemaRefuses(_ replica: Replica, type: String, changes: [(name: String, value: FieldValue?)]) -> Bool {
        let production = replica.deployed != nil
        if production, !replica.recordTypes.contains(type) { return true }
        for (name, value) in changes {
            guard let value else { continue }
            if let defined = replica.definitions[Schema.Key(recordType: type, field: name)] {
                var fits = defined.type == value.type
                if case .list(let items) = value, items.isEmpty, defined.type.isList { fits = true }
                if !fits { return true }
            } else if production {
                return true
            }
        }
        return false
    }
}
