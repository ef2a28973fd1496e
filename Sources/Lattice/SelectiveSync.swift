import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

extension Database {
    /// Whether this device replicates the zone (selective sync; all zones do unless turned off).
    public func isReplicated(_ zoneID: Zone.ID) throws(LatticeError) -> Bool {
        try LatticeError.wrap { try store.read { try !$0.isExcluded(storedKey(zoneID, in: $0)) } }
    }

    /// The zones of this database this device holds and does not replicate,
    /// or was told not to (`setReplicated`). With a list of the zones
    /// replicated (`setReplicatedZones`), every other private zone is not either.
    public func zonesNotReplicated() throws(LatticeError) -> [Zone.ID] {
        try LatticeError.wrap {
            try store.read { snapshot in
                try snapshot.excludedZones().filter { $0.scope == databaseScope }.map(\.zoneID).sorted { $0.description < $1.description }
            }
        }
    }

    /// Turns the zone's replication on this device off or on (selective sync).
    ///
    /// Off, the device drops what it holds of the zone (records, tombstones,
    /// signatures, history, assets no other zone references), tells its peers
    /// in its hello, and is sent none of it; reads of the zone fail with
    /// zoneNotFound, saying why. On again, the zone is fetched whole from peers,
    /// as by a new device. Turning on a zone that is on, or off one that is
    /// off, changes nothing.
    public func setReplicated(_ zoneID: Zone.ID, _ replicated: Bool) throws(LatticeError) {
        guard !zoneID.isDefault else {
            throw LatticeError(.invalidArguments, "a database's default zone is always replicated")
        }
        try RecordValidation.checkZoneName(zoneID.zoneName)
        let orphaned = try LatticeError.wrap {
            try store.write { transaction -> [[UInt8]] in
                let zone = try storedKey(zoneID, in: transaction)
                guard try transaction.isExcluded(zone) == replicated else { return [] }
                return try transaction.setReplicated(zone, replicated)
            }
        }
        removeAssetFiles(orphaned)
    }
}

extension Database {
    /// Makes `zones` the zones of the private database this device
    /// replicates, and no other but the default zone, whatever peers hold (nil: every zone not
    /// turned off one by one, the default). It drops what it holds of the
    /// others; a zone turned on later with `setReplicated` joins the list.
    public func setReplicatedZones(_ zones: [Zone.ID]?) throws(LatticeError) {
        guard databaseScope == .private else { throw LatticeError(.invalidArguments, "a list of the zones replicated is the private database's") }
        for zone in zones ?? [] where !zone.isDefault { try RecordValidation.checkZoneName(zone.zoneName) }
        let orphaned = try LatticeError.wrap {
            try store.write { transaction in
                try transaction.setOnlyZones(zones.map { Set($0.map { ZoneKey(scope: .private, zoneID: $0) }) })
            }
        }
        removeAssetFiles(orphaned)
    }

    /// The private zones this device replicates alone, if it chose a list (`setReplicatedZones`).
    public func replicatedZones() throws(LatticeError) -> [Zone.ID]? {
        try LatticeError.wrap { try store.read { try $0.onlyZones()?.map(\.zoneID).sorted { $0.description < $1.description } } }
    }

    func removeAssetFiles(_ hashes: [[UInt8]]) {
        for hash in hashes {
            let asset = AssetReference(hash: hash, size: 0)
            for url in [AssetFiles.path(for: asset, in: store.directory), AssetFiles.outlinePath(for: asset, in: store.directory),
                        AssetFiles.leavesPath(for: asset, in: store.directory)] {
                try? FileManager.default.removeItem(at: url)
            }
        }
    }
}

extension Container {
    /// For each device of the account that said so in its last hello, the
    /// zones it does not replicate (by database); a device absent holds every zone.
    public func zonesNotReplicatedByPeers() throws(LatticeError) -> [String: [(DatabaseScope, Zone.ID)]] {
        try LatticeError.wrap {
            try store.read { snapshot in
                try snapshot.peerExclusions().mapValues { zones in
                    zones.sorted { $0.description < $1.description }.map { ($0.scope, $0.zoneID) }
                }
            }
        }
    }
}
