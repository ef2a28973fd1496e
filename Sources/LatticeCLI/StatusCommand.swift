import ArgumentParser
import Foundation
import Lattice

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Store, device, zones and schema at a glance.", discussion: "Example: lattice status")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let database = container.database(with: options.scope)
        let zones = try library { try database.allRecordZones() }
        let counts = try zones.map { zone in try library { try database.recordCount(inZoneWith: zone.zoneID) } }
        let schema = try library { try container.schema() }
        let sequence = try library { try container.commitSequence() }
        let name = try library { try container.deviceName() }
        let nodeStatus = NodeStatus.read(store: container.directory)
        let tombstones = options.scope == .private ? try library { try container.tombstoneReports() } : []
        let usage = try library { try container.assetUsage() }
        let quota = try library { try container.assetQuota() }
        let history = try library { try container.historySettings() }
        let notReplicated = try library { try database.zonesNotReplicated() }
        let replicatedOnly = options.scope == .private ? try library { try database.replicatedZones() } : nil
        let peerExclusions = try library { try container.zonesNotReplicatedByPeers() }
        Output.emit(StatusOutput(
            store: container.directory.path, deviceID: container.deviceID, name: name, database: options.scope.description, commitSequence: sequence,
            environment: schema.isProduction ? "production" : "development",
            zones: zip(zones, counts).map { WebServicesZone($0.zoneID, recordCount: $1) },
            tombstones: tombstones.map(StatusOutput.Tombstones.init),
            assets: StatusOutput.Assets(usage, quota: quota),
            history: StatusOutput.History(kept: history.isKept, retainDays: history.retentionDays, entries: history.entries, bytes: history.bytes),
            notReplicated: notReplicated.map(\.zoneName), replicatedOnly: replicatedOnly?.map(\.zoneName),
            sync: StatusOutput.Sync(nodeStatus, exclusions: peerExclusions)), json: options.json)
    }
}

/// What `status` prints: the store, its zones, and the running node's state.
struct StatusOutput: CommandOutput {
    /// `{"running": false}` without a node; the node's published status with one.
    struct Sync: Encodable {
        struct Peer: Encodable {
            var deviceID: String
            var connected: Bool
            var address: String
            @Nullable var lastError: String?
            var zones: [Zone]
            /// Per zone, when the digests last matched after a sync (milliseconds since 1970).
            var verified: [NodeStatus.ZoneVerification]
            @Nullable var lastMismatch: String?
            /// Zones the peer said it does not replicate (selective sync); it holds the others.
            var notReplicated: [String]
        }

        struct Zone: Encodable {
            var zone: String
            var direction: String
            var state: String
            var recordsDone: Int
            var recordsTotal: Int
            var bytesDone: Int
            var bytesTotal: Int
            @Nullable var lastSync: UInt64?
        }

        /// The discovery state as the node publishes it, or `{"state": "off"}`.
        enum Discovery: Encodable {
            case published(NodeStatus.Discovery)
            case off

            func encode(to encoder: Encoder) throws {
                switch self {
                case .published(let discovery): try discovery.encode(to: encoder)
                case .off: try ["state": "off"].encode(to: encoder)
                }
            }
        }

        var running: Bool
        var pid: Int?
        var listeningPort: Int?
        var commitWatch: String?
        var discovery: Discovery?
        var peers: [Peer]?
        var assets: [NodeStatus.AssetTransfer]?
        var assetsOverQuota: [NodeStatus.QuotaHold]?
        /// The node's status as it published it, which people are shown (not encoded).
        var node: NodeStatus?

        init(_ status: NodeStatus?, exclusions: [String: [(DatabaseScope, Lattice.Zone.ID)]] = [:]) {
            node = status
            guard let status else { running = false; return }
            running = true
            pid = Int(status.pid)
            listeningPort = status.listeningPort
            commitWatch = status.commitWatch
            assets = status.assets ?? []
            assetsOverQuota = status.assetsOverQuota ?? []
            discovery = status.discovery.map(Discovery.published) ?? .off
            peers = status.peers.map { peer in
                Peer(deviceID: peer.deviceID, connected: peer.connected, address: peer.address, lastError: peer.lastError, zones: peer.zones.map { zone in
                    Zone(zone: zone.zone, direction: zone.direction, state: zone.state, recordsDone: zone.recordsDone, recordsTotal: zone.recordsTotal,
                         bytesDone: zone.bytesDone, bytesTotal: zone.bytesTotal, lastSync: zone.lastSync)
                }, verified: peer.verified ?? [], lastMismatch: peer.lastMismatch,
                notReplicated: peer.notReplicated ?? exclusions[peer.deviceID]?.map { "\($0.1)" } ?? [])
            }
        }

