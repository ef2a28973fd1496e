import Foundation
import LatticeDiscovery
import LatticeTransport
import NIOCore
@_spi(Tools) import LatticeProtocol

extension SyncNode {
    /// How a node listens, dials, discovers, and whom it syncs with.
    public struct Configuration: Sendable {
        /// Where to listen: `::` is every IPv4 and IPv6 address (plain `0.0.0.0` where
        /// the machine has no IPv6); nil port: do not listen (`sync --once`).
        public var listenHost = "::"
        public var port: Int?
        public var peers: [PeerAddress] = []
        /// Dial peers again when a connection ends.
        public var reconnect = true
        /// How long a peer has to prove its identity.
        public var handshakeTimeout: Duration = .seconds(10)
        /// How often an idle connection is checked with a ping.
        public var pingInterval: Duration = .seconds(15)
        /// A connection silent this long is dead (a pulled cable is noticed in this time).
        public var idleTimeout: Duration = .seconds(45)
        public var maximumConnectionsPerAddress = 8
        /// Write `node-status.json` for `lattice status` in other processes.
        public var publishesStatus = true
        /// Watch the store for commits by other processes through a wake-up
        /// socket; without one (or when it cannot be made) the node polls.
        public var usesWakeUpSocket = true
        /// How often the node looks for commits and trust changes when it has no wake-up socket.
        public var pollInterval: Duration = .milliseconds(500)
        /// Advertise this node and find peers by mDNS (DNS-SD `_lattice._tcp`), and
        /// dial trusted devices of the same container as they appear. Needs a listening port.
        public var discovers = false
        /// Makes the discovery service; tests give a fake.
        package var makeDiscovery: @Sendable (ServiceDiscovery.Advertisement, @escaping @Sendable (DiscoveryEvent) -> Void) -> any PeerDiscovery = { advertisement, onEvent in
            ServiceDiscovery(serviceType: LatticeService.type, advertisement: advertisement, onEvent: onEvent)
        }

        /// Who besides the account syncs the public database with this node (`lattice serve --public-from`).
        public var publicFrom: PublicSyncPolicy = .anyone
        /// The spam limit on what each stranger's public batches may bring.
        public var publicWriteAllowance: PublicWriteAllowance = .default
        /// Strangers dialed at most at once when discovered (for the public database).
        public var maximumStrangersDialed = 16
        /// Strangers' public-database sessions held at most at once; more are refused as strangers are.
        public var maximumPublicOnlySessions = 16
        /// An asset request a peer leaves unanswered this long is asked of another peer.
        public var assetReplyTimeout: Duration = .seconds(20)
        /// How often tombstones and content no record references any more are
        /// looked for, and removed once every device acknowledged what they need.
        public var assetCollectionInterval: Duration = .seconds(60)
        /// A device of the account not seen for this long stops holding
        /// tombstones back; when it returns it is told which records were
        /// collected meanwhile (`SyncMessage.collected`). Nil: the store's
        /// setting (`TombstoneHorizon`), 30 days unless set.
        public var tombstoneHorizon: Duration?

        /// Sessions only compare digests (`lattice diff`): nothing streams and no asset is fetched.
        public var comparesOnly = false
        /// After a sync, digests are compared with the peer at most this often
        /// (its first sync at once); zero turns the comparison off.
        public var verificationInterval: Duration = .seconds(10)

        public init() {}

        /// The transport's settings for these durations.
        var connection: ConnectionSettings {
            var settings = ConnectionSettings()
            settings.handshakeTimeout = TimeAmount(handshakeTimeout)
            settings.pingInterval = TimeAmount(pingInterval)
            settings.idleTimeout = TimeAmount(idleTimeout)
            settings.session.comparesOnly = comparesOnly
            return settings
        }
    }
}

extension TimeAmount {
    /// A Swift `Duration` as NIO's time amount (nanoseconds, saturating).
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = .nanoseconds(nanoseconds.overflow ? .max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000)
    }
}
