import Foundation
@_spi(Tools) @testable import Lattice
import LatticeCore
import LatticeCrypto
import LatticeProtocol
import Testing
import LatticeTestSupport

/// The sync protocol as a property: N nodes on real stores, random edits,
/// random connects, disconnects and cuts mid-stream, on a simulated network
/// that keeps each direction of a link in order (as TCP does) but interleaves
/// everything else at random. Once all are connected and quiet, every store
/// holds the same records, and no batch ever re-sent a record version its
/// receiver had acknowledged.
@Suite(.serialized) struct SyncSimulationTests {
    final class Node {
        let container: Container
        let adapter: StoreSyncAdapter
        let id: DeviceID
        init(_ container: Container) {
            self.container = container
            adapter = StoreSyncAdapter(store: container.store, container: container.containerIdentifier, trusted: TrustedDevices(store: container.store))
            id = container.store.identity.deviceID
        }
    }

    /// One connection: a session per end, a queue per direction, store work pending per end.
    final class Link {
        let ends: (Int, Int)
        var sessions: [SyncSession]
        var wires: [[SyncMessage]] = [[], []]   // wires[k]: messages travelling to end k
        var work: [[SyncSession.Action]] = [[], []]
        /// Record versions each end acknowledged from the other, by the records' vectors' text.
        var sentInFlight: [[[String]]] = [[], []]
        init(ends: (Int, Int), sessions: [SyncSession]) {
            self.ends = ends
            self.sessions = sessions
        }
    }

    struct Simulation {
        var nodes: [Node]
        var links: [Link] = []
        var rng: SeededGenerator
        let zone = Zone.ID(zoneName: "notes")
        /// acknowledged[sender][receiver]: record versions the receiver acknowledged.
        var acknowledged: [[Set<String>]]
        var batches = 0

        init(nodes: [Node], seed: UInt64) {
            self.nodes = nodes
            rng = SeededGenerator(seed: seed)
            acknowledged = Array(repeating: Array(repeating: [], count: nodes.count), count: nodes.count)
        }

        func node(_ link: Link, _ end: Int) -> Int { end == 0 ? link.ends.0 : link.ends.1 }

        mutating func connect(_ a: Int, _ b: Int) throws {
            guard !links.contains(where: { Set([$0.ends.0, $0.ends.1]) == Set([a, b]) }) else { return }
            let helloA = try nodes[a].adapter.hello(for: nodes[b].id)
            let helloB = try nodes[b].adapter.hello(for: nodes[a].id)
            var configuration = SyncSession.Configuration()
            configuration.batchRecords = Int.random(in: 1...4, using: &rng) // small batches: many cut points
            configuration.window = Int.random(in: 1...3, using: &rng)
            let link = Link(ends: (a, b), sessions: [SyncSession(localHello: helloA, configuration: configuration), SyncSession(localHello: helloB, configuration: configuration)])
            links.append(link)
            for end in 0...1 { try perform(link.sessions[end].start(), on: link, end: end) }
        }

        mutating func perform(_ actions: [SyncSession.Action], on link: Link, end: Int) throws {
            for action in actions {
                switch action {
                case .send(let message):
                    link.wires[1 - end].append(try SyncMessage(decoding: message.encoded())) // through the wire format
                case .produce, .apply, .adoptRoster:
                    link.work[end].append(action)
                case .serveAsset, .answerReconcile:
                    Issue.record("no asset was asked for")
                case .close(let reason):
                    Issue.record("an honest session closed: \(reason)")
                case .event: break
                }
            }
        }

        mutating func deliver(_ link: Link, to end: Int) throws {
            guard !link.wires[end].isEmpty else { return }
            let message = link.wires[end].removeFirst()
            var session = link.sessions[end]
            let actions = session.receive(message)
            link.sessions[end] = session
            // An acknowledgement reaches the batch's sender: its records are now acknowledged.
            if case .acknowledgement = message, !link.sentInFlight[end].isEmpty {
                let versions = link.sentInFlight[end].removeFirst()
                acknowledged[node(link, end)][node(link, 1 - end)].formUnion(versions)
            }
            try perform(actions, on: link, end: end)
        }

        mutating func runWork(_ link: Link, end: Int) throws {
            guard !link.work[end].isEmpty else { return }
            let action = link.work[end].removeFirst()
            let me = node(link, end)
            let peer = node(link, 1 - end)
            var session = link.sessions[end]
            var actions: [SyncSession.Action] = []
            switch action {
            case .produce(let request):
                let batch = try nodes[me].adapter.produceBatch(request, for: nodes[peer].id)
                if let batch {
                    let versions = try Self.versions(in: batch.bytes)
                    let resent = versions.filter { acknowledged[me][peer].contains($0) }
                    #expect(resent.isEmpty, "node \(me) re-sent to \(peer) versions it acknowledged: \(resent)")
                    link.sentInFlight[end].append(versions)
                    batches += 1
                }
                actions = session.batchProduced(batch)
            case .apply(let batch):
                let applied = try nodes[me].adapter.applyBatch(batch, from: nodes[peer].id)
                actions = session.batchApplied(applied)
                link.sessions[end] = session
                try perform(actions, on: link, end: end)
                try localCommit(at: me)
                return
            case .adoptRoster(let roster):
                try nodes[me].adapter.adoptRoster(roster, from: nodes[peer].id)
                actions = session.rosterAdopted()
            default: break
            }
            link.sessions[end] = session
            try perform(actions, on: link, end: end)
        }

