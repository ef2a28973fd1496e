import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

extension Database {
    /// Whether this device replicates the zone (selective sync; all zones do unless turned off).
    public func isReplicated(_ zoneID: Zone.ID) throws(LatticeError) -> Bool {
        try LatticeError.wrap { try store.read { try !$0.isExcluded(storedKey(zoneID, in: $0)) } }
    }

    /// The zones of this database this device does not replicate.
    public func zonesNotReplicated() throws(LatticeError) -> [Zone.ID] {
        try LatticeError.wrap {
            try store.read { try $0.excludedZones().filter { $0.scope == databaseScope }.map(\.zoneID).sorted { $0.description < $1.description } }
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
        guard !zoneID.isDefault || databaseScope != .public else {
            throw LatticeError(.invalidArguments, "the public database's default zone is always replicated")
        }
        try RecordValidation.checkZoneName(zoneID.zoneName)
        let orphaned = try LatticeError.wrap {
            try store.write { transaction -> [[UInt8]] in
                let zone = try storedKey(zoneID, in: transaction)
                guard try transaction.isExcluded(zone) == replicated else { return [] }
                return try transaction.setReplicated(zone, replicated)
            }
        }
        for hash in orphaned {
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
