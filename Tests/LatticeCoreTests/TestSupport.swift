@_spi(Tools) import LatticeCore
@_exported import LatticeTestSupport

let testZone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))

func replicaID(_ n: UInt64) -> ReplicaID { ReplicaID(high: n, low: n &* 31) }

func makeReplica(_ n: UInt64, clock: ManualClock) -> MemoryReplica {
    let replica = MemoryReplica(replica: replicaID(n), wallClock: { clock.now })
    return replica
}
