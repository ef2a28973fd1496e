@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Logging
import NIOCore
import NIOPosix
import NIOConcurrencyHelpers

/// Listens for and dials sync connections: each gets framing, the handshake,
/// the encryption it installs, and a session handler over the delegate.
package final class SyncEndpoint: Sendable {
    package let identity: Identity
    let delegate: any SyncDelegate
    let group: EventLoopGroup
    let threadPool: NIOThreadPool
    /// Where reconciliation rounds run (they may hash a zone's records first): apart
    /// from `threadPool`, so a zone hashed for the first time holds no batch back.
    let backgroundPool: NIOThreadPool
    let settings: ConnectionSettings
    let logger: Logger
    let onEvent: @Sendable (ConnectionEvent) -> Void
    let limiter: ConnectionLimiter<Channel>
    let refusals: RateLimitedLog
    let tarpit = Tarpit()
    /// Sessions of strangers syncing the public database, and the most the node holds at once:
    /// each may buffer a batch, so their number bounds what strangers cost in memory.
    let publicOnlySessions = NIOLockedValueBox(0)
    let maximumPublicOnlySessions: Int

    package init(
        identity: Identity, delegate: any SyncDelegate, group: EventLoopGroup, threadPool: NIOThreadPool, backgroundPool: NIOThreadPool? = nil,
        settings: ConnectionSettings = ConnectionSettings(), maximumConnectionsPerAddress: Int = 8, maximumConnections: Int = 512,
        maximumPublicOnlySessions: Int = 16, logger: Logger, onEvent: @escaping @Sendable (ConnectionEvent) -> Void
    ) {
        self.maximumPublicOnlySessions = maximumPublicOnlySessions
        self.identity = identity
        self.delegate = delegate
        self.group = group
        self.threadPool = threadPool
        self.backgroundPool = backgroundPool ?? threadPool
        self.settings = settings
        self.logger = logger
        self.onEvent = onEvent
        limiter = ConnectionLimiter(maximumPendingPerSource: maximumConnectionsPerAddress, maximumTotal: maximumConnections)
        refusals = RateLimitedLog(logger: logger)
    }

    /// The largest frame on the wire: a message and the cipher's tag.
    package static let maximumFrameLength = SyncWire.maximumMessageSize + SecretStreamSender.overhead

    /// The pipeline: framing (handshake-sized frames until the peer is known
    /// trusted), the handshake and the encryption it installs, the session.
    /// `onTrusted` runs once the peer's device is known trusted. A stranger
    /// that may sync the public database gets full-sized frames but stays
    /// pending in the limiter: it counts against its source's bound and can be evicted.
    func configure(_ channel: Channel, initiator: Bool, onTrusted: (@Sendable () -> Void)? = nil) throws {
        let limit = FrameLimit(Handshake.maximumMessageLength)
        let handlers: [ChannelHandler] = [
            ByteToMessageHandler(FrameDecoder(limit: limit)),
            MessageToByteHandler(FrameEncoder()),
            try HandshakeHandler(identity: identity, initiator: initiator, versions: SyncWire.versions, timeout: settings.handshakeTimeout),
            SyncSessionHandler(
                delegate: delegate, threadPool: threadPool, backgroundPool: backgroundPool, settings: settings, logger: logger, refusals: refusals,
                onAccepted: { [publicOnlySessions, maximumPublicOnlySessions] access in
                    if !access.isAccount {
                        let admitted = publicOnlySessions.withLockedValue { count in
                            guard count < maximumPublicOnlySessions else { return false }
                            count += 1
                            return true
                        }
                        guard admitted else { return false }
                        channel.closeFuture.whenComplete { _ in publicOnlySessions.withLockedValue { $0 -= 1 } }
                    }
                    limit.maximum = Self.maximumFrameLength
                    if access.isAccount { onTrusted?() }
                    return true
                },
                onEvent: onEvent),
        ]
        try channel.pipeline.syncOperations.addHandlers(handlers)
    }

    /// Listens on `host:port` (port 0 picks one); the channel's local address tells which.
    package func listen(host: String, port: Int) async throws -> Channel {
        let limiter = limiter
        let tarpit = tarpit
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { [self] channel in
                let address = channel.remoteAddress.map(addressText) ?? "?"
                let host = channel.remoteAddress.flatMap(hostText) ?? "?"
                let source = channel.remoteAddress?.connectionSource ?? "?"
                switch limiter.admit(channel, from: source) {
                case .refused(.tooManyStrangers) where tarpit.hold(channel):
                    // No reply, no read, closed a moment later: a client looping on
                    // connect waits instead of making the node accept thousands of sockets a second.
                    onEvent(.turnedAway(address: host, tooManyStrangers: true))
                    return channel.setOption(ChannelOptions.autoRead, value: false)
                case .refused(let why):
                    refusals.notice("connection refused", metadata: [
                        "address": "\(address)",
                        "reason": "\(TransportError.tooManyConnections(source)): \(why.explanation)",
                    ])
                    onEvent(.turnedAway(address: host, tooManyStrangers: why == .tooManyStrangers))
                    return channel.close()
                case .admitted(let evicted):
                    if let evicted {
                        refusals.notice("connection closed", metadata: ["address": "\(evicted.remoteAddress.map(addressText) ?? "?")", "reason": "evicted: the oldest connection still unauthenticated or untrusted"])
                        onEvent(.turnedAway(address: evicted.remoteAddress.flatMap(hostText) ?? "?", tooManyStrangers: false))
                        evicted.close(promise: nil)
                    }
                }
                channel.closeFuture.whenComplete { _ in limiter.release(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try self.configure(channel, initiator: false, onTrusted: { limiter.trusted(channel) })
                }
            }
            .bind(host: host, port: port).get()
    }

    /// Connects to `host:port` and runs a session; the future completes when connected.
    package func connect(host: String, port: Int, timeout: TimeAmount = .seconds(5)) async throws -> Channel {
        try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try self.configure(channel, initiator: true) }
            }
            .connect(host: host, port: port).get()
    }
}
