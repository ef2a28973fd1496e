@_spi(Tools) import LatticeCore
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
                let (all, away) = try privateZoneDevices(in: snapshot, connected: [], horizon: nil)
                let exclusions = try snapshot.peerExclusions()
                let names = Dictionary(try snapshot.peers().map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
                return try snapshot.zones(in: .private).filter { $0.sync.zoneState.exists }.map { zone in
                    let plan = TombstoneHolds(
                        tombstones: try snapshot.tombstoneVectors(in: zone.key), own: zone.sync.vector,
                        devices: Self.holding(zone.key, all.subtracting(away), exclusions),
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
            let holds = try store.read { try $0.peerHolds() }
            return try collectionPass(acknowledgements: holds, connected: [], horizon: nil).zones.reduce(0) { $0 + $1.collected.count }
        }
    }

    /// Drops the signed write blocks that prove no write any record (or zone)
    /// still shows, in every zone: a churning store then keeps about the
    /// blocks its present records need. A running node does it at each
    /// collection pass, for a zone whose blocks doubled since (`onlyIfGrown`).
    /// The records are read outside the write lock. Returns how many went.
    @discardableResult
    public func collectWriteBlocks(onlyIfGrown: Bool = false) throws(LatticeError) -> Int {
        try LatticeError.wrap {
            let zones = try store.read { snapshot in try DatabaseScope.allCases.flatMap { scope in try snapshot.zones(in: scope).map(\.key) } }
            return try zones.reduce(0) { $0 + (try store.collectWriteBlocks(in: $1, ifGrown: onlyIfGrown)) }
        }
    }

    /// Of `devices`, those that replicate `zone`: a device that said it does
    /// not (selective sync) holds none of it, so it holds nothing back.
    static func holding(_ zone: ZoneKey, _ devices: Set<String>, _ exclusions: [String: Set<ZoneKey>]) -> Set<String> {
        devices.filter { !(exclusions[$0]?.contains(zone) ?? false) }
    }

    /// The devices that may hold the account's private zones, and those of
    /// them away past the horizon (`horizon` seconds, else the store's).
    func privateZoneDevices(in snapshot: StoreSnapshot, connected: Set<String>, horizon: Double?) throws -> (all: Set<String>, away: Set<String>) {
        let all = try snapshot.devicesHoldingPrivateZones(besides: deviceID)
        let away = TombstoneHorizon.away(
            all, peers: try snapshot.peers(), connected: connected, horizon: try horizon ?? TombstoneHorizon.seconds(in: snapshot), now: RecordStore.systemWallClock())
        return (all, away)
    }

    /// One pass of collection over the private zones, a transaction each:
    /// the tombstones every device not away acknowledged (`acknowledgements`,
    /// per device and zone) go.
    func collectionPass(acknowledgements: [String: [ZoneKey: VersionVector]], connected: Set<String>, horizon: Double?) throws -> CollectionPass {
        let (zones, devices, exclusions) = try store.read { snapshot in
            (try snapshot.zones(in: .private).filter { $0.sync.zoneState.exists }, try privateZoneDevices(in: snapshot, connected: connected, horizon: horizon),
             try snapshot.peerExclusions())
        }
        var pass = CollectionPass(away: devices.away)
        for zone in zones {
            let acknowledged = acknowledgements.compactMapValues { $0[zone.key] }
            pass.zones.append(try store.write { transaction in
                let tombstones = try transaction.tombstones(in: zone.key)
                // A store no other device holds collects at once.
                let holds = TombstoneHolds(tombstones: tombstones.map(\.vector), own: zone.sync.vector, devices: Self.holding(zone.key, devices.all.subtracting(devices.away), exclusions), acknowledgements: acknowledged)
                let collected = try transaction.collect(tombstones, in: zone.key, acknowledged: holds.acknowledged)
                return CollectionPass.Zone(key: zone.key, collected: collected, holds: holds, through: try transaction.collectedThrough(in: zone.key))
            })
        }
        return pass
    }
}

/// What one collection pass did.
struct CollectionPass {
    struct Zone {
        var key: ZoneKey
        var collected: [String]
        var holds: TombstoneHolds
        /// The join of the zone's collected tombstones' vectors, after the pass.
        var through: VersionVector
    }

    /// Devices away past the horizon: they held nothing back.
    var away: Set<String>
    var zones: [Zone] = []
}
