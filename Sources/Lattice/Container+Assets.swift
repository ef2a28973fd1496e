import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

extension Container {
    /// The assets records here reference (or only those whose content is not here yet).
    public func assetEntries(missingOnly: Bool = false) throws(LatticeError) -> [AssetEntry] {
        try LatticeError.wrap { try store.read { try $0.assetEntries(missingOnly: missingOnly) } }
    }

    /// The asset a file's content would be, without taking it into the store.
    public func assetReference(ofFileAt url: URL) throws(LatticeError) -> AssetReference {
        try LatticeError.wrap {
            guard let input = FileHandle(forReadingAtPath: url.path) else { throw LatticeError(.assetFileNotFound, "cannot read \(url.path)") }
            defer { try? input.close() }
            return try AssetFiles.hash(input, into: AssetHasher())
        }
    }

    /// Asks for the content of `assets`: the node running on this store (in
    /// this process or another) fetches it from a peer that holds it. See
    /// `SyncNode.fetchAssets` to wait for it.
    public func requestAssets(_ assets: [AssetReference]) throws(LatticeError) {
        try LatticeError.wrap {
            try store.write { transaction in
                let now = RecordStore.systemWallClock()
                for asset in assets where try !transaction.hasAsset(asset.hash) { try transaction.wantAsset(asset, at: now) }
            }
        }
    }

    /// Asset content held and missing per source: this account, each other
    /// account whose writers' records reference assets here, each writer of
    /// unknown account.
    public func assetUsage() throws(LatticeError) -> AssetUsageReport {
        try LatticeError.wrap { try store.read { try $0.assetUsage() } }
    }

    /// The bound on asset content a node fetches by itself for records
    /// written outside this account (`AssetQuota.default` unless set).
    public func assetQuota() throws(LatticeError) -> AssetQuota {
        try LatticeError.wrap { try store.read { AssetQuota.read(in: $0) } }
    }

    public func setAssetQuota(_ quota: AssetQuota) throws(LatticeError) {
        guard quota.perSource >= 0, quota.total >= 0 else { throw LatticeError(.invalidArguments, "an asset quota is 0 bytes or more") }
        // A running node hears of it, and fetches what now fits.
        try LatticeError.wrap { try store.write { try $0.setSetting(AssetQuota.settingKey, to: quota.settingValue, wakingNodes: true) } }
    }

    /// Whether the assets of `zone` come with its records (`eager`) or, above
    /// 256 KiB, when asked for (`lazy`, the default). A choice of this device
    /// alone: it does not sync.
    func assetPolicy(of zone: ZoneKey) throws(LatticeError) -> AssetPolicy {
        try LatticeError.wrap { try store.read { AssetFetcher.eagerZones(in: $0).contains(zone) ? .eager : .lazy } }
    }

    func setAssetPolicy(_ policy: AssetPolicy, of zone: ZoneKey) throws(LatticeError) {
        try LatticeError.wrap {
            try store.write { transaction in
                var zones = AssetFetcher.eagerZones(in: transaction)
                if policy == .eager { zones.insert(zone) } else { zones.remove(zone) }
                // A running node hears of it, and fetches what the zone now wants.
                try transaction.setSetting(AssetPolicy.settingKey, to: zones.map(\.settingLine).sorted().joined(separator: "\n"), wakingNodes: true)
            }
        }
    }
}

extension Database {
    /// Whether the assets of a zone come with its records (`eager`) or, above
    /// 256 KiB, when asked for (`lazy`, the default). A choice of this device
    /// alone: it does not sync.
    public func assetPolicy(ofZone zoneID: Zone.ID) throws(LatticeError) -> AssetPolicy {
        try container.assetPolicy(of: storedZoneKey(try resolveZoneID(zoneID)))
    }

    public func setAssetPolicy(_ policy: AssetPolicy, ofZone zoneID: Zone.ID) throws(LatticeError) {
        let resolved = try resolveZoneID(zoneID)
        guard try allRecordZones().contains(where: { $0.zoneID == resolved }) else {
            throw LatticeError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
        }
        try container.setAssetPolicy(policy, of: storedZoneKey(resolved))
    }
}
