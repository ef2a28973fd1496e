import ArgumentParser
import Foundation
import Lattice

struct PeersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers", abstract: "Devices this one knows: trusted ones, those seen connecting, and those mDNS sees now.",
        discussion: """
            Trusted devices are always listed. Other devices that mDNS discovery sees (untrusted ones, other containers) are listed while they are on the network. Connection state, discovery and how far behind each side is come from the node running on this store (`lattice serve`), if any; `lattice doctor` explains why a device is not syncing.
            Example: lattice peers
            """)
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let rows = try PeerRow.all(container)
        let status = NodeStatus.read(store: container.directory)
        if !options.json, !rows.isEmpty, status == nil {
            Output.standardError("lattice: no node runs on this store, so connection state is unknown (start one with `lattice serve`)")
        }
        Output.emit(PeersOutput(device: container.deviceID, status: status, rows: rows), json: options.json)
    }

    /// Refusals in a line or two: totals by reason, then the busiest sources.
    static func summary(_ log: StrangerLog) -> String? {
        guard log.total > 0 else { return nil }
        let reasons = StrangerLog.Reason.allCases.compactMap { reason in log.totals[reason.rawValue].map { "\($0) \(words(reason))" } }
        let busiest = Dictionary(log.sources.map { ($0.address, $0.count) }, uniquingKeysWith: +).sorted { ($1.value, $0.key) < ($0.value, $1.key) }.prefix(3)
        return "turned away since the node started: \(reasons.joined(separator: ", ")); recent sources: "
            + busiest.map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
    }

    static func words(_ reason: StrangerLog.Reason) -> String {
        switch reason {
        case .untrusted: return "untrusted"
        case .tooManyConnections: return "over the connection limits"
        case .tooManyStrangers: return "refused at connect for bringing too many strangers"
        case .handshakeFailed: return "failed handshakes"
        case .publicOnly: return "let sync the public database only"
        }
    }

}

/// One device as `peers` and `doctor` show it: what the store knows, merged with what the running node observes.
struct PeerRow {
    var deviceID: String
    var name: String?
    var trusted: Bool
    var connected: Bool
    /// Seen by mDNS discovery now.
    var discovered: Bool
    var address: String?
    var container: String?
    var lastSeen: Date?
    var live: NodeStatus.PeerStatus?
    /// Why the node does not sync with it, as discovery judged (container, version, trust).
    var discoveryProblem: String?
    var discoveryProblemCause: DiscoveryProblem.Cause?
    /// Why the node's last attempt to connect to it failed.
    var dialError: String?
    /// Connections of it the running node refused (not trusted here), recently.
    var refusals: Int?
    /// Batches of it refused: their writes were not what their writers signed.
    var refusedWrites = 0
    var lastRefusedWrite: String?
    /// How it is trusted: "account" (a member of the roster), "hand" (`lattice trust`), "removed", or nil.
    var trust: String?
    /// Zones it said it does not replicate (selective sync): it holds the others.
    var notReplicated: [String] = []

    /// What the ZONES column says of it.
    var zones: String { notReplicated.isEmpty ? (trust == "account" ? "all" : "-") : "all but " + notReplicated.joined(separator: ", ") }