        /// What the commit watcher does: every session of the node re-opens its streams.
        mutating func localCommit(at index: Int) throws {
            let zones = try nodes[index].adapter.zones()
            for link in links {
                for end in 0...1 where node(link, end) == index {
                    var session = link.sessions[end]
                    let actions = session.localCommit(zones: zones)
                    link.sessions[end] = session
                    try perform(actions, on: link, end: end)
                }
            }
        }

        static func versions(in bytes: [UInt8]) throws -> [String] {
            var reader = ChangeSetReader(source: ArrayByteSource(bytes))
            _ = try reader.readHeader()
            var out: [String] = []
            while let state = try reader.nextRecord() { out.append("\(state.recordName)@\(state.vector)") }
            return out
        }

        mutating func edit() throws {
            let index = Int.random(in: 0..<nodes.count, using: &rng)
            let database = nodes[index].container.privateCloudDatabase
            let name = "r\(Int.random(in: 0..<12, using: &rng))"
            let id = Record.ID(recordName: name, zoneID: zone)
            if Int.random(in: 0..<6, using: &rng) == 0 {
                _ = try? database.deleteRecord(withID: id)
            } else {
                var record = (try? database.record(for: id)) ?? Record(recordType: "Note", recordID: id)
                record[["a", "b", "c"].randomElement(using: &rng)!] = .int64(Int64.random(in: 0...99, using: &rng))
                _ = try database.save(record, savePolicy: .changedKeys)
            }
            try localCommit(at: index)
        }

        mutating func step() throws {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<15: try edit()
            case 15..<20:
                let a = Int.random(in: 0..<nodes.count, using: &rng)
                let b = Int.random(in: 0..<nodes.count, using: &rng)
                if a != b { try connect(a, b) }
            case 20..<24:
                // A cut: the connection ends wherever it was, mid-stream or not.
                if !links.isEmpty { links.remove(at: Int.random(in: 0..<links.count, using: &rng)) }
            case 24..<62:
                if let link = links.randomElement(using: &rng) { try deliver(link, to: Int.random(in: 0...1, using: &rng)) }
            default:
                if let link = links.randomElement(using: &rng) { try runWork(link, end: Int.random(in: 0...1, using: &rng)) }
            }
        }

        var busy: Bool { links.contains { !$0.wires[0].isEmpty || !$0.wires[1].isEmpty || !$0.work[0].isEmpty || !$0.work[1].isEmpty } }

        /// Connects every pair and runs until nothing moves.
        mutating func settle() throws {
            for a in nodes.indices { for b in nodes.indices where a < b { try connect(a, b) } }
            var steps = 0
            while busy {
                steps += 1
                if steps > 200_000 { Issue.record("the network did not settle"); return }
                let link = links.randomElement(using: &rng)!
                let end = Int.random(in: 0...1, using: &rng)
                if Bool.random(using: &rng) { try deliver(link, to: end) } else { try runWork(link, end: end) }
            }
        }

        func contents(_ index: Int) throws -> [String] {
            let key = ZoneKey(scope: .private, zoneID: LatticeCore.ZoneID(zoneName: "notes", ownerName: LatticeCore.ZoneID.defaultOwnerName))
            return try nodes[index].container.store.read { snapshot in
                try snapshot.records(changedAfter: 0, in: key).map { "\($0.state.recordName) alive=\($0.state.isAlive) \($0.state.fields.map { "\($0.name)=\(String(describing: $0.value))@\($0.stamp)" }) conflicts=\($0.state.conflicts.count)" }.sorted()
            }
        }
    }

    @Test(arguments: 0..<Int(ProcessInfo.processInfo.environment["LATTICE_SYNC_SIM_CASES"] ?? "12")!)
    func randomHistoriesConverge(_ seedIndex: Int) throws {
        let directory = TemporaryDirectory()
        let count = 3 + seedIndex % 2
        let nodes = try (0..<count).map { Node(try directory.container("n\($0)")) }
        for a in nodes { for b in nodes where a !== b { try a.container.trust(deviceID: b.id.description) } }
        for node in nodes { _ = try node.container.privateCloudDatabase.save(Zone(zoneName: "notes")) }
        var simulation = Simulation(nodes: nodes, seed: 0x5EED_0000 + UInt64(seedIndex))
        for _ in 0..<400 { try simulation.step() }
        try simulation.settle()
        let first = try simulation.contents(0)
        #expect(!first.isEmpty)
        for index in 1..<count { #expect(try simulation.contents(index) == first, "node \(index) differs from node 0 (seed index \(seedIndex))") }
        #expect(simulation.batches > 0)
    }
}
