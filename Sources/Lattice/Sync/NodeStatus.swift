import Foundation
import LatticeStore

/// What a running node shows other processes (`lattice status`, `lattice peers`):
/// written to `node-status.json` in the store as it changes.
public struct NodeStatus: Codable, Sendable, Hashable {
    public struct ZoneProgress: Codable, Sendable, Hashable {
        public var zone: String
        /// "receiving" or "sending".
        public var direction: String
        /// "syncing" while a stream runs, "idle" after it.
        public var state: String
        public var recordsDone: Int
        public var recordsTotal: Int
        public var bytesDone: Int
        public var bytesTotal: Int
        /// Milliseconds since 1970 of the last completed stream.
        public var lastSync: UInt64?
    }

    /// A zone whose digests this node and a peer compared.
    public struct ZoneVerification: Codable, Sendable, Hashable {
        public var zone: String
        /// Milliseconds since 1970 of the last comparison that found the zone alike on both.
        public var inSyncAt: UInt64?
        /// Records held differently at the last comparison (0 when alike).
        public var differences: Int
    }

    public struct PeerStatus: Codable, Sendable, Hashable {
        public var deviceID: String
        public var address: String
        public var connected: Bool
        public var zones: [ZoneProgress]
        public var lastError: String?
        public var lastErrorCause: Disconnection.Cause?
        /// Records from it wait because its clock runs ahead of this one's by more than the skew bound.
        public var clockSkew: Bool?
        /// What the peer may sync here: "account" (private and public databases) or "public only".
        public var access: String?
        /// Records from it refused in this node's run: writes their writers had no right to make.
        public var refusedRecords: Int?
        /// Why the last of them was.
        public var lastRefusal: String?
        /// When this node and the peer last compared digests after a sync and
        /// found each zone alike (milliseconds since 1970), per zone.
        public var verified: [ZoneVerification]?
        /// The last comparison that found records held differently, and what was done.
        public var lastMismatch: String?
        /// Messages sent to and received from the peer in this node's run, pings aside.
        public var messagesSent: Int?
        public var messagesReceived: Int?
        /// Zones the peer said it does not replicate (selective sync), by name (`ZONE` or `ZONE:OWNER`).
        public var notReplicated: [String]?

        /// Records this side still has to receive from the peer in running streams.
        public var recordsBehind: Int { zones.filter { $0.direction == "receiving" }.reduce(0) { $0 + max(0, $1.recordsTotal - $1.recordsDone) } }
        /// Records the peer still has to receive from this side in running streams.
        public var recordsPeerBehind: Int { zones.filter { $0.direction == "sending" }.reduce(0) { $0 + max(0, $1.recordsTotal - $1.recordsDone) } }
    }

    /// What mDNS discovery observed.
    public struct Discovery: Codable, Sendable, Hashable {
        /// "running", "unavailable" (with `problem`), or "off" (--no-mdns).
        public var state: String
        public var problem: String?
        /// The name this node advertises under, once registered.
        public var advertisedAs: String?
        public var devices: [Device]

        public init(state: String, problem: String? = nil, advertisedAs: String? = nil, devices: [Device] = []) {
            self.state = state
            self.problem = problem
            self.advertisedAs = advertisedAs
            self.devices = devices
        }
    }

    /// A device discovery sees now.
    public struct Device: Codable, Sendable, Hashable {
        public var deviceID: String
        public var container: String
        /// As advertised: "1" or "1-3"; nil when unreadable.
        public var protocolVersions: String?
        public var addresses: [String]
        public var port: Int
        /// How many interfaces it was seen on.
        public var interfaces: Int
        public var trusted: Bool
        /// Why this node does not sync with it (another container, version, trust); nil when it does.
        public var problem: String?
        public var problemCause: DiscoveryProblem.Cause?
        /// Why the last attempt to connect to it failed, per address, until one succeeds.
        public var dialError: String?
    }

    /// An asset whose content this node is fetching, or waits to fetch.
    public struct AssetTransfer: Codable, Sendable, Hashable {
        /// The content hash, hex.
        public var hash: String
        public var size: Int64
        /// Bytes held so far (those a resumed transfer found included).
        public var bytesDone: Int64
        /// "waiting" (no peer has sent its outline yet) or "fetching".
        public var state: String
        /// Bytes each peer sent in this node's run.
        public var bytesByPeer: [String: Int64]
        /// The last thing that went wrong: a peer lacks it, a chunk did not check.
        public var problem: String?
    }

    /// Assets of one source outside the account that the quota keeps from
    /// being fetched by themselves (`AssetQuota`).
    public struct QuotaHold: Codable, Sendable, Hashable {
        /// "account ID" or "device ID".
        public var source: String
        public var assets: Int
        public var bytes: Int64
    }

    public var pid: Int32
    public var startedAt: UInt64
    public var listeningPort: Int?
    public var peers: [PeerStatus]
    public var discovery: Discovery?
    /// How the node hears of other processes' commits: "wake-up socket", or "polling every N ms: why".
    public var commitWatch: String?
    /// Connections turned away, bounded.
    public var strangers: StrangerLog?
    /// Assets being fetched.
    public var assets: [AssetTransfer]?
    /// Assets the quota on content written outside the account holds back, per source.
    public var assetsOverQuota: [QuotaHold]?

    public static let fileName = "node-status.json"

    /// The status of the node running on the store in `directory`, if one runs.
    public static func read(store directory: URL) -> NodeStatus? {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(fileName)),
              let status = try? JSONDecoder().decode(NodeStatus.self, from: data) else { return nil }
        // A node killed with SIGKILL leaves its file behind: only a live process counts.
        guard kill(status.pid, 0) == 0 || errno == EPERM else { return nil }
        return status
    }

    /// Whether a node runs on the store in `directory` now: it holds the
    /// store's `node.lock` from its start (its status file comes a moment later).
    public static func nodeRuns(store directory: URL) -> Bool {
        let fd = open(directory.appendingPathComponent("node.lock").path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }

    func write(store directory: URL) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return }
        do {
            try PrivateFiles.writeAtomically(data, to: directory.appendingPathComponent(Self.fileName).path)
        } catch {
            // Status is best effort: syncing goes on without it.
        }
    }
}
