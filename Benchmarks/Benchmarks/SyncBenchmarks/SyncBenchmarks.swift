import Benchmark
import Foundation
import Lattice
import LatticeCore
import Workload

/// Two nodes on loopback in this process, B dialing A, with durable stores.
final class Rig: @unchecked Sendable {
    let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-sync-bench-\(UUID().uuidString)")
    let a: Container
    let b: Container
    var nodeA: SyncNode?
    var nodeB: SyncNode?
    var events: AsyncStream<SyncNode.Event>.Iterator?
    var counter = 0

    init() throws {
        a = try Container(identifier: "bench", directory: root.appendingPathComponent("a"))
        b = try Container(identifier: "bench", directory: root.appendingPathComponent("b"))
        try a.trust(deviceID: b.deviceID)
        try b.trust(deviceID: a.deviceID)
    }

    func start() async throws {
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
        await waitFor { if case .caughtUp = $0 { return true } else { return false } }
    }

    func waitFor(_ condition: (SyncNode.Event) -> Bool) async {
        while let event = await events?.next() { if condition(event) { return } }
    }

    func stop() async {
        await nodeB?.stop()
        await nodeA?.stop()
        try? FileManager.default.removeItem(at: root)
    }
}

nonisolated(unsafe) var propagationRig: Rig?

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "sync: library save on A until a query on B sees it",
        configuration: .init(
            metrics: [.wallClock], maxDuration: .seconds(30), maxIterations: 1000,
            setup: {
                let rig = try Rig()
                try await rig.a.privateCloudDatabase.save(Zone(zoneName: "bench"))
                try await rig.start()
                propagationRig = rig
            },
            teardown: {
                await propagationRig?.stop()
                propagationRig = nil
            })
    ) { benchmark in
        let rig = propagationRig!
        let zone = Zone.ID(zoneName: "bench")
        rig.counter += 1
        let name = Workload.name(rig.counter)
        var record = Record(recordType: "Track", recordName: name, zoneID: zone)
        for (field, value) in Workload.fields(record: rig.counter, generation: 0) { record[field] = value }
        benchmark.startMeasurement()
        try await rig.a.privateCloudDatabase.save(record)
        while true {
            await rig.waitFor { if case .syncFinished(_, _, .receiving) = $0 { return true } else { return false } }
            if (try? await rig.b.privateCloudDatabase.record(for: Record.ID(recordName: name, zoneID: zone))) != nil { break }
        }
        benchmark.stopMeasurement()
    }

    Benchmark(
        "sync: initial sync of 100,000 records x 8 fields to an empty node",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(60), maxIterations: 3)
    ) { benchmark in
        let rig = try Rig()
        let (sender, _) = try Workload.prepareMemory(.empty, records: 0)
        try Workload.write(sender, records: 0..<100_000, generation: 0)
        try rig.a.apply(changeSet: sender.makeChangeSet(for: Workload.zone, since: VersionVector()))
        benchmark.startMeasurement()
        try await rig.start()
        benchmark.stopMeasurement()
        precondition(try rig.b.privateCloudDatabase.recordCount(inZoneWith: .default) == 100_000)
        await rig.stop()
    }
}
