import Benchmark
import Foundation
import Lattice
@_spi(Tools) import LatticeCore
import Workload

// Set in a benchmark's setup, read by its iterations, cleared in its teardown:
// package-benchmark runs those one after another, never two at once.
nonisolated(unsafe) var propagationRig: SyncPair?
nonisolated(unsafe) var saves = 0

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "sync: library save on A until a query on B sees it",
        configuration: .init(
            metrics: [.wallClock], maxDuration: .seconds(30), maxIterations: 1000,
            setup: {
                let rig = try SyncPair()
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
        saves += 1
        let name = Workload.name(saves)
        var record = Record(recordType: "Track", recordName: name, zoneID: zone)
        for (field, value) in Workload.fields(record: saves, generation: 0) { record[field] = value }
        benchmark.startMeasurement()
        try await rig.a.privateCloudDatabase.save(record)
        await rig.waitUntilBHas(name, in: zone)
        benchmark.stopMeasurement()
    }

    Benchmark(
        "sync: initial sync of 100,000 records x 8 fields to an empty node",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], maxDuration: .seconds(60), maxIterations: 3)
    ) { benchmark in
        let rig = try SyncPair()
        let (sender, _) = try Workload.prepareMemory(.empty, records: 0)
        try Workload.write(sender, records: 0..<100_000, generation: 0)
        try rig.a.apply(changeSet: sender.makeChangeSet(for: Workload.zone, since: VersionVector()))
        benchmark.startMeasurement()
        try await rig.start()
        benchmark.stopMeasurement()
        let received = try rig.b.privateCloudDatabase.recordCount(inZoneWith: .default)
        precondition(received == 100_000, "B has \(received) of 100,000 records")
        await rig.stop()
    }
}
