@_spi(Tools) import LatticeCore
import LatticeNode
import LatticeStore
import LatticeTransport
import NIOCore

extension SyncNode {
    /// Whom to dial when (`DialPlan`), and the dials running until their connections end.
    struct Dials {
        var plan: DialPlan<PeerAddress>
        /// Dials under way, by number: `stop()` waits for them.
        var running: [Int: Task<Void, Never>] = [:]
        var made = 0
        /// When the plan wakes the node next.
        var wakeAt: NIODeadline?
        /// Connections this node dialed, with the address dialed, until they end.
        var inHandshake: [ObjectIdentifier: (channel: Channel, address: PeerAddress)] = [:]
    }

    /// mDNS: the service, the devices it found, and whom of them the node trusts.
    struct Discovering {
        var service: (any PeerDiscovery)?
        var found: DiscoveredPeers
        /// Trusted device IDs, as of the last commit (trust changes are commits).
        var trusted: Set<String> = []
    }

    /// When the status file is written, and the message counts it shows.
    struct Publishing {
        var debounce = StatusDebounce()
        /// Messages of the connections that ended, per peer, so `status` counts the whole run.
        var pastTraffic: [String: Traffic] = [:]
        /// The message counts the status last showed.
        var trafficShown: [String: Traffic] = [:]
        /// Writes the status when message counts changed and nothing else wrote it.
        var ticker: RepeatedTask?
    }

    /// Tombstone and asset collection: what each peer holds, and the passes.
    struct Collection {
        /// What each peer said it holds of each zone (hellos, acknowledgements, claims; saved ones at start).
        var peerHolds: [String: [ZoneKey: VersionVector]] = [:]
        /// Whether `peerHolds` grew since it was last saved.
        var peerHoldsChanged = false
        /// Per private zone, the join of its collected tombstones' vectors, as of the last pass.
        var collectedThrough: [ZoneKey: VersionVector] = [:]
        /// Whether a pass runs (on its own thread; one at a time).
        var running = false
        /// Peers and zones told this connection which records were collected while they were away.
        var toldCollected: Set<String> = []
        /// Starts the passes.
        var timer: RepeatedTask?
    }

    /// What follows a session's events: deferral backoff, digest comparisons, node requests.
    struct SessionFollowUps {
        /// Sessions in a row that ended with deferred records, per peer: the retry backs off.
        var deferrals: [String: Int] = [:]
        var deferredThisSession: Set<String> = []
        /// Digest comparisons after syncs, per peer.
        var verifications: [String: Verification] = [:]
        /// Node requests taken (`serveNodeRequests`), so each runs once.
        var servedRequests: Set<Int64> = []
    }

    /// Relaying: who neighbors whom, and the commits read for every session at once.
    struct Relay {
        /// The devices each peer of the account said it has sessions with (its `neighbors`).
        var neighborsOf: [String: Set<String>] = [:]
        var neighborsScheduled = false
        /// The store's sequence when commits were last read (`readLocalChanges`), and the
        /// sources of the commits up to it (the last 1,024).
        var feedSequence: UInt64?
        var feedSources: [UInt64: String] = [:]
    }

    /// The node's running parts.
    struct Runtime {
        var listener: Channel?
        var watcher: CommitWatcher?
        /// Polls for commits when there is no wake-up socket.
        var poller: RepeatedTask?
        /// The store's `node.lock`, held while the node runs.
        var lock: Int32 = -1
        var endpoint: SyncEndpoint?
        var stopped = false
    }
}
