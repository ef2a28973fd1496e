import LatticeCrypto
import LatticeProtocol
import Logging
import NIOCore
import NIOPosix
import NIOConcurrencyHelpers

/// Bounds connections per remote address (and in all): one more is closed
/// as soon as it is accepted, before any byte of it is read.
final class ConnectionLimiter: @unchecked Sendable {
    private let lock = NIOLock()
    private var perAddress: [String: Int] = [:]
    private var total = 0
    let maximumPerAddress: Int
    let maximumTotal: Int

    init(maximumPerAddress: Int, maximumTotal: Int) {
        self.maximumPerAddress = maximumPerAddress
        self.maximumTotal = maximumTotal
    }

    func admit(_ address: String) -> Bool {
        lock.withLock {
            guard total < maximumTotal, perAddress[address, default: 0] < maximumPerAddress else { return false }
            perAddress[address, default: 0] += 1
            total += 1
            return true
        }
    }

    func release(_ address: String) {
        lock.withLock {
            total -= 1
            perAddress[address, default: 1] -= 1
            if perAddress[address] == 0 { perAddress[address] = nil }
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
        settings: ConnectionSettings = ConnectionSettings(), maximumConnectionsPerAddress: Int = 8, maximumConnections: Int = 256,
        logger: Logger, onEvent: @escaping @Sendable (ConnectionEvent) -> Void
    ) {
        self.identity = identity
        self.delegate = delegate
        self.group = group
        self.threadPool = threadPool
        self.settings = settings
        self.logger = logger
        self.onEvent = onEvent
        limiter = ConnectionLimiter(maximumPerAddress: maximumConnectionsPerAddress, maximumTotal: maximumConnections)
    }

    /// The largest frame on the wire: a message and the cipher's tag.
    public static let maximumFrameLength = SyncWire.maximumMessageSize + SecretStreamSender.overhead

    func configure(_ channel: Channel, initiator: Bool) throws {
        let handlers: [ChannelHandler] = [
            ByteToMessageHandler(FrameDecoder(maximumLength: Self.maximumFrameLength)),
            MessageToByteHandler(FrameEncoder()),
            try HandshakeHandler(identity: identity, initiator: initiator, versions: SyncWire.versions, timeout: settings.handshakeTimeout),
            SyncSessionHandler(delegate: delegate, threadPool: threadPool, settings: settings, logger: logger, onEvent: onEvent),
        ]
        try channel.pipeline.syncOperations.addHandlers(handlers)
    }

    /// Listens on `host:port` (port 0 picks one); the channel's local address tells which.
    public func listen(host: String, port: Int) async throws -> Channel {
        let limiter = limiter
        let logger = logger
        let onEvent = onEvent
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
            .childChannelInitializer { [self] channel in
                let address = channel.remoteAddress?.ipAddress ?? "?"
                guard limiter.admit(address) else {
                    logger.notice("connection refused", metadata: ["address": "\(address)", "reason": "\(TransportError.tooManyConnections(address))"])
                    onEvent(.closed(peer: nil, address: address, reason: TransportError.tooManyConnections(address).description))
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in limiter.release(address) }
                return channel.eventLoop.makeCompletedFuture { try self.configure(channel, initiator: false) }
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