    /// Trusted devices, strangers that connected, and devices discovery sees now, in that order.
    static func all(_ container: Container) throws -> [PeerRow] {
        let known = try library { try container.peers() }
        let exclusions = try library { try container.zonesNotReplicatedByPeers() }
        let status = NodeStatus.read(store: container.directory)
        let live = Dictionary((status?.peers ?? []).map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        let discovered = Dictionary((status?.discovery?.devices ?? []).map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        var rows = known.map { peer in
            let now = live[peer.deviceID]
            let seen = discovered[peer.deviceID]
            return PeerRow(
                deviceID: peer.deviceID, name: peer.name, trusted: peer.trusted, connected: now?.connected ?? false, discovered: seen != nil,
                address: (now?.connected == true ? now?.address : nil) ?? seen?.addresses.first ?? peer.address,
                container: seen?.container, lastSeen: peer.lastSeen, live: now, discoveryProblem: seen?.problem, discoveryProblemCause: seen?.problemCause, dialError: seen?.dialError,
                refusedWrites: peer.refusedWrites, lastRefusedWrite: peer.lastRefusedWrite,
                trust: peer.removed ? "removed" : peer.member ? "account" : peer.trusted ? "hand" : nil,
                notReplicated: (exclusions[peer.deviceID] ?? []).map { $0.0 == .private ? $0.1.zoneName : "\($0.1)" })
        }
        var knownIDs = Set(known.map(\.deviceID))
        for device in (status?.discovery?.devices ?? []) where !knownIDs.contains(device.deviceID) {
            rows.append(PeerRow(
                deviceID: device.deviceID, name: nil, trusted: false, connected: live[device.deviceID]?.connected ?? false, discovered: true,
                address: device.addresses.first, container: device.container, lastSeen: nil, live: live[device.deviceID],
                discoveryProblem: device.problem, discoveryProblemCause: device.problemCause, dialError: device.dialError))
            knownIDs.insert(device.deviceID)
        }
        // Devices the node refused lately: in memory there, in the store at most once a minute.
        for stranger in status?.strangers?.devices ?? [] {
            let seen = Date(timeIntervalSince1970: Double(stranger.last) / 1000)
            if let index = rows.firstIndex(where: { $0.deviceID == stranger.deviceID }) {
                if stranger.publicOnly != true { rows[index].refusals = stranger.count }
                if rows[index].lastSeen.map({ $0 < seen }) ?? true { rows[index].lastSeen = seen }
                if !rows[index].connected { rows[index].address = stranger.address }
            } else {
                rows.append(PeerRow(
                    deviceID: stranger.deviceID, name: nil, trusted: false, connected: live[stranger.deviceID]?.connected ?? false, discovered: false, address: stranger.address,
                    container: nil, lastSeen: seen, live: live[stranger.deviceID], refusals: stranger.publicOnly == true ? nil : stranger.count))
            }
        }
        return rows.sorted { ($0.trusted ? 0 : 1, $0.name ?? "~", $0.deviceID) < ($1.trusted ? 0 : 1, $1.name ?? "~", $1.deviceID) }
    }

    var note: String {
        switch discoveryProblemCause {
        case .anotherContainer: return "container \(container ?? "?")"
        case .versionMismatch: return "protocol version mismatch"
        case .notTrustedHere, nil: break
        }
        if trust == "removed" { return "removed from the account: refused" }
        if live?.clockSkew == true { return "clock ahead: records deferred" }
        if refusedWrites > 0 { return "refused \(refusedWrites) batch(es) of writes their writers did not sign; last: \(lastRefusedWrite ?? "?")" }
        if let dialError, !connected { return "cannot connect: \(dialError)" }
        if let error = live?.lastError, !connected { return error }
        if let refusals, !trusted { return "refused \(refusals) time(s): not trusted here" }
        if let refused = live?.refusedRecords, refused > 0 { return "refused \(refused) record(s): \(live?.lastRefusal ?? "?")" }
        if live?.access == "public only" { return "public database only: not in this account" }
        if let verified = live?.verified, !verified.isEmpty, verified.allSatisfy({ $0.differences == 0 }),
           let oldest = verified.compactMap(\.inSyncAt).min() {
            return "verified in sync at \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(oldest) / 1000)))"
        }
        if let mismatch = live?.lastMismatch { return "digests differ: \(mismatch)" }
        return ""
    }

    var text: [String] {
        [
            name ?? "-", deviceID, trust == "account" ? "account" : trusted ? "by hand" : "no", connected ? "yes" : "no", discovered ? "yes" : "no", address ?? "-",
            lastSeen.map { ISO8601DateFormatter().string(from: $0) } ?? "never",
            live.map { "\($0.recordsBehind)/\($0.recordsPeerBehind)" } ?? "-", zones, note.isEmpty ? "-" : note,
        ]
    }

    var json: PeersOutput.Peer {
        PeersOutput.Peer(
            deviceID: deviceID, name: name, trusted: trusted, trust: trust, connected: connected, discovered: discovered, address: address, container: container,
            lastSeen: lastSeen.map { Int64($0.timeIntervalSince1970 * 1000) }, recordsBehind: live.map(\.recordsBehind), recordsPeerBehind: live.map(\.recordsPeerBehind),
            problem: discoveryProblem, lastError: live?.lastError, clockSkew: live?.clockSkew ?? false, refusals: refusals ?? 0,
            refusedWrites: .init(count: refusedWrites, last: lastRefusedWrite), access: live?.access,
            refusedRecords: live?.refusedRecords ?? 0, lastRefusal: live?.lastRefusal,
            verified: live?.verified ?? [], lastMismatch: live?.lastMismatch,
            messagesSent: live?.messagesSent, messagesReceived: live?.messagesReceived, notReplicated: notReplicated)
    }
}

/// What `peers` prints: every known device, and the connections the node turned away.
struct PeersOutput: CommandOutput {
    struct Peer: Encodable {
        struct Refused: Encodable {
            var count: Int
            @Nullable var last: String?
        }

        var deviceID: String
        @Nullable var name: String?
        var trusted: Bool
        @Nullable var trust: String?
        var connected: Bool
        var discovered: Bool
        @Nullable var address: String?
        @Nullable var container: String?
        /// Milliseconds since 1970.
        @Nullable var lastSeen: Int64?
        @Nullable var recordsBehind: Int?
        @Nullable var recordsPeerBehind: Int?
        @Nullable var problem: String?
        @Nullable var lastError: String?
        var clockSkew: Bool
        var refusals: Int
        var refusedWrites: Refused
        /// What the peer syncs with the running node: "account", "public only", or null when not connected.
        @Nullable var access: String?
        /// Records from it the running node refused: writes their writers had no right to make.
        var refusedRecords: Int
        @Nullable var lastRefusal: String?
        /// Per zone, when the running node and the device last found their digests alike after a sync.
        var verified: [NodeStatus.ZoneVerification]
        @Nullable var lastMismatch: String?
        /// Messages the running node sent the device and received from it, pings aside (relaying keeps them to links that carry news).
        @Nullable var messagesSent: Int?
        @Nullable var messagesReceived: Int?
        /// Zones the device said it does not replicate (selective sync); it holds the others.
        var notReplicated: [String]
    }

    var device: String
    var nodeRunning: Bool
    @Nullable var discovery: String?
    var peers: [Peer]
    @Nullable var turnedAway: StrangerLog?
    /// The devices as people see them: a row of the table each.
    var rows: [PeerRow]

    enum CodingKeys: String, CodingKey { case device, nodeRunning, discovery, peers, turnedAway }

    init(device: String, status: NodeStatus?, rows: [PeerRow]) {
        self.device = device
        nodeRunning = status != nil
        discovery = status?.discovery?.state
        peers = rows.map(\.json)
        turnedAway = status?.strangers
        self.rows = rows
    }

    /// A table of the devices, then what the node turned away.
    var text: String {
        var lines = [rows.isEmpty ? "no known devices; trust one with `lattice trust DEVICE-ID` (its `lattice id`)"
            : Output.table(header: ["NAME", "DEVICE ID", "TRUSTED", "CONNECTED", "ON LAN", "ADDRESS", "LAST SEEN", "BEHIND (us/them)", "ZONES", "NOTE"], rows: rows.map(\.text))]
        if let turnedAway, let summary = PeersCommand.summary(turnedAway) { lines.append(summary) }
        return lines.joined(separator: "\n")
    }
}
