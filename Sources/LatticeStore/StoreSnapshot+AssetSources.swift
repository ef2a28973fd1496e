import Foundation
@_spi(Tools) import LatticeCore

/// Who made this device hold (or want) an asset's content: the writer of a
/// field that references it, by account. Content written outside this
/// account is what a quota bounds.
public enum AssetSource: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// A device of this account (every private zone's writer).
    case thisAccount
    /// A device of another account, by the account's ID.
    case account(String)
    /// A writer whose account this device does not know (a public-database
    /// stranger), by its replica.
    case device(String)

    /// "this account", "account ID" or "device REPLICA".
    public var description: String {
        switch self {
        case .thisAccount: return "this account"
        case .account(let id): return "account \(id)"
        case .device(let replica): return "device \(replica)"
        }
    }

    /// Whether a quota bounds this source's content (anything but this account).
    public var isOutsideAccount: Bool { self != .thisAccount }
}

/// The content of one source's assets: held here, and referenced but not here.
public struct AssetUsage: Sendable, Hashable {
    /// Whose assets these are.
    public var source: AssetSource
    /// Assets whose content is here, and its size.
    public var heldAssets = 0
    /// The bytes of `heldAssets`.
    public var heldBytes: Int64 = 0
    /// Assets referenced whose content is not here, and its size.
    public var missingAssets = 0
    /// The bytes of `missingAssets`.
    public var missingBytes: Int64 = 0

    package init(source: AssetSource) { self.source = source }
}

/// Content per source, and what content from outside the account adds up
/// to (an asset several other sources reference counts once there).
public struct AssetUsageReport: Sendable, Hashable {
    /// This account's first.
    public var sources: [AssetUsage]
    /// The content from outside the account held here, each asset once.
    public var outsideHeldBytes: Int64
    /// The content from outside the account referenced and not here, each asset once.
    public var outsideMissingBytes: Int64

    package init(sources: [AssetUsage], outsideHeldBytes: Int64, outsideMissingBytes: Int64) {
        self.sources = sources
        self.outsideHeldBytes = outsideHeldBytes
        self.outsideMissingBytes = outsideMissingBytes
    }
}

extension StoreSnapshot {
    /// The sources of an asset's references. Only this account writes a
    /// private zone; elsewhere each field value (or conflict's losing value)
    /// naming the asset counts for its writer's account.
    package func sources(of entry: AssetEntry) throws -> Set<AssetSource> {
        var sources = Set<AssetSource>()
        var own: String?
        for (zone, name) in entry.records {
            guard zone.scope != .private else { sources.insert(.thisAccount); continue }
            guard let state = try record(name, in: zone), state.isAlive else { continue }
            for register in state.fields {
                for version in [register.winner] + register.losers {
                    var assets = Set<AssetReference>()
                    version.value.collectAssets(into: &assets)
                    guard assets.contains(entry.asset) else { continue }
                    if own == nil { own = try accountID() }
                    sources.insert(source(of: version.stamp.replica, ownAccount: own!))
                }
            }
        }
        return sources
    }

    /// The source a writer stands for.
    func source(of writer: ReplicaID, ownAccount: String) -> AssetSource {
        let accounts = accounts(of: writer)
        if accounts.contains(ownAccount) { return .thisAccount }
        return accounts.min().map(AssetSource.account) ?? .device(writer.description)
    }

    /// Assets held and missing per source. Content this account references
    /// counts as its alone; content several other sources reference counts
    /// for each of them.
    package func assetUsage() throws -> AssetUsageReport {
        var usage: [AssetSource: AssetUsage] = [:]
        var report = AssetUsageReport(sources: [], outsideHeldBytes: 0, outsideMissingBytes: 0)
        for entry in try assetEntries() {
            let sources = try sources(of: entry)
            let counted: Set<AssetSource> = sources.contains(.thisAccount) ? [.thisAccount] : sources
            for source in counted {
                var row = usage[source] ?? AssetUsage(source: source)
                if entry.isLocal {
                    row.heldAssets += 1
                    row.heldBytes += entry.asset.size
                } else {
                    row.missingAssets += 1
                    row.missingBytes += entry.asset.size
                }
                usage[source] = row
            }
            if !counted.isEmpty, !counted.contains(.thisAccount) {
                if entry.isLocal { report.outsideHeldBytes += entry.asset.size } else { report.outsideMissingBytes += entry.asset.size }
            }
        }
        report.sources = usage.values.sorted { $0.source < $1.source }
        return report
    }
}
