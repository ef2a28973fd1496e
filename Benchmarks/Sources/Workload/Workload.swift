import Foundation
import Lattice
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// The merge workload of the README and of compare/workload.py, value for value:
/// N "Track" records of 8 fields (3 strings of 20 letters, 2 ints, a double,
/// a bool, a date), in generations (0 original, 1 edited, 2 the other side's edit).
package enum Workload {
    package static func fields(record i: Int, generation g: Int) -> [(name: String, value: FieldValue?)] {
        var state = UInt64(i) &* 8 &+ UInt64(g) &* 1_000_000_007
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        func letters() -> String { String(decoding: (0..<20).map { _ in UInt8(97 + next() % 26) }, as: UTF8.self) }
        let title = letters(), artist = letters(), album = letters()
        let rating = Int64(next() % 1_000_000)
        return [
            ("title", .string(title)), ("artist", .string(artist)), ("album", .string(album)),
            ("plays", .int64(Int64(i + g))), ("rating", .int64(rating)), ("score", .double(Double(i) * 0.5 + Double(g))),
            ("liked", .bool((i + g) % 2 == 0)), ("released", .date(1_700_000_000_000 + Int64(i) * 1000 + Int64(g))),
        ]
    }

    package static func name(_ i: Int) -> String {
        let digits = String(i)
        return "r" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    package static let zone = ZoneKey(scope: .private, zoneID: .default)
    /// The public database's zone, for the workload as a public catalogue.
    package static let publicZone = ZoneKey(scope: .public, zoneID: .default)
    /// A private zone of its own: what a share moves into the shared database.
    package static let listsZone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Lists"))

    package enum Scenario: String, CaseIterable, Sendable {
        case empty, halfLose = "half-lose", concurrent = "concurrent-10pct"
    }

    /// A replica in memory whose wall clock the workload sets.
    package final class Clock: @unchecked Sendable {
        public var now: UInt64 = 1_700_000_000_000
        package init() {}
    }

    package static func memoryReplica(_ id: UInt64, clock: Clock) -> MemoryReplica {
        // Signed, as every replica is: the workload's writes reach stores that check them.
        let replica = try! MemoryReplica(identity: .numbered(id), maximumSkewMilliseconds: UInt64.max / 4, wallClock: { clock.now })
        replica.createZone(zone)
        return replica
    }

    package static func write(_ replica: MemoryReplica, records: some Sequence<Int>, generation: Int, in target: ZoneKey = zone) throws {
        for i in records { try replica.save(name(i), type: "Track", in: target, changes: fields(record: i, generation: generation)) }
    }

    /// The record type's two indexed fields (the merge benchmark has
    /// two): they travel in the sender's schema, so every receiver keeps them.
    package static let indexes: [(field: String, kinds: IndexKinds)] = [("title", [.sortable, .queryable]), ("rating", .queryable)]

    static func addIndexes(_ replica: MemoryReplica) throws {
        for (field, kinds) in indexes { try replica.addIndex(kinds, field: field, of: "Track") }
    }

    /// Sets up a scenario in memory: the receiver and the incoming change set.
    /// `indexed`: whether the record type carries the two indexed fields.
    package static func prepareMemory(_ scenario: Scenario, records n: Int, indexed: Bool = true) throws -> (receiver: MemoryReplica, changeSet: [UInt8]) {
        let clock = Clock()
        let sender = memoryReplica(1, clock: clock)
        let receiver = memoryReplica(2, clock: clock)
        if indexed {
            // A field is indexed once a record defines it.
            try write(sender, records: 0..<1, generation: 0)
            try addIndexes(sender)
        }
        switch scenario {
        case .empty:
            try write(sender, records: 0..<n, generation: 0)
            return (receiver, try sender.makeChangeSet(for: zone, since: VersionVector()))
        case .halfLose:
            try write(sender, records: 0..<n, generation: 0)
            clock.now += 60_000 // the receiver's writes come later: they win
            try write(receiver, records: stride(from: 0, to: n, by: 2), generation: 2)
            return (receiver, try sender.makeChangeSet(for: zone, since: VersionVector()))
        case .concurrent:
            try write(sender, records: 0..<n, generation: 0)
            _ = try receiver.apply(try sender.makeChangeSet(for: zone, since: VersionVector()))
            clock.now += 1_000
            try write(sender, records: 0..<n, generation: 1)
            try write(receiver, records: stride(from: 0, to: n, by: 10), generation: 2)
            let since = receiver.syncState(of: zone)!.vector
            return (receiver, try sender.makeChangeSet(for: zone, since: since))
        }
    }

    /// Sets up a scenario on disk: receiver store in `directory`, change set from a store beside it.
    package static func prepareStore(_ scenario: Scenario, records n: Int, directory: URL, indexed: Bool = true, keepingHistory: Bool = true) throws -> (receiver: Container, changeSet: [UInt8]) {
        let (memoryReceiver, changeSet) = try prepareMemory(scenario, records: n, indexed: indexed)
        let receiver = try Container(identifier: "bench", directory: directory)
        try receiver.setHistoryKept(keepingHistory)
        // The receiver's own prior state, copied in through the same merge path.
        if scenario != .empty {
            try receiver.apply(changeSet: memoryReceiver.makeChangeSet(for: zone, since: VersionVector()))
        }
        return (receiver, changeSet)
    }
}

/// Two trusting containers on loopback, B's node dialing A's: the sync benchmarks' rig.
package final class SyncPair: @unchecked Sendable {
    package let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-sync-bench-\(UUID().uuidString)")
    package let a: Container
    package let b: Container
    package private(set) var nodeA: SyncNode?
    package private(set) var nodeB: SyncNode?
    private var events: AsyncStream<SyncNode.Event>.Iterator?

    /// Two stores; with `trusted` false they are of two accounts, and sync the public database alone.
    package init(trusted: Bool = true) throws {
        a = try Container(identifier: "bench", directory: root.appendingPathComponent("a"))
        b = try Container(identifier: "bench", directory: root.appendingPathComponent("b"))
        if trusted {
            try a.trust(deviceID: b.deviceID)
            try b.trust(deviceID: a.deviceID)
        }
    }

    /// Starts both nodes and waits until they have exchanged all they had.
    package func start() async throws {
        var listening = SyncNode.Configuration()
        listening.port = 0
        listening.listenHost = "127.0.0.1"
        listening.publishesStatus = false
        let nodeA = SyncNode(container: a, configuration: listening)
        try await nodeA.start()
        var dialing = SyncNode.Configuration()
        dialing.peers = [PeerAddress(host: "127.0.0.1", port: nodeA.listeningPort!)]
        dialing.publishesStatus = false
        let nodeB = SyncNode(container: b, configuration: dialing)
        try await nodeB.start()
        self.nodeA = nodeA
        self.nodeB = nodeB
        events = nodeB.events.makeAsyncIterator()
        await waitForB { if case .caughtUp = $0 { return true } else { return false } }
    }

    /// Waits for B's events until one satisfies `condition`.
    package func waitForB(_ condition: (SyncNode.Event) -> Bool) async {
        while let event = await events?.next() { if condition(event) { return } }
    }

    /// Waits until B has committed `name` from A.
    package func waitUntilBHas(_ name: String, in zone: Zone.ID, database: DatabaseScope = .private) async {
        while true {
            await waitForB { if case .syncFinished(_, _, .receiving) = $0 { return true } else { return false } }
            if (try? await b.database(with: database).record(for: Record.ID(recordName: name, zoneID: zone))) != nil { return }
        }
    }

    package func stop() async {
        await nodeB?.stop()
        await nodeA?.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Starts both nodes and times B's initial sync: from the start until B caught up.
    package func timeInitialSync() async throws -> Double {
        let began = DispatchTime.now().uptimeNanoseconds
        try await start()
        return Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
    }

    /// The change-set bytes B received, by its status (every zone, every peer).
    package func bytesBReceived() -> Int {
        nodeB?.status.peers.flatMap(\.zones).filter { $0.direction == "receiving" }.reduce(0) { $0 + $1.bytesDone } ?? 0
    }
}
