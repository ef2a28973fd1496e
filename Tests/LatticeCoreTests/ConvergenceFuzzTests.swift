import LatticeCore
import Testing

/// The main correctness test of the merge: several replicas make random saves,
/// updates, deletes and re-creations, exchange change sets in random order
/// (duplicated, delayed, split into random batches, some corrupted), then
/// sync all pairs. Every delivery is checked against the reference model, and
/// at the end every replica must be byte-identical to every other and equal
/// to the model's fold over all events.
struct ConvergenceFuzzer {
    nonisolated(unsafe) static let fieldPool: [(String, (inout SeededGenerator) -> FieldValue)] = [
        ("title", { .string(["Toy Story", "Up", "Coco", "Cars", "Brave"].randomElement(using: &$0)!) }),
        ("rating", { .int64(Int64.random(in: -5...5, using: &$0)) }),
        ("score", { .double(Double(Int.random(in: 0...100, using: &$0)) / 4) }),
        ("seen", { .bool(Bool.random(using: &$0)) }),
        ("released", { .date(Int64.random(in: 0...1_000_000, using: &$0)) }),
        ("poster", { rng in .bytes((0..<Int.random(in: 0...4, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }) }),
        ("tags", { rng in .list((0..<Int.random(in: 0...3, using: &rng)).map { _ in .string(["a", "b", "c"].randomElement(using: &rng)!) }) }),
        ("where", { .location(Location(latitude: Double(Int.random(in: -90...90, using: &$0)), longitude: 1, altitude: Bool.random(using: &$0) ? 3 : nil)) }),
        ("sequel", { .reference(RecordReference(recordName: "m\(Int.random(in: 0...5, using: &$0))")) }),
    ]

    struct Pending {
        var to: Int
        var bytes: [UInt8]
        var eventsByRecord: [String: Set<Int>]
    }

    let seed: UInt64
    var rng: SeededGenerator
    var clocks: [ManualClock] = []
    var replicas: [MemoryReplica] = []
    var model = ReferenceModel()
    var held: [[String: Set<Int>]] = []
    var pending: [Pending] = []

    init(seed: UInt64) {
        self.seed = seed
        rng = SeededGenerator(seed: seed)
        let count = Int.random(in: 3...5, using: &rng)
        for index in 0..<count {
            let clock = ManualClock(1_700_000_000_000 + UInt64.random(in: 0...20, using: &rng))
            clocks.append(clock)
            let replica = makeReplica(UInt64(index + 1), clock: clock)
            replica.createZone(testZone)
            replicas.append(replica)
            held.append([:])
        }
        // Everyone starts from the same zone incarnation, as after a first sync.
        let genesis = try! replicas[0].makeChangeSet(for: testZone, since: VersionVector())
        for replica in replicas.dropFirst() { _ = try! replica.apply(genesis) }
    }

    mutating func run(steps: Int) throws {
        for _ in 0..<steps {
            let who = Int.random(in: 0..<replicas.count, using: &rng)
            clocks[who].now += UInt64.random(in: 0...3, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40: try save(who)
            case 40..<52: try delete(who)
            case 52..<72: try send(from: who)
            case 72..<95: try deliver()
            default: try deliverCorrupted()
            }
        }
        try syncAll()
        try checkConverged()
    }

    mutating func save(_ who: Int) throws {
        let name = "m\(Int.random(in: 0...5, using: &rng))"
        var changes: [(name: String, value: FieldValue?)] = []
        for (field, make) in Self.fieldPool.shuffled(using: &rng).prefix(Int.random(in: 1...4, using: &rng)) {
            changes.append((field, Int.random(in: 0..<6, using: &rng) == 0 ? nil : make(&rng)))
        }
        let replacement: FieldReplacement = Int.random(in: 0..<5, using: &rng) == 0 ? .allKeys : .changedKeys
        let before = replicas[who].record(name, in: testZone)
        let after = try replicas[who].save(name, type: "Movie", in: testZone, changes: changes, replacement: replacement)
        let stamp = after.lastModified
        var fields: [String: FieldValue?] = [:]
        // A write that starts an incarnation sets only values: a removal of a
        // field the new incarnation never had is nothing.
        let creates = !(before?.isAlive ?? false)
        for change in changes where !(creates && change.value == nil) { fields[change.name] = change.value }
        if replacement == .allKeys, let before, before.isAlive {
            for (field, _) in before.presentFields where fields[field] == nil { fields[field] = .some(nil) }
        }
        record(ReferenceModel.Event(record: name, stamp: stamp, incarnation: after.causalLength, isDelete: false, fields: fields), at: who)
    }

    mutating func delete(_ who: Int) throws {
        let alive = replicas[who].records(in: testZone).filter(\.isAlive)
        guard let victim = alive.randomElement(using: &rng) else { return }
        try replicas[who].delete(victim.recordName, in: testZone)
        let after = replicas[who].record(victim.recordName, in: testZone)!
        record(ReferenceModel.Event(record: victim.recordName, stamp: after.deleted!, incarnation: after.causalLength, isDelete: true, fields: [:]), at: who)
    }

    mutating func record(_ event: ReferenceModel.Event, at who: Int) {
        model.events.append(event)
        held[who][event.record, default: []].insert(model.events.count - 1)
        try! expectMatchesModel(who, event.record)
    }

    mutating func send(from who: Int) throws {
        let to = (who + Int.random(in: 1..<replicas.count, using: &rng)) % replicas.count
        // Usually what the receiver lacks; sometimes from an empty vector (a full resend).
        let since = Bool.random(using: &rng) ? replicas[to].syncState(of: testZone)!.vector : VersionVector()
        let bytes = try replicas[who].makeChangeSet(for: testZone, since: since)
        let parts = Int.random(in: 0..<4, using: &rng) == 0 ? try split(bytes, parts: Int.random(in: 2...4, using: &rng), using: &rng) : [bytes]
        for part in parts {
            var events: [String: Set<Int>] = [:]
            for name in try recordNames(in: part) { events[name] = held[who][name] ?? [] }
            let copies = Int.random(in: 0..<6, using: &rng) == 0 ? 2 : 1
            for _ in 0..<copies { pending.append(Pending(to: to, bytes: part, eventsByRecord: events)) }
        }
    }

    mutating func deliver() throws {
        guard !pending.isEmpty else { return }
        let item = pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))
        _ = try replicas[item.to].apply(item.bytes)
        for (name, events) in item.eventsByRecord {
            held[item.to][name, default: []].formUnion(events)
            try expectMatchesModel(item.to, name)
        }
    }

    /// A truncated or bit-flipped change set is refused and changes nothing.
    mutating func deliverCorrupted() throws {
        guard let item = pending.randomElement(using: &rng), item.bytes.count > 6 else { return }
        var bytes = item.bytes
        if Bool.random(using: &rng) {
            bytes.removeLast(Int.random(in: 1..<bytes.count, using: &rng))
        } else {
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
        }
        let target = replicas[item.to]
        let before = try canonical(target.records(in: testZone))
        let sync = target.syncState(of: testZone)
        #expect(throws: (any Error).self, "seed \(seed): a damaged change set must be refused") { try target.apply(bytes) }
        #expect(try canonical(target.records(in: testZone)) == before, "seed \(seed): a refused change set changed records")
        #expect(target.syncState(of: testZone) == sync, "seed \(seed): a refused change set changed the vectors")
    }

    mutating func syncAll() throws {
        for _ in 0..<3 {
            for from in replicas.indices {
                for to in replicas.indices where to != from {
                    let bytes = try replicas[from].makeChangeSet(for: testZone, since: replicas[to].syncState(of: testZone)!.vector)
                    _ = try replicas[to].apply(bytes)
                }
            }
        }
    }

    func expectMatchesModel(_ who: Int, _ name: String) throws {
        let expected = model.view(held[who][name] ?? [])
        let actual = ReferenceModel.view(of: replicas[who].record(name, in: testZone))
        #expect(actual == expected, "seed \(seed): replica \(who) record \(name) differs from the model")
        if actual != expected, ProcessEnvironment.value("LATTICE_FUZZ_DEBUG") != nil {
            for id in (held[who][name] ?? []).sorted() { print("event \(id):", model.events[id]) }
            print("state:", replicas[who].record(name, in: testZone) as Any)
        }
    }

    func checkConverged() throws {
        let reference = try canonical(replicas[0].records(in: testZone))
        let all = Set(model.events.indices)
        for (index, replica) in replicas.enumerated() {
            #expect(try canonical(replica.records(in: testZone)) == reference, "seed \(seed): replica \(index) is not byte-identical to replica 0")
            for name in Set(model.events.map(\.record)) {
                let expected = model.view(all.filter { model.events[$0].record == name })
                #expect(ReferenceModel.view(of: replica.record(name, in: testZone)) == expected, "seed \(seed): replica \(index) record \(name) differs from the fold of all events")
            }
            // After a full exchange every claim is taken: the vector covers every write.
            let vector = replica.syncState(of: testZone)!.vector
            for event in model.events {
                #expect(vector.covers(event.stamp), "seed \(seed): replica \(index) vector misses \(event.stamp)")
            }
        }
    }
}

@Suite struct ConvergenceFuzzTests {
    /// Seeds that once failed; each stays a regression test.
    static let regressionSeeds: [UInt64] = [
        20_261_321, // a creating write that "removes" a field it never had
    ]

    @Test func thousandsOfSeededHistoriesConverge() throws {
        let base = UInt64(ProcessEnvironment.value("LATTICE_FUZZ_SEED") ?? "") ?? 20_261_123
        let cases = Int(ProcessEnvironment.value("LATTICE_FUZZ_CASES") ?? "") ?? 2000
        for offset in 0..<UInt64(cases) {
            var fuzzer = ConvergenceFuzzer(seed: base &+ offset)
            try fuzzer.run(steps: 60)
        }
    }

    @Test(arguments: regressionSeeds) func regression(seed: UInt64) throws {
        var fuzzer = ConvergenceFuzzer(seed: seed)
        try fuzzer.run(steps: 60)
    }
}
