import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore
import LatticeTestSupport
import Testing

/// The main correctness test of the engine: 3–5 replicas, stores on disk and
/// in-memory replicas mixed, make random saves (new and existing fields,
/// removals, allKeys), deletes, re-creations, deleteSelf references and
/// cascades, conflict clears, zone deletes and re-creations, schema growth and
/// deployment, with clocks that sometimes run past the skew bound; change
/// sets travel in random order, duplicated, split, truncated and bit-flipped.
/// After every operation and delivery each replica must equal the reference
/// model's fold of the events it holds; at the end every replica is
/// byte-identical, conflicts included, and can still send every zone.
struct ConvergenceFuzzer {
    typealias Model = ReferenceModel
    static let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    static let names = (0...5).map { "m\($0)" } + (0...2).map { "p\($0)" }
    static func type(of name: String) -> String { name.hasPrefix("m") ? "Movie" : "Person" }

    static let fieldPool: [(String, @Sendable (inout SeededGenerator) -> FieldValue)] = [
        ("title", { .string(["Toy Story", "Up", "Coco", "Cars", "Brave"].randomElement(using: &$0)!) }),
        ("rating", { rng in
            // Now and then a string: replicas that race to define the field disagree on its type.
            Int.random(in: 0..<12, using: &rng) == 0 ? .string("five") : .int64(Int64.random(in: -5...5, using: &rng))
        }),
        ("score", { .double(Double(Int.random(in: 0...100, using: &$0)) / 4) }),
        ("seen", { .bool(Bool.random(using: &$0)) }),
        ("released", { .date(Int64.random(in: 0...1_000_000, using: &$0)) }),
        ("poster", { rng in .bytes((0..<Int.random(in: 0...4, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }) }),
        ("tags", { rng in .list((0..<Int.random(in: 0...3, using: &rng)).map { _ in .string(["a", "b", "c"].randomElement(using: &rng)!) }) }),
        ("where", { .location(Location(latitude: Double(Int.random(in: -90...90, using: &$0)), longitude: 1, altitude: Bool.random(using: &$0) ? 3 : nil)) }),
        ("sequel", { .reference(RecordReference(recordName: names.randomElement(using: &$0)!)) }),
        ("owner", { .reference(RecordReference(recordName: names.randomElement(using: &$0)!, action: .deleteSelf)) }),
        ("parts", { rng in .list((0..<Int.random(in: 1...2, using: &rng)).map { _ in .reference(RecordReference(recordName: names.randomElement(using: &rng)!, action: .deleteSelf)) }) }),
    ]

    struct Pending {
        var to: Int
        var bytes: [UInt8]
        var zone: Model.ZoneEvent
        var definitions: [Model.Definition]
        var recordTypes: Set<String>
        var deployed: Stamp?
        var carried: [String: Set<Int>]
        var base: VersionVector
        var top: VersionVector
        var claims: Bool
    }

    /// What this history exercised. Each fuzzer counts its own and the test
    /// that wants a total sums them: tests run in parallel, so a shared
    /// counter would be written by several threads at once.
    var coverage = FuzzCoverage()

    let seed: UInt64
    var rng: SeededGenerator
    var clocks: [ManualClock] = []
    var replicas: [any FuzzReplica] = []
    var model = Model()
    var states: [Model.Replica] = []
    var pending: [Pending] = []
    /// Whether this history collects tombstones (half of them do).
    let collects: Bool
    /// Draws for history's checks, apart from `rng`: a seed's history of operations is what it was before them.
    var historyRng: SeededGenerator
    /// Records as stores held them after a commit: `record(_:asOf:)` must read them back.
    var heldThen: [(replica: Int, sequence: UInt64, records: [String: [String: FieldValue]])] = []

    init(seed: UInt64) throws {
        self.seed = seed
        rng = SeededGenerator(seed: seed)
        historyRng = SeededGenerator(seed: seed ^ 0x5eed_4157)
        collects = seed % 2 == 0
        // Most histories seal blocks of a few writes, so writers have many and their collection is exercised.
        let blockEntries = [2, 3, 8, WriteBlock.maximumEntries][Int((seed / 2) % 4)]
        let count = Int.random(in: 3...5, using: &rng)
        var kinds = (0..<count).map { _ in Bool.random(using: &rng) }
        if Set(kinds).count == 1 { kinds[0].toggle() }
        for (index, onDisk) in kinds.enumerated() {
            let clock = ManualClock(1_700_000_000_000 + UInt64.random(in: 0...20, using: &rng))
            clocks.append(clock)
            let replica: any FuzzReplica = onDisk
                ? try StoreFuzzReplica(clock: clock, blockEntries: blockEntries)
                : try MemoryFuzzReplica(number: UInt64(index + 1), clock: clock, blockEntries: blockEntries)
            replicas.append(replica)
            states.append(Model.Replica(zone: Model.ZoneEvent(incarnation: 0, stamp: Stamp(time: .zero, replica: replica.replicaID)), id: replica.replicaID))
        }
        // Everyone starts from the same zone, as after a first sync.
        try toggleZone(0)
        for to in replicas.indices.dropFirst() { try deliver(try makePending(from: 0, to: to, since: VersionVector())) }
    }

    func context(_ who: Int) -> Comment { "seed \(seed), replica \(who) (\(replicas[who].kind))" }

    mutating func run(steps: Int) throws {
        for _ in 0..<steps {
            let who = Int.random(in: 0..<replicas.count, using: &rng)
            clocks[who].now += UInt64.random(in: 0...3, using: &rng)
            switch Int.random(in: 0..<1000, using: &rng) {
            case 0..<340: try save(who)
            case 340..<420: try delete(who)
            case 420..<470: try clearConflicts(who)
            case 470..<480: try toggleZone(who)
            case 480..<484: try deploy(who)
            case 484..<505: clocks[who].now += UInt64.random(in: 400_000...900_000, using: &rng) // past the skew bound
            case 505..<520: try saveWithWrongType(who)
            case 520..<720: try send(from: who)
            case 720..<935: if !pending.isEmpty { try deliver(pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))) }
            case 935..<950:
                if collects {
                    // Now and then a quiet moment first, when everyone catches up: then most tombstones can go,
                    // and the history goes on with records created again after their collection.
                    if Int.random(in: 0..<3, using: &rng) == 0 { try exchangeAll() }
                    try collectTombstones(who)
                }
                try collectWriteBlocks(who)
            default: try deliverDamaged()
            }
            if Int.random(in: 0..<60, using: &rng) == 0 { try checkDigestsMatchStates() }
            if Int.random(in: 0..<6, using: &historyRng) == 0 { try noteHeldRecords(who) }
            if Int.random(in: 0..<25, using: &historyRng) == 0 { try restoreFromHistory() }
        }
        try syncAll()
        try checkConverged()
        try checkHistory()
    }

    // MARK: Local operations

    mutating func save(_ who: Int) throws {
        let name = Self.names.randomElement(using: &rng)!
        let type = Self.type(of: name)
        var changes: [(name: String, value: FieldValue?)] = []
        for (field, make) in Self.fieldPool.shuffled(using: &rng).prefix(Int.random(in: 1...4, using: &rng)) {
            changes.append((field, Int.random(in: 0..<6, using: &rng) == 0 ? nil : make(&rng)))
        }
        let replacement: FieldReplacement = Int.random(in: 0..<5, using: &rng) == 0 ? .allKeys : .changedKeys
        try save(who, name: name, type: type, changes: changes, replacement: replacement)
    }

    /// A save the model predicts in full: refused, a no-op, or one event.
    mutating func save(_ who: Int, name: String, type: String, changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement) throws {
        var state = states[who]
        let fold = state.zone.incarnation % 2 == 1 ? model.fold(state.events(of: name, in: model)) : nil
        let alive = fold?.view.isAlive ?? false
        let before = try replicas[who].commitSequence()
        let outcome = Result { try replicas[who].save(name, type: type, in: Self.zone, changes: changes, replacement: replacement) }
        if state.zone.incarnation % 2 == 0 {
            #expect(outcome.refusal == .zoneNotFound(Self.zone), "\(context(who)): a save into a deleted zone must be refused")
            return
        }
        if Model.schemaRefuses(state, type: type, changes: changes) {
            coverage.count(state.deployed == nil ? "saves refused for a field type" : "saves refused by the production schema")
            guard case .schema = outcome.refusal else {
                Issue.record("\(context(who)): the schema should refuse \(type) \(changes), got \(outcome)")
                return
            }
            #expect(try replicas[who].commitSequence() == before)
            return
        }
        var incarnations: [String: UInt64] = [:]
        for change in changes {
            for target in change.value.cascadeTargets {
                let length = model.fold(state.events(of: target, in: model))?.view.incarnation ?? 0
                incarnations[target] = length % 2 == 1 ? length : length + 1
            }
        }
        func written(_ value: FieldValue?) -> Model.Written {
            Model.Written(value: value, incarnations: value.cascadeTargets.map { incarnations[$0]! })
        }
        if alive, let fold, changesNothing(fold, changes.map { ($0.name, written($0.value)) }, replacement) {
            coverage.count("no-op saves")
            #expect((try? outcome.get()) == false, "\(context(who)): a save that changes nothing must not be written")
            #expect(try replicas[who].commitSequence() == before, "\(context(who)): a no-op save took a commit")
            return
        }
        guard (try? outcome.get()) == true else {
            Issue.record("\(context(who)): save of \(name) should have been written, got \(outcome)")
            return
        }
        coverage.count(alive ? "saves" : "creations")
        let stamp = state.tick(wallClock: clocks[who].now)
        var fields: [String: Model.Written] = [:]
        for change in changes where alive || change.value != nil { fields[change.name] = written(change.value) }
        if alive, replacement == .allKeys, let fold {
            for (field, versions) in fold.versions where fields[field] == nil && (versions[0].written.value != nil || versions.count > 1) {
                fields[field] = Model.Written(value: nil, incarnations: [])
            }
        }
        let length = fold?.view.incarnation ?? 0
        record(Model.Event(
            record: name, stamp: stamp, zoneIncarnation: state.zone.incarnation, incarnation: alive ? length : length + 1,
            recordType: type, kind: .save(fields: fields), seen: state.events(of: name, in: model)), into: &state)
        for change in changes {
            // The contract: the first write of a field defines its type, except an empty list, which carries none.
            let emptyList = { if case .list(let items)? = change.value { return items.isEmpty } else { return false } }()
            if let value = change.value, !emptyList, state.definitions[Schema.Key(recordType: type, field: change.name)] == nil {
                Model.learn(Model.Definition(recordType: type, field: change.name, type: value.type, stamp: stamp), into: &state)
            }
        }
        state.recordTypes.insert(type)
        states[who] = state
        try expectMatchesModel(who)
    }

    func changesNothing(_ fold: Model.Fold, _ changes: [(String, Model.Written)], _ replacement: FieldReplacement) -> Bool {
        for (field, written) in changes {
            guard let versions = fold.versions[field] else {
                if written.value == nil { continue } else { return false }
            }
            guard versions.count == 1, versions[0].written == written else { return false }
        }
        if replacement == .allKeys {
            let named = Set(changes.map(\.0))
            for (field, versions) in fold.versions where !named.contains(field) && (versions[0].written.value != nil || versions.count > 1) { return false }
        }
        return true
    }

    /// Saving a live record as another type is refused.
    mutating func saveWithWrongType(_ who: Int) throws {
        let alive = Self.names.filter { model.view(of: $0, at: states[who])?.isAlive == true }
        guard let name = alive.randomElement(using: &rng) else { return }
        let before = try replicas[who].commitSequence()
        let outcome = Result { try replicas[who].save(name, type: "Wrong", in: Self.zone, changes: [("title", .string("x"))], replacement: .changedKeys) }
        #expect(outcome.refusal == .recordTypeMismatch(record: name, stored: Self.type(of: name), requested: "Wrong"), "\(context(who))")
        #expect(try replicas[who].commitSequence() == before)
    }

    mutating func delete(_ who: Int) throws {
        let alive = Self.names.filter { model.view(of: $0, at: states[who])?.isAlive == true }
        guard let name = alive.randomElement(using: &rng) else { return }
        var state = states[who]
        deleteInModel(name, at: &state, wallClock: clocks[who].now)
        let cascaded = cascade(at: &state, wallClock: clocks[who].now)
        states[who] = state
        let deleted = try replicas[who].delete(name, in: Self.zone)
        coverage.count("deletes")
        coverage.count("cascade deletes of a local delete", cascaded.count)
        #expect(deleted == [name] + cascaded, "\(context(who)): deleting \(name) should cascade to \(cascaded), deleted \(deleted)")
        try expectMatchesModel(who)
    }

    mutating func clearConflicts(_ who: Int) throws {
        let alive = Self.names.filter { model.view(of: $0, at: states[who])?.isAlive == true }
        let conflicted = alive.filter { model.view(of: $0, at: states[who])?.conflicts.isEmpty == false }
        // Mostly a record that has conflicts; now and then one without (a clear that must be no commit).
        guard let name = (Int.random(in: 0..<4, using: &rng) == 0 ? alive : conflicted).randomElement(using: &rng) else { return }
        var state = states[who]
        let fold = model.fold(state.events(of: name, in: model))!
        let before = try replicas[who].commitSequence()
        let cleared = try replicas[who].clearConflicts(of: name, in: Self.zone)
        guard !fold.view.conflicts.isEmpty else {
            #expect(!cleared, "\(context(who)): clearing no conflict")
            #expect(try replicas[who].commitSequence() == before, "\(context(who)): clearing no conflict took a commit")
            return
        }
        coverage.count("conflict clears")
        #expect(cleared, "\(context(who)): \(name) had conflicts to clear")
        var removed = Set<Model.VersionID>()
        for versions in fold.versions.values { for loser in versions.dropFirst() { removed.insert(loser.id) } }
        let stamp = state.tick(wallClock: clocks[who].now)
        record(Model.Event(
            record: name, stamp: stamp, zoneIncarnation: state.zone.incarnation, incarnation: fold.view.incarnation,
            recordType: Self.type(of: name), kind: .clear(removed: removed), seen: state.events(of: name, in: model)), into: &state)
        states[who] = state
        try expectMatchesModel(who)
    }

    mutating func toggleZone(_ who: Int) throws {
        var state = states[who]
        let stamp = state.tick(wallClock: clocks[who].now)
        let exists = state.zone.incarnation % 2 == 1
        coverage.count(exists ? "zone deletes" : "zone re-creations")
        state.zone = Model.ZoneEvent(incarnation: state.zone.incarnation + 1, stamp: stamp)
        states[who] = state
        if exists { try replicas[who].deleteZone(Self.zone) } else { try replicas[who].createZone(Self.zone) }
        try expectMatchesModel(who)
    }

    mutating func deploy(_ who: Int) throws {
        var state = states[who]
        let before = try replicas[who].commitSequence()
        let deployed = try replicas[who].deploySchema()
        guard state.deployed == nil else {
            let after = try replicas[who].commitSequence()
            #expect(!deployed && after == before, "\(context(who)): deploying twice")
            return
        }
        #expect(deployed)
        coverage.count("deployments")
        state.deployed = state.tick(wallClock: clocks[who].now)
        states[who] = state
        try expectMatchesModel(who)
    }

    /// Tombstone collection as a node runs it: the tombstones every replica's
    /// vector covers go (each replica's vector now stands for what it
    /// acknowledged; acknowledgements a node heard earlier are older, so
    /// this is the boldest collection a node could make). The model is left
    /// as it is: a collected record must read as the deletion it was, and
    /// every later delivery must find the same as if the tombstone were there.
    mutating func collectTombstones(_ who: Int) throws {
        var acknowledged: VersionVector?
        for replica in replicas {
            let vector = try replica.syncState(of: Self.zone)?.vector ?? VersionVector()
            acknowledged = acknowledged.map { $0.met(with: vector) } ?? vector
        }
        let before = try replicas[who].commitSequence()
        let collected = try replicas[who].collectTombstones(in: Self.zone, acknowledged: acknowledged ?? VersionVector())
        coverage.count("tombstones collected", collected.count)
        #expect(try replicas[who].commitSequence() == before, "\(context(who)): collecting tombstones took a commit sequence")
        try expectMatchesModel(who)
    }

    /// Write block collection, as a store runs it now and then: every
    /// later delivery to or from this replica must still prove its writes.
    mutating func collectWriteBlocks(_ who: Int) throws {
        let before = try replicas[who].commitSequence()
        coverage.count("write blocks collected", try replicas[who].collectWriteBlocks(in: Self.zone))
        #expect(try replicas[who].commitSequence() == before, "\(context(who)): collecting write blocks took a commit sequence")
        try expectMatchesModel(who)
    }

    // MARK: The model's side of writes

    mutating func record(_ event: Model.Event, into state: inout Model.Replica) {
        model.events.append(event)
        state.held[event.record, default: []].insert(model.events.count - 1)
    }

    mutating func deleteInModel(_ name: String, at state: inout Model.Replica, wallClock: UInt64) {
        let view = model.view(of: name, at: state)!
        let stamp = state.tick(wallClock: wallClock)
        record(Model.Event(
            record: name, stamp: stamp, zoneIncarnation: state.zone.incarnation, incarnation: view.incarnation + 1,
            recordType: Self.type(of: name), kind: .delete, seen: state.events(of: name, in: model)), into: &state)
    }

    /// DESIGN §2.9 in the model's terms: a live record whose deleteSelf
    /// reference was written against a target incarnation that has since
    /// ended is deleted; level by level, each level in name order.
    mutating func cascade(at state: inout Model.Replica, wallClock: UInt64) -> [String] {
        guard state.zone.incarnation % 2 == 1 else { return [] }
        var deleted: [String] = []
        while true {
            let victims = Self.names.sorted().filter { name in
                guard let fold = model.fold(state.events(of: name, in: model)), fold.view.isAlive else { return false }
                for versions in fold.versions.values {
                    let winner = versions[0].written
                    for (index, target) in winner.value.cascadeTargets.enumerated() {
                        let length = model.fold(state.events(of: target, in: model))?.view.incarnation ?? 0
                        if length > winner.incarnations[index] { return true }
                    }
                }
                return false
            }
            guard !victims.isEmpty else { return deleted }
            for victim in victims { deleteInModel(victim, at: &state, wallClock: wallClock) }
            deleted += victims
        }
    }

    // MARK: Change sets

    func makePending(from who: Int, to: Int, since: VersionVector) throws -> Pending {
        let bytes = try replicas[who].changeSet(for: Self.zone, since: since)
        let state = states[who]
        var carried: [String: Set<Int>] = [:]
        for name in try recordNames(in: bytes) {
            let events = state.events(of: name, in: model)
            #expect(!events.isEmpty, "\(context(who)) sent \(name), which the model says it does not hold")
            carried[name] = events
        }
        return Pending(
            to: to, bytes: bytes, zone: state.zone, definitions: Array(state.definitions.values), recordTypes: state.recordTypes,
            deployed: state.deployed, carried: carried, base: since, top: try replicas[who].syncState(of: Self.zone)?.vector ?? VersionVector(),
            claims: true)
    }

    mutating func send(from who: Int) throws {
        let to = (who + Int.random(in: 1..<replicas.count, using: &rng)) % replicas.count
        // Usually what the receiver lacks; sometimes from an empty vector (a full resend).
        let since = Bool.random(using: &rng) ? (try replicas[to].syncState(of: Self.zone)?.vector ?? VersionVector()) : VersionVector()
        let whole = try makePending(from: who, to: to, since: since)
        var parts = [whole]
        if Int.random(in: 0..<4, using: &rng) == 0 {
            parts = try split(whole.bytes, parts: Int.random(in: 2...4, using: &rng)).map { bytes in
                var part = whole
                part.bytes = bytes
                part.claims = false
                part.carried = whole.carried.filter { (try? recordNames(in: bytes))?.contains($0.key) ?? false }
                return part
            }
        }
        for part in parts {
            for _ in 0..<(Int.random(in: 0..<6, using: &rng) == 0 ? 2 : 1) { pending.append(part) }
        }
    }

    /// Applies a change set to the model first, then to the replica, and compares.
    mutating func deliver(_ item: Pending) throws {
        let to = item.to
        var state = states[to]
        let wallClock = clocks[to].now
        let skew = model.maximumSkew
        let accepts = { (stamp: Stamp) in stamp.time.milliseconds <= wallClock + skew }
        var changed = false
        var zoneDeferred = false
        var anyDeferred = false
        if item.zone > state.zone {
            if accepts(item.zone.stamp) {
                state.clock = max(state.clock, item.zone.stamp.time)
                state.zone = item.zone
                changed = true
            } else {
                coverage.count("zone changes deferred whole")
                zoneDeferred = true
            }
        }
        let stale = item.zone.incarnation < state.zone.incarnation
        if !zoneDeferred {
            // Schema changes are kept but take no commit sequence: that counts zone commits.
            for definition in item.definitions where accepts(definition.stamp) { Model.learn(definition, into: &state) }
            state.recordTypes.formUnion(item.recordTypes)
            if let deployed = item.deployed, accepts(deployed), state.deployed.map({ deployed < $0 }) ?? true { state.deployed = deployed }
            if !stale && state.zone.incarnation % 2 == 1 {
                for (name, carried) in item.carried {
                    let newest = carried.map { model.events[$0].stamp.time }.max()!
                    guard model.accepts(newest, wallClock: wallClock) else {
                        coverage.count("records deferred")
                        anyDeferred = true
                        continue
                    }
                    if carried.isSubset(of: state.events(of: name, in: model)) { continue }
                    state.held[name, default: []].formUnion(carried)
                    state.clock = max(state.clock, newest)
                    changed = true
                }
            }
        }
        let cascaded = cascade(at: &state, wallClock: wallClock)
        coverage.count("cascade deletes on merge", cascaded.count)
        if !cascaded.isEmpty { changed = true }
        states[to] = state

        let vectorBefore = try replicas[to].syncState(of: Self.zone)?.vector ?? VersionVector()
        let sequenceBefore = try replicas[to].commitSequence()
        let summary = try replicas[to].apply(item.bytes)
        #expect(summary.zoneDeferred == zoneDeferred, "\(context(to)): zone deferral")
        let claimMoves = item.claims && !stale && !anyDeferred && !zoneDeferred && item.top.entries.allSatisfy { model.accepts($0.time, wallClock: wallClock) }
            && vectorBefore.dominates(item.base) && !vectorBefore.dominates(item.top)
        let moved = try replicas[to].commitSequence() != sequenceBefore
        coverage.count(moved ? "deliveries that committed" : "deliveries that changed nothing")
        #expect(moved == (changed || claimMoves), "\(context(to)): the commit sequence \(moved ? "moved" : "stayed") on a change set that brought \(changed || claimMoves ? "something" : "nothing") new")
        try expectMatchesModel(to)
    }

    /// A truncated or bit-flipped change set is refused and changes nothing.
    mutating func deliverDamaged() throws {
        guard let item = pending.randomElement(using: &rng), item.bytes.count > 6 else { return }
        var bytes = item.bytes
        if Bool.random(using: &rng) {
            bytes.removeLast(Int.random(in: 1..<bytes.count, using: &rng))
        } else {
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
        }
        let target = replicas[item.to]
        let records = try target.records(in: Self.zone)
        let sync = try target.syncState(of: Self.zone)
        let sequence = try target.commitSequence()
        coverage.count("damaged change sets")
        #expect(throws: (any Error).self, "\(context(item.to)): a damaged change set must be refused") { try target.apply(bytes) }
        #expect(try target.records(in: Self.zone) == records, "\(context(item.to)): a refused change set changed records")
        #expect(try target.syncState(of: Self.zone) == sync, "\(context(item.to)): a refused change set changed the zone")
        #expect(try target.commitSequence() == sequence, "\(context(item.to)): a refused change set took a commit")
    }

    /// Every replica sends every other what it lacks, once, clocks as they are.
    mutating func exchangeAll() throws {
        for from in replicas.indices {
            for to in replicas.indices where to != from {
                try deliver(try makePending(from: from, to: to, since: try replicas[to].syncState(of: Self.zone)?.vector ?? VersionVector()))
            }
        }
    }

    mutating func syncAll() throws {
        // Clocks catch up with the one furthest ahead: every deferred write becomes acceptable.
        let latest = clocks.map(\.now).max()! + 1_200_000
        for clock in clocks { clock.now = latest }
        for _ in 0..<3 {
            for from in replicas.indices {
                for to in replicas.indices where to != from {
                    try deliver(try makePending(from: from, to: to, since: try replicas[to].syncState(of: Self.zone)?.vector ?? VersionVector()))
                }
            }
        }
    }

    // MARK: Checks

    func expectMatchesModel(_ who: Int) throws {
        let state = states[who]
        let replica = replicas[who]
        let zoneState = try replica.syncState(of: Self.zone)?.zoneState
        #expect(zoneState?.causalLength == state.zone.incarnation && zoneState?.stamp == state.zone.stamp, "\(context(who)): zone differs from the model")
        let residues = try replica.residues(in: Self.zone)
        for name in Self.names {
            let expected = model.view(of: name, at: state)
            let stored = try replica.record(name, in: Self.zone)
            if stored == nil, let residue = residues[name] {
                // Collected: the model must hold exactly that deletion.
                #expect(expected.map { !$0.isAlive && $0.incarnation == residue.causalLength } == true,
                        "\(context(who)): record \(name) was collected at incarnation \(residue.causalLength), the model says \(expected.map(String.init(describing:)) ?? "absent")")
                continue
            }
            #expect(stored == nil || residues[name] == nil, "\(context(who)): record \(name) is stored and has a residue")
            let actual = Model.view(of: stored)
            #expect(actual == expected, "\(context(who)): record \(name) is \(actual.map(String.init(describing:)) ?? "absent"), the model says \(expected.map(String.init(describing:)) ?? "absent")")
        }
        let schema = try replica.schema()
        #expect(Set(schema.definitions.map { Model.Definition(recordType: $0.recordType, field: $0.field, type: $0.type, stamp: $0.stamp) }) == Set(state.definitions.values), "\(context(who)): schema fields differ from the model")
        #expect(schema.recordTypes == state.recordTypes && schema.deployed == state.deployed, "\(context(who)): schema differs from the model")
    }

    /// Two replicas' digests are equal exactly when their states are byte-identical.
    mutating func checkDigestsMatchStates() throws {
        let digests = try replicas.map { try $0.digest(of: Self.zone) }
        let states = try replicas.map { replica -> [UInt8] in
            try canonicalBytes(replica.records(in: Self.zone)) + (replica.syncState(of: Self.zone).map { [1] + RecordBlob.encodeStamp($0.zoneState.stamp) + [UInt8(truncatingIfNeeded: $0.zoneState.causalLength)] } ?? [0])
        }
        for i in replicas.indices {
            for j in replicas.indices where i < j {
                let sameState = states[i] == states[j]
                #expect((digests[i] == digests[j]) == sameState, "\(context(i)) and replica \(j): digests \(digests[i] == digests[j] ? "equal" : "differ") while states \(sameState ? "are identical" : "differ")")
                if sameState { coverage.count("digests compared equal") } else { coverage.count("digests compared different") }
            }
        }
    }

    mutating func checkConverged() throws {
        // Once everyone holds everything, every tombstone is acknowledged everywhere: collected on every replica.
        if collects {
            for who in replicas.indices {
                try collectTombstones(who)
                try collectWriteBlocks(who)
            }
            // Then what was still on its way arrives, late: older states of collected records among it
            // (as from a bundle or a restored backup). None may bring a deleted record back.
            coverage.count("late deliveries after a collection", pending.count)
            while !pending.isEmpty { try deliver(pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))) }
            // Which delete a residue keeps the proof of may differ between replicas (two deletes of one
            // incarnation, one arriving after the collection): each is a delete its writer signed.
            func merged(_ residues: [String: RecordResidue]) -> [String: RecordResidue] {
                residues.mapValues { RecordResidue(causalLength: $0.causalLength, vector: $0.vector) }
            }
            let residues = merged(try replicas[0].residues(in: Self.zone))
            for (index, replica) in replicas.enumerated() {
                #expect(try replica.records(in: Self.zone).allSatisfy(\.isAlive), "\(context(index)): a tombstone outlived a collection everyone acknowledged")
                #expect(merged(try replica.residues(in: Self.zone)) == residues, "\(context(index)): residues differ from replica 0's")
                for (name, residue) in try replica.residues(in: Self.zone) {
                    #expect(residue.deletion != nil, "\(context(index)): the residue of \(name) names no delete")
                }
            }
        }
        let reference = try replicas[0].records(in: Self.zone)
        let referenceZone = try replicas[0].syncState(of: Self.zone)?.zoneState
        for (index, replica) in replicas.enumerated() {
            let records = try replica.records(in: Self.zone)
            if index == 0 {
                coverage.count("converged records with conflicts", records.filter(\.hasConflicts).count)
            }
            #expect(records == reference, "\(context(index)): not identical to replica 0")
            #expect(try canonicalBytes(records) == (try canonicalBytes(reference)), "\(context(index)): not byte-identical to replica 0")
            #expect(try replica.syncState(of: Self.zone)?.zoneState == referenceZone)
            #expect(try replica.digest(of: Self.zone) == (try replicas[0].digest(of: Self.zone)), "\(context(index)): digest differs from replica 0's")
            #expect(try replica.schema() == (try replicas[0].schema()), "\(context(index)): schema differs from replica 0")
            #expect(states[index].zone == states[0].zone)
            for name in Self.names {
                #expect(states[index].events(of: name, in: model) == states[0].events(of: name, in: model), "\(context(index)): holds other events of \(name)")
            }
            // After a full exchange every claim is taken: the vector covers every write of this incarnation.
            let vector = try replica.syncState(of: Self.zone)?.vector ?? VersionVector()
            for name in Self.names {
                for id in states[index].events(of: name, in: model) {
                    #expect(vector.covers(model.events[id].stamp), "\(context(index)): vector misses \(model.events[id].stamp)")
                }
            }
            // Whatever it received, it can send every zone, to anyone.
            for other in replicas {
                let bytes = try replica.changeSet(for: Self.zone, since: try other.syncState(of: Self.zone)?.vector ?? VersionVector())
                _ = try recordNames(in: bytes)
            }
            _ = try recordNames(in: try replica.changeSet(for: Self.zone, since: VersionVector()))
        }
    }
}

