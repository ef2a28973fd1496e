@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeTestSupport
import Testing

/// Range-based reconciliation between two in-memory digest sets: it finds
/// exactly the keys held differently, in few round trips and few bytes.
@Suite struct ReconciliationTests {
    static let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))

    /// A random item: a name like a record's, and a random hash.
    static func item(_ name: String, _ generator: inout SeededGenerator) -> DigestItem {
        DigestItem(key: Array(name.utf8), hash: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    struct Run {
        var differences: [DigestDifference]
        var rounds: Int
        var bytes: Int
    }

    /// Runs a whole reconciliation between `here` (the beginner) and `there`, through the wire encoding.
    static func reconcile(_ here: [DigestItem], _ there: [DigestItem]) throws -> Run {
        let local = MemoryDigestSource([zone: MemoryDigestSet(here)])
        let remote = MemoryDigestSource([zone: MemoryDigestSet(there)])
        var message = try Reconciler.opening(zones: [zone], source: local)
        var beginner = Reconciler(opening: message)
        var answerer = Reconciler(initiator: false)
        var rounds = 0, bytes = 0
        while !message.isEmpty {
            rounds += 1
            #expect(rounds < 40, "the reconciliation does not end")
            if rounds >= 40 { break }
            let sent = SyncMessage.reconcile(message).encoded()
            guard case .reconcile(let received) = try SyncMessage(decoding: sent) else { Issue.record("not a reconcile"); break }
            let reply = try answerer.reply(to: received, source: remote)
            let answered = SyncMessage.reconcileReply(reply).encoded()
            guard case .reconcileReply(let back) = try SyncMessage(decoding: answered) else { Issue.record("not a reply"); break }
            bytes += sent.count + answered.count
            message = try beginner.reply(to: back, source: local)
        }
        return Run(differences: beginner.differences, rounds: rounds, bytes: bytes)
    }

    /// The differences as they truly are.
    static func expected(_ here: [DigestItem], _ there: [DigestItem]) -> Set<DigestDifference> {
        let mine = Dictionary(uniqueKeysWithValues: here.map { ($0.key, $0.shortHash) })
        let theirs = Dictionary(uniqueKeysWithValues: there.map { ($0.key, $0.shortHash) })
        return Set(Set(mine.keys).union(theirs.keys).filter { mine[$0] != theirs[$0] }.map {
            DigestDifference(zone: zone, key: $0, here: mine[$0], there: theirs[$0])
        })
    }

    @Test(arguments: 0..<40 as Range<UInt64>) func everyDifferenceIsFoundAndNothingElse(seed: UInt64) throws {
        var generator = SeededGenerator(seed: 20_261_126 &+ seed)
        let size = [0, 1, 5, 40, 300, 3000][Int(seed % 6)]
        let common = (0..<size).map { Self.item("movie-\($0)", &generator) }
        var here = common, there = common
        // Some changed on one side, some on both, some only on one side, some removed.
        for _ in 0..<Int.random(in: 0...12, using: &generator) {
            guard !common.isEmpty else { break }
            let index = Int.random(in: 0..<common.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: here[index] = Self.item("movie-\(index)", &generator)
            case 1: there[index] = Self.item("movie-\(index)", &generator)
            // A record's hash covers its name: an item under another key has another hash.
            case 2: here[index] = Self.item("gone-\(index)-\(seed)", &generator)
            default: there[index] = Self.item("elsewhere-\(index)", &generator)
            }
        }
        for extra in 0..<Int.random(in: 0...3, using: &generator) { here.append(Self.item("only-here-\(extra)", &generator)) }
        for extra in 0..<Int.random(in: 0...3, using: &generator) { there.append(Self.item("ünïcode-\(extra)", &generator)) }
        let run = try Self.reconcile(here, there)
        #expect(Set(run.differences) == Self.expected(here, there))
        #expect(run.differences.count == Set(run.differences).count, "a difference reported twice")
    }

    @Test func equalSetsTakeOneRoundTripAndAFewBytes() throws {
        var generator = SeededGenerator(seed: 7)
        let items = (0..<100_000).map { Self.item("record-\($0)", &generator) }
        let run = try Self.reconcile(items, items.shuffled(using: &generator))
        #expect(run.differences.isEmpty)
        #expect(run.rounds == 1)
        #expect(run.bytes < 100)
    }

    @Test func oneDifferenceInAHundredThousandTakesThreeRoundTrips() throws {
        var generator = SeededGenerator(seed: 8)
        let items = (0..<100_000).map { Self.item("record-\($0)", &generator) }
        var changed = items
        changed[54_321] = Self.item("record-54321", &generator)
        let run = try Self.reconcile(items, changed)
        #expect(run.differences.map(\.recordName) == ["record-54321"])
        #expect(run.rounds <= 3)
        #expect(run.bytes < 2500)
    }

    @Test func manyDifferencesComeInMessagesUnderTheMaximum() throws {
        var generator = SeededGenerator(seed: 10)
        let items = (0..<200_000).map { Self.item("record-\($0)", &generator) }
        var changed = items
        for index in stride(from: 0, to: items.count, by: 40) { changed[index] = Self.item("record-\(index)", &generator) }
        // Each message goes through the wire encoding, whose decoder refuses one over 1 MiB.
        let run = try Self.reconcile(items, changed)
        #expect(run.differences.count == 5000)
        #expect(Set(run.differences) == Self.expected(items, changed))
    }

    @Test func anEmptyReplicaAgainstALargeOneFindsEveryRecordInMessagesUnderTheMaximum() throws {
        var generator = SeededGenerator(seed: 11)
        let items = (0..<70_000).map { Self.item("record-\($0)", &generator) }
        for (here, there) in [([DigestItem](), items), (items, [])] {
            let run = try Self.reconcile(here, there)
            #expect(run.differences.count == 70_000)
            #expect(run.differences.allSatisfy { ($0.here == nil) == here.isEmpty && ($0.there == nil) == there.isEmpty })
        }
    }

    @Test func anAnswerAboutAZoneNotAskedOrToAListNeverSentIsRefused() throws {
        let source = MemoryDigestSource([Self.zone: MemoryDigestSet([])])
        let opening = try Reconciler.opening(zones: [Self.zone], source: source)
        var beginner = Reconciler(opening: opening)
        let other = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Other"))
        #expect(throws: ProtocolError.self) {
            try beginner.reply(to: ReconcileMessage(zones: [ReconcileZone(zone: other, ranges: [ReconcileRange(upper: nil, content: .skip)])]), source: source)
        }
        #expect(throws: ProtocolError.self) {
            try beginner.reply(to: ReconcileMessage(zones: [ReconcileZone(zone: Self.zone, ranges: [ReconcileRange(upper: nil, content: .answer(items: [], held: [true]))])]), source: source)
        }
        var answerer = Reconciler(initiator: false)
        #expect(throws: ProtocolError.self) {
            try answerer.reply(to: ReconcileMessage(zones: [ReconcileZone(zone: Self.zone, ranges: [ReconcileRange(upper: nil, content: .answer(items: [], held: []))])]), source: source)
        }
    }

    @Test func theSumDoesNotDependOnOrderAndRemovingUndoesAdding() {
        var generator = SeededGenerator(seed: 9)
        let hashes = (0..<50).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        var forward = DigestSum(), backward = DigestSum()
        for hash in hashes { forward.add(hash) }
        for hash in hashes.reversed() { backward.add(hash) }
        #expect(forward == backward)
        #expect(forward.fingerprint == backward.fingerprint)
        var partial = forward
        for hash in hashes.prefix(20) { partial.remove(hash) }
        var rest = DigestSum()
        for hash in hashes.dropFirst(20) { rest.add(hash) }
        #expect(partial == rest)
        // The count is in the print: an item whose hash is zero still changes it.
        var zero = rest
        zero.add([UInt8](repeating: 0, count: 32))
        #expect(zero.fingerprint != rest.fingerprint)
    }

    @Test func rangesOutOfOrderOrPastTheEndAreRefused() {
        let zoneBytes = SyncMessage.reconcile(ReconcileMessage(zones: [ReconcileZone(zone: Self.zone, ranges: [ReconcileRange(upper: nil, content: .skip)])])).encoded()
        // Two ranges whose bounds go backwards: "b" then "a".
        let backwards = ReconcileMessage(zones: [ReconcileZone(zone: Self.zone, ranges: [
            ReconcileRange(upper: Array("b".utf8), content: .skip), ReconcileRange(upper: Array("a".utf8), content: .skip),
        ])])
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: SyncMessage.reconcile(backwards).encoded()) }
        let pastTheEnd = ReconcileMessage(zones: [ReconcileZone(zone: Self.zone, ranges: [
            ReconcileRange(upper: nil, content: .skip), ReconcileRange(upper: Array("z".utf8), content: .skip),
        ])])
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: SyncMessage.reconcile(pastTheEnd).encoded()) }
        #expect(throws: Never.self) { try SyncMessage(decoding: zoneBytes) }
    }
}