        private enum CodingKeys: String, CodingKey { case running, pid, listeningPort, commitWatch, discovery, peers, assets, assetsOverQuota }

        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(running, forKey: .running)
            guard running else { return }
            // A running node's keys are all present, null when unknown.
            try container.encode(pid, forKey: .pid)
            try container.encode(listeningPort, forKey: .listeningPort)
            try container.encode(commitWatch, forKey: .commitWatch)
            try container.encode(discovery, forKey: .discovery)
            try container.encode(peers, forKey: .peers)
            try container.encode(assets, forKey: .assets)
            try container.encode(assetsOverQuota, forKey: .assetsOverQuota)
        }
    }

    var store: String
    var deviceID: String
    @Nullable var name: String?
    var database: String
    var commitSequence: UInt64
    var environment: String
    var zones: [WebServicesZone]
    /// Per private zone: deleted records' tombstones held and collected, and who holds them back.
    var tombstones: [Tombstones]
    var assets: Assets
    /// Whether history is kept, how long, and how much it holds.
    var history: History
    /// Zones of this database this device does not replicate (selective sync).
    var notReplicated: [String]
    /// The private zones this device replicates alone, if it chose a list (`ModelConfiguration.replicatedZones`).
    @Nullable var replicatedOnly: [String]?
    var sync: Sync

    struct History: Encodable {
        var kept: Bool
        var retainDays: Int
        var entries: Int
        var bytes: Int64
    }

    /// A line per fact, labelled in a column of its own; the node's state last.
    var text: String {
        var lines = [
            "store      \(store)",
            "device     \(deviceID)\(name.map { " (\($0))" } ?? "")",
            "database   \(database)  schema: \(environment)  commits: \(commitSequence)",
        ]
        for zone in zones { lines.append("zone       \(zone.zoneID.zoneName): \(Output.count(zone.recordCount ?? 0, "record"))") }
        for report in tombstones where report.held + report.collected > 0 {
            let waiting = report.waitingFor.map { "\($0.name.map { "\($0) " } ?? "")\($0.deviceID) (\($0.tombstones))" }.joined(separator: ", ")
            let why = !waiting.isEmpty ? ", waiting for \(waiting) to acknowledge them" : report.held > 0 ? ", acknowledged by every device (the node collects them at its next pass)" : ""
            let away = report.away.isEmpty ? "" : "; away past the tombstone horizon, holding none back: \(report.away.joined(separator: ", "))"
            lines.append("tombstones \(report.zoneName): \(report.held) held\(why), \(report.collected) collected\(away)")
        }
        lines += assets.lines.map { "assets     \($0)" }
        lines.append("history    " + (history.kept ? "kept \(history.retainDays) days: " : "off; kept from before: ") + "\(Output.count(history.entries, "entry", plural: "entries")), \(AssetQuota.describe(history.bytes))")
        if let replicatedOnly { lines.append("selective  replicates only: \(replicatedOnly.isEmpty ? "no private zone" : replicatedOnly.joined(separator: ", "))") }
        if !notReplicated.isEmpty { lines.append("selective  not replicated here: \(notReplicated.joined(separator: ", ")) (lattice zone sync ZONE --on)") }
        guard let nodeStatus = sync.node else {
            lines.append("sync       no node runs on this store (start one with `lattice serve`)")
            return lines.joined(separator: "\n")
        }
        lines.append("sync       node pid \(nodeStatus.pid)\(nodeStatus.listeningPort.map { ", listening on port \($0)" } ?? "")")
        if let discovery = nodeStatus.discovery {
            lines.append("mdns       \(discovery.state)\(discovery.problem.map { ": \($0)" } ?? "")\(discovery.state == "running" ? ", \(discovery.devices.count) other device(s) seen" : "")")
        } else {
            lines.append("mdns       off (--no-mdns)")
        }
        if let watch = nodeStatus.commitWatch { lines.append("commits    heard by \(watch)") }
        for peer in nodeStatus.peers {
            lines.append("peer       \(peer.deviceID)  \(peer.connected ? "connected" : "disconnected")  \(peer.address)\(peer.lastError.map { "  last error: \($0)" } ?? "")")
            if let excluded = peer.notReplicated, !excluded.isEmpty { lines.append("  holds every zone but \(excluded.joined(separator: ", ")) (selective sync)") }
            for zone in peer.zones {
                let last = zone.lastSync.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0) / 1000)) } ?? "never"
                let progress = zone.state == "syncing"
                    ? "  \(zone.recordsDone)/\(zone.recordsTotal) records, \(zone.bytesDone / 1024)/\(zone.bytesTotal / 1024) KiB" : ""
                lines.append("  \(zone.zone) \(zone.direction): \(zone.state)\(progress)  last sync \(last)")
            }
            for zone in peer.verified ?? [] {
                let when = zone.inSyncAt.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0) / 1000)) }
                lines.append("  \(zone.zone) " + (zone.differences == 0 ? "verified in sync at \(when ?? "?")" : "\(zone.differences) record(s) differ at the last comparison\(when.map { "; last verified in sync at \($0)" } ?? "")"))
            }
            if let mismatch = peer.lastMismatch { lines.append("  digests: \(mismatch)") }
        }
        for hold in nodeStatus.assetsOverQuota ?? [] {
            lines.append("assets     \(hold.source): \(Output.count(hold.assets, "asset")) (\(AssetQuota.describe(hold.bytes))) wait over the quota; `lattice asset fetch` gets them anyway")
        }
        for asset in nodeStatus.assets ?? [] {
            let peers = asset.bytesByPeer.sorted { $0.key < $1.key }.map { "\($0.key.prefix(8)) \($0.value / 1024) KiB" }.joined(separator: ", ")
            lines.append("asset      \(asset.hash.prefix(16))…  \(asset.state)  \(asset.bytesDone / 1024)/\(asset.size / 1024) KiB\(peers.isEmpty ? "" : "  from \(peers)")\(asset.problem.map { "  last problem: \($0)" } ?? "")")
        }
        return lines.joined(separator: "\n")
    }

    /// Asset content per source, with the quota on what comes from outside the account.
    struct Assets: Encodable {
        struct Source: Encodable {
            /// "this account", "account ID" or "device ID".
            var source: String
            var heldAssets: Int
            var heldBytes: Int64
            var missingAssets: Int
            var missingBytes: Int64
            /// Whether the quota bounds it: people are shown the quota beside such a source.
            var outsideAccount: Bool

            enum CodingKeys: String, CodingKey { case source, heldAssets, heldBytes, missingAssets, missingBytes }
        }

        var quotaPerSource: Int64
        var quotaTotal: Int64
        var outsideHeldBytes: Int64
        var sources: [Source]

        init(_ usage: AssetUsageReport, quota: AssetQuota) {
            quotaPerSource = quota.perSource
            quotaTotal = quota.total
            outsideHeldBytes = usage.outsideHeldBytes
            sources = usage.sources.map {
                Source(source: $0.source.description, heldAssets: $0.heldAssets, heldBytes: $0.heldBytes, missingAssets: $0.missingAssets, missingBytes: $0.missingBytes,
                       outsideAccount: $0.source.isOutsideAccount)
            }
        }

        /// Asset content per source, and the quota on content from outside the account.
        var lines: [String] {
            guard !sources.isEmpty else { return [] }
            var lines = sources.map { row in
                let held = "\(Output.count(row.heldAssets, "asset")) held (\(AssetQuota.describe(row.heldBytes)))"
                let missing = row.missingAssets > 0 ? ", \(row.missingAssets) not here (\(AssetQuota.describe(row.missingBytes)))" : ""
                let bound = row.outsideAccount ? ", quota \(AssetQuota.describe(quotaPerSource))" : ""
                return "\(row.source): \(held)\(missing)\(bound)"
            }
            if sources.contains(where: \.outsideAccount) {
                lines.append("outside this account: \(AssetQuota.describe(outsideHeldBytes)) held of a \(AssetQuota.describe(quotaTotal)) quota (`lattice serve --asset-quota`, `--asset-quota-per-writer`)")
            }
            return lines
        }
    }

    struct Tombstones: Encodable {
        struct Waiting: Encodable {
            var deviceID: String
            @Nullable var name: String?
            var tombstones: Int
        }

        var zoneName: String
        var held: Int
        var collected: Int
        var waitingFor: [Waiting]
        var away: [String]

        init(_ report: TombstoneReport) {
            away = report.away
            zoneName = report.zoneID.zoneName
            held = report.held
            collected = report.collected
            waitingFor = report.waitingFor.map { Waiting(deviceID: $0.deviceID, name: $0.name, tombstones: $0.tombstones) }
        }
    }
}