extension Result where Success == Bool, Failure == any Error {
    /// The replica error a refused operation threw, if it was one.
    var refusal: ReplicaError? {
        if case .failure(let error) = self { return error as? ReplicaError }
        return nil
    }
}

extension ConvergenceFuzzer {
    /// Notes what a store holds now, to read back as of this commit at the end.
    mutating func noteHeldRecords(_ who: Int) throws {
        guard let store = (replicas[who] as? StoreFuzzReplica)?.store else { return }
        let sequence = try store.currentSequence()
        var records: [String: [String: FieldValue]] = [:]
        for state in try replicas[who].records(in: Self.zone) where state.isAlive { records[state.recordName] = state.liveFieldValues }
        heldThen.append((who, sequence, records))
    }

    /// A store writes a record's values as of an earlier commit as a new
    /// save of the whole field set (`Database.restore`): a write like any
    /// other, which the model predicts and which must converge.
    mutating func restoreFromHistory() throws {
        guard let noted = heldThen.randomElement(using: &historyRng), let store = (replicas[noted.replica] as? StoreFuzzReplica)?.store,
              states[noted.replica].zone.incarnation % 2 == 1 else { return }
        let name = Self.names.randomElement(using: &historyRng)!
        guard let then = try? store.read({ try $0.record(name, in: Self.zone, asOf: .sequence(noted.sequence)) }), let fields = then.fields else { return }
        coverage.count("restores from history")
        try save(noted.replica, name: name, type: Self.type(of: name), changes: fields.map { ($0.key, $0.value) }, replacement: .allKeys)
    }

