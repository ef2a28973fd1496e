import Foundation
import LatticeCore
import LatticeStore

extension SyncNode {
    /// One pass of tombstone collection over the private zones: a tombstone
    /// goes once every device of the account acknowledged (in a hello, an
    /// acknowledgement or a claim, in this run or saved by an earlier one) a
    /// vector of its zone covering it. Shared zones and the public database
    /// keep theirs: not every device that holds them is known here.
    /// Returns how many went.
    @discardableResult
    func collectTombstones() -> Int {
        let store = container.store
        let holds = state.withLockedValue { $0.peerHolds }
        let own = container.deviceID
        guard let (zones, devices) = try? store.read({ snapshot in
            (try snapshot.zones(in: .private).filter { $0.sync.zoneState.exists }, try snapshot.devicesHoldingPrivateZones(besides: own))
        }) else { return 0 }
        var collected = 0
        for zone in zones {
            let acknowledgements = holds.compactMapValues { $0[zone.key] }
            // Stores of one device alone (no other device holds the zone) collect at once.
            guard let plan = try? store.read({ snapshot in
                TombstoneHolds(tombstones: try snapshot.tombstoneVectors(in: zone.key), own: zone.sync.vector, devices: devices, acknowledgements: acknowledgements)
            }) else { continue }
            guard let names = try? store.collectTombstones(in: zone.key, acknowledged: plan.acknowledged), !names.isEmpty else { continue }
            collected += names.count
            logger.info("collected tombstones every device of the account acknowledged", metadata: [
                "zone": "\(zone.key)", "collected": "\(names.count)", "held": "\(plan.held)"])
        }
        return collected
    }
}
