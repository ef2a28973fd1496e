import LatticeCrypto
import LatticeProtocol
import Logging
import NIOCore
import NIOPosix
import NIOConcurrencyHelpers

/// Bounds connections that have not finished their handshake, per remote
/// address, and all connections in total. At the per-address bound a new
/// connection evicts the oldest unauthenticated one from that address, so
/// idle connections held open by one host cannot lock out a real peer behind
/// the same address (which finishes its handshake in milliseconds).
final class ConnectionLimiter: @unchecked Sendable {
    private let lock = NIOLock()
    private var pending: [String: [Channel]] = [:]
    private var total = 0
    let maximumPendingPerAddress: Int
    let maximumTotal: Int

    init(maximumPendingPerAddress: Int, maximumTotal: Int) {
        self.maximumPendingPerAddress = maximumPendingPerAddress
        self.maximumTotal = maximumTotal
    }

    enum Admission { case admitted(evicting: Channel?), refused }

    func admit(_ channel: Channel, from address: String) -> Admission {
        lock.withLock {
            guard total < maximumTotal else { return .refused }
            total += 1
            var waiting = pending[address] ?? []
            var evicted: Channel?
            if waiting.count >= maximumPendingPerAddress { evicted = waiting.removeFirst() }
            waiting.append(channel)
            pending[address] = waiting
            return .admitted(evicting: evicted)
        }
    }

    /// The handshake finished: the connection no longer counts against its address.
    func authenticated(_ channel: Channel, from address: String) {
        lock.withLock { pending[address]?.removeAll { $0 === channel } }
    }

    func release(_ channel: Channel, from address: String) {
        lock.withLock {
            total -= 1
            pending[address]?.removeAll { $0 === channel }
            if pending[address]?.isEmpty == true { pending[address] = nil }
        }
    }
}

/// Listens for and dials sync connections: each gets framing, the handshake,
/// the encryption it installs, and a session handler over the delegate.
public final class SyncEndpoint: Sendable {
    public let identity: Identity
    let delegate: any SyncDelegate
    let group: EventLoopGroup
    let threadPool: NIOThreadPool
    let settings: ConnectionSettings
    let logger: Logger
    let onEvent: @Sendable (ConnectionEvent) -> Void
    let limiter: ConnectionLimiter

    public init(
        identity: Identity, delegate: any SyncDelegate, group: EventLoopGroup, threadPool: NIOThreadPool,
        settings: ConnectionSettings = ConnectionSettings(), maximumConnectionsPerAddress: Int = 8, maximumConnections: Int = 512,
        logger: Logger, onEvent: @escaping @Sendable (ConnectionEvent) -> Void
    ) {
        self.identity = identity
        self.delegate = delegate
        self.group = group
        self.threadPool = threadPool
        self.settings = settings
        self.logger = logger
        self.onEvent = onEvent
        limiter = ConnectionLimiter(maximumPendingPerAddress: maximumConnectionsPerAddress, maximumTotal: maximumConnections)
    }

    /// The largest frame on the wire: a message and the cipher's tag.
    public static let maximumFrameLength = SyncWire.maximumMessageSize + SecretStreamSender.overhead

    func configure(_ channel: Channel, initiator: Bool, onAuthenticated: (@Sendable () -> Void)? = nil) throws {
        let limit = FrameLimit(Handshake.maximumMessageLength)
        let handlers: [ChannelHandler] = [
            ByteToMessageHandler(FrameDecoder(limit: limit)),
            MessageToByteHandler(FrameEncoder()),
            try HandshakeHandler(
                identity: identity, initiator: initiator, versions: SyncWire.versions, timeout: settings.handshakeTimeout,
                frameLimit: limit, sessionFrameLength: Self.maximumFrameLength),
            SyncSessionHandler(delegate: delegate, threadPool: threadPool, settings: settings, logger: logger, onAuthenticated: onAuthenticated, onEvent: onEvent),
        ]
        try channel.pipeline.syncOperations.addHandlers(handlers)
    }

    /// Listens on `host:port` (port 0 picks one); the channel's local address tells which.
    public func listen(host: String, port: Int) async throws -> Channel {
        let limiter = limiter
        let logger = logger
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { [self] channel in
                let address = channel.remoteAddress.flatMap(hostText) ?? "?"
                switch limiter.admit(channel, from: address) {
                case .refused:
                    logger.notice("connection refused", metadata: ["address": "\(address)", "reason": "\(TransportError.tooManyConnections(address))"])
                    return channel.close()
                case .admitted(let evicted):
                    if let evicted {
                        logger.notice("connection closed", metadata: ["address": "\(address)", "reason": "\(TransportError.tooManyConnections(address)): the oldest unauthenticated one goes"])
                        evicted.close(promise: nil)
                    }
                }
                channel.closeFuture.whenComplete { _ in limiter.release(channel, from: address) }
                return channel.eventLoop.makeCompletedFuture {
                    try self.configure(channel, initiator: false, onAuthenticated: { limiter.authenticated(channel, from: address) })
                }
            }
            .bind(host: host, port: port).get()
    }

    /// Connects to `host:port` and runs a session; the future completes when connected.
    public func connect(host: String, port: Int, timeout: TimeAmount = .seconds(5)) async throws -> Channel {
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