    /// History agrees with what happened: each store reads every record back
    /// as it held it after each noted commit; a write listed by several
    /// stores belongs to the same writer commit in each (their marks are the
    /// writer's, signed); and every write the converged records still show
    /// (winners and conflicts) is listed by every store.
    mutating func checkHistory() throws {
        for (who, sequence, records) in heldThen {
            guard let store = (replicas[who] as? StoreFuzzReplica)?.store else { continue }
            for name in Self.names {
                let then = try store.read { try $0.record(name, in: Self.zone, asOf: .sequence(sequence)) }
                #expect(then.fields == records[name], "\(context(who)): \(name) as of commit \(sequence) reads \(String(describing: then.fields)), it held \(String(describing: records[name]))")
                if then.fields != records[name], ProcessInfo.processInfo.environment["LATTICE_FUZZ_DEBUG"] != nil {
                    for entry in try store.read({ try $0.historyEntries(HistoryFilter()) }) where entry.record == name {
                        print("DEBUG seq \(entry.sequence) id \(entry.id) kind \(entry.kind) author \(entry.author.description.prefix(6)) commit \(entry.commit) changes \(entry.changes.map { "\($0.field)@\($0.stamp.time) old=\(String(describing: $0.oldValue)) lost=\($0.lost) removed=\($0.removed)" })")
                    }
                    print("DEBUG present \(String(describing: try replicas[who].record(name, in: Self.zone)))")
                }
            }
            coverage.count("records read back as of a commit")
        }
        struct Write: Hashable { var record: String; var field: String; var stamp: Stamp }
        var commitOf: [Write: (commit: HLCTimestamp, replica: Int)] = [:]
        let survivors = try replicas[0].records(in: Self.zone).filter(\.isAlive).flatMap { state in
            state.fields.flatMap { register in
                ([register.stamp] + register.losers.map(\.stamp)).map { Write(record: state.recordName, field: register.name, stamp: $0) }
            }
        }
        for (who, replica) in replicas.enumerated() {
            guard let store = (replica as? StoreFuzzReplica)?.store else { continue }
            var listed = Set<Write>()
            for entry in try store.read({ try $0.historyEntries(HistoryFilter()) }) where entry.zone == Self.zone {
                for change in entry.changes {
                    #expect(change.stamp.replica == entry.author, "\(context(who)): a change of \(entry.record) by \(change.stamp) in an entry of \(entry.author)")
                    let write = Write(record: entry.record, field: change.field, stamp: change.stamp)
                    listed.insert(write)
                    if let known = commitOf[write] {
                        if known.commit != entry.commit {
                            Issue.record("\(context(who)): \(entry.record).\(change.field) by \(change.stamp) is in commit \(entry.commit) here and \(known.commit) at replica \(known.replica)")
                        }
                    } else {
                        commitOf[write] = (entry.commit, who)
                    }
                }
            }
            for write in survivors where !listed.contains(write) {
                Issue.record("\(context(who)): the converged \(write.record).\(write.field) by \(write.stamp) is in no history entry")
            }
            coverage.count("histories checked")
        }
    }
}

