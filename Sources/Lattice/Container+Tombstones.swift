import LatticeCore
import LatticeStore

/// What a private zone holds of deleted records, and why.
public struct TombstoneReport: Sendable, Hashable {
    public var zoneID: Zone.ID
    /// Tombstones kept: some device of the account has not acknowledged them.
    public var held: Int
    /// Deleted records whose tombstones went (each leaves its residue, a few bytes).
    public var collected: Int
    /// Each device holding tombstones back, with how many.
    public var waitingFor: [(deviceID: String, name: String?, tombstones: Int)]
    /// Devices away longer than the tombstone horizon: they hold nothing back, and are told what went when they return.
    public var away: [String] = []

    public static func == (lhs: TombstoneReport, rhs: TombstoneReport) -> Bool {
        lhs.zoneID == rhs.zoneID && lhs.held == rhs.held && lhs.collected == rhs.collected
            && lhs.waitingFor.map(\.deviceID) == rhs.waitingFor.map(\.deviceID) && lhs.waitingFor.map(\.tombstones) == rhs.waitingFor.map(\.tombstones)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(zoneID)
        hasher.combine(held)
        hasher.combine(collected)
    }
}

extension Container {
    /// For each private zone: tombstones held and collected, and the devices
    /// that hold the rest back, as the acknowledgements a node last saved say.
    public func tombstoneReports() throws(LatticeError) -> [TombstoneReport] {
        try LatticeError.wrap {
            try store.read { snapshot in
                let holds = try snapshot.peerHolds()
                let all = try snapshot.devicesHoldingPrivateZones(besides: deviceID)
                let away = TombstoneHorizon.away(all, peers: try snapshot.peers(), connected: [], horizon: try TombstoneHorizon.seconds(in: snapshot), now: RecordStore.systemWallClock())
                let devices = all.subtracting(away)
                let names = Dictionary(try snapshot.peers().map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
                return try snapshot.zones(in: .private).filter { $0.sync.zoneState.exists }.map { zone in
                    let plan = TombstoneHolds(
                        tombstones: try snapshot.tombstoneVectors(in: zone.key), own: zone.sync.vector, devices: devices,
                        acknowledgements: holds.compactMapValues { $0[zone.key] })
                    let counts = try snapshot.tombstoneCounts(in: zone.key)
                    return TombstoneReport(
                        zoneID: zone.key.zoneID, held: counts.held, collected: counts.collected,
                        waitingFor: plan.waitingFor.sorted { $0.key < $1.key }.map { ($0.key, names[$0.key] ?? nil, $0.value) }, away: away.sorted())
                }
            }
        }
    }

    /// Sets how long a device of the account may go unseen before it stops
    /// holding tombstones back (kept in the store; 30 days unless set).
    public func setTombstoneHorizon(seconds: Double) throws(LatticeError) {
        guard seconds > 0, seconds.isFinite else { throw LatticeError(.invalidArguments, "a tombstone horizon must be a positive duration") }
        try LatticeError.wrap { try store.write { try $0.setSetting(TombstoneHorizon.settingKey, to: String(seconds)) } }
    }

    /// Collects the tombstones of private zones that every device of the
    /// account acknowledged, as a node last saved their acknowledgements
    /// (a running node does this itself, every minute); returns how many went.
    @discardableResult
    public func collectTombstones() throws(LatticeError) -> Int {
        try LatticeError.wrap {
            let (zones, devices, holds) = try store.read { snapshot in
                let all = try snapshot.devicesHoldingPrivateZones(besides: deviceID)
                let away = TombstoneHorizon.away(all, peers: try snapshot.peers(), connected: [], horizon: try TombstoneHorizon.seconds(in: snapshot), now: RecordStore.systemWallClock())
                return (try snapshot.zones(in: .private).filter { $0.sync.zoneState.exists }, all.subtracting(away), try snapshot.peerHolds())
            }
            var collected = 0
            for zone in zones {
                collected += try store.write { transaction in
                    let plan = TombstoneHolds(
                        tombstones: try transaction.tombstoneVectors(in: zone.key), own: zone.sync.vector, devices: devices,
                        acknowledgements: holds.compactMapValues { $0[zone.key] })
                    return try transaction.collectTombstones(in: zone.key, acknowledged: plan.acknowledged).count
                }
            }
            return collected
        }
    }
}
