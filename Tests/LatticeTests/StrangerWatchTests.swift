@testable import Lattice
import NIOCore
import Testing

/// A flood of strangers against the node's policy on a manual clock: no socket.
@Suite struct StrangerWatchTests {
    @Test func aFloodCostsBoundedMemoryAFewEventsAndOneStoreWriteAMinute() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
        var watch = StrangerWatch(at: start)
        var saves = 0
        var events = 0
        var saved: Set<String> = []
        // 150 s of a flood: 100 refusals a second, from 500 addresses with throwaway identities.
        for tick in 0..<15_000 {
            let now = start + .milliseconds(Int64(tick * 10))
            let address = "10.0.\(tick % 500 / 250).\(tick % 250)"
            if watch.note(.untrusted, address: address, deviceID: "stranger-\(tick)", wallClock: UInt64(tick), at: now) {
                saves += 1
                saved.formUnion(watch.takeUnsaved(at: now).map(\.deviceID))
            }
            if watch.announcesRefusal(at: now) { events += 1 }
        }
        // Every refusal counted; the log keeps the most recent sources and devices only.
        #expect(watch.log.total == 15_000)
        #expect(watch.log.sources.count == StrangerLog.maximumSources)
        #expect(watch.log.devices.map(\.deviceID).first == "stranger-14999")
        #expect(watch.log.devices.count == StrangerLog.maximumDevices)
        // A store write at 60 s and at 120 s, ten devices each; five events per 10 s window.
        #expect(saves == 2)
        #expect(saved.count == 2 * StrangerLog.maximumDevices)
        #expect(events == 15 * 5)
    }

    @Test func handshakeFailuresAreCountedButNeverSavedForThereIsNoDeviceToTrust() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
        var watch = StrangerWatch(at: start)
        let save = watch.note(.handshakeFailed, address: "10.0.0.9", deviceID: nil, wallClock: 1, at: start + .seconds(120))
        #expect(!save)
        #expect(watch.takeUnsaved(at: start + .seconds(120)).isEmpty)
        #expect(watch.log.totals == ["handshakeFailed": 1])
    }
}