/// The bytes of records as a change set writes them.
func canonicalBytes(_ records: [RecordState]) throws -> [UInt8] {
    let replicas = Set(records.flatMap { $0.vector.entries.map(\.replica) }).sorted()
    let anyReplica = replicas.first ?? ReplicaID(high: 0, low: 0)
    let header = ChangeSetHeader(
        zone: ConvergenceFuzzer.zone, zoneState: ZoneState(causalLength: 1, stamp: Stamp(time: .zero, replica: anyReplica)),
        base: VersionVector(), top: VersionVector(), claimsTop: false, replicas: replicas.isEmpty ? [anyReplica] : replicas, schema: Schema())
    return try MemoryReplica.encode(header: header, records: records)
}

/// The names of the records a change set carries, in order.
func recordNames(in bytes: [UInt8]) throws -> [String] {
    var reader = ChangeSetReader(source: ArrayByteSource(bytes))
    var names: [String] = []
    while try reader.readHeader() != nil {
        while let record = try reader.nextRecord() { names.append(record.recordName) }
        reader = ChangeSetReader(source: reader.source)
    }
    return names
}

extension ConvergenceFuzzer {
    /// Splits a change set into parts that claim nothing, records dealt out at random.
    mutating func split(_ bytes: [UInt8], parts: Int) throws -> [[UInt8]] {
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        var header = try reader.readHeader()!
        var buckets = Array(repeating: [RecordState](), count: parts)
        var records: [RecordState] = []
        while let record = try reader.nextRecord() {
            records.append(record)
            buckets[Int.random(in: 0..<parts, using: &rng)].append(record)
        }
        header.claimsTop = false
        // Each part proves its own writes, with the blocks the whole carried.
        let blocks = try BlockProof.resolve(reader.proofs, records: records, header: header)
        return try buckets.map { try MemoryReplica.encode(header: header, records: $0, proofs: ProofCollector(base: header.base, blocks: blocks)) }
    }
}

@Suite struct ConvergenceFuzzTests {
    /// Seeds that once failed; each stays a regression test.
    static let regressionSeeds: [UInt64] = [
        20_261_321, // a creating write that "removes" a field it never had
        20_261_291, // a re-creation and its writer's next commit merged in at once: read as of before, the old fields
    ]

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Async, yielding between histories: a synchronous test holds one of the cooperative pool's threads
    /// (two on a two-core machine) for minutes, and the node tests running beside it starve.
    @Test func thousandsOfSeededHistoriesConvergeOnDiskAndInMemory() async throws {
        let base = UInt64(Self.environment["LATTICE_FUZZ_SEED"] ?? "") ?? 20_261_123
        let cases = Int(Self.environment["LATTICE_FUZZ_CASES"] ?? "") ?? 2000
        var coverage = FuzzCoverage()
        for offset in 0..<UInt64(cases) {
            var fuzzer = try ConvergenceFuzzer(seed: base &+ offset)
            do { try fuzzer.run(steps: 60) } catch {
                Issue.record("seed \(base &+ offset): \(error)")
                return
            }
            coverage += fuzzer.coverage
            await Task.yield()
        }
        print("convergence fuzzer, \(cases) histories:", coverage.summary)
        if cases >= 500 {
            for what in ["no-op saves", "saves refused for a field type", "saves refused by the production schema", "cascade deletes of a local delete",
                         "cascade deletes on merge", "conflict clears", "zone deletes", "zone re-creations", "records deferred",
                         "zone changes deferred whole", "deliveries that changed nothing", "converged records with conflicts",
                         "digests compared equal", "digests compared different", "tombstones collected", "late deliveries after a collection", "write blocks collected",
                         "restores from history", "records read back as of a commit", "histories checked"] {
                #expect(coverage[what] > 0, "the fuzzer never exercised: \(what)")
            }
        }
    }

    @Test(arguments: regressionSeeds) func regression(seed: UInt64) throws {
        var fuzzer = try ConvergenceFuzzer(seed: seed)
        try fuzzer.run(steps: 60)
    }
}
