import Foundation
import Lattice
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The node on the web: CloudKit Web Services over one container's store,
/// its live events and its metrics, over HTTP/1.1 (`lattice serve --http`).
/// A swift-service-lifecycle service: it runs beside the sync node in one
/// group and stops with it.
public final class WebServer: Service, Sendable {
    /// Where it listens and what it takes.
    public struct Configuration: Sendable {
        /// Where to listen: loopback unless told otherwise.
        public var host = "127.0.0.1"
        /// 0 picks a free port (`boundPort` tells it).
        public var port = 0
        /// Origins besides the node's own whose pages may call it (CORS).
        public var allowedOrigins: Set<String> = []
        /// A larger request body is refused (LIMIT_EXCEEDED) without being read.
        public var maximumBodyBytes = 16 << 20
        /// A request must arrive whole within this (REQUEST_TIMEOUT).
        public var requestTimeout: TimeAmount = .seconds(10)
        /// Connections at once; more are answered TRY_AGAIN_LATER and closed.
        public var maximumConnections = 512

        /// Loopback, a free port, no other origin, 16 MiB bodies, 10 s per request, 512 connections.
        public init() {}
    }

    private let configuration: Configuration
    private let router: WebRouter
    private let events: EventHub
    private let logger: Logger
    private let bound = NIOLockedValueBox<(channel: Channel, pool: NIOThreadPool)?>(nil)
    /// The connections open now, so `stop()` closes them too.
    private let connections = OpenConnections()

    /// A server over `container`'s store; `start()` or `run()` binds it.
    public init(container: Container, configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        events = EventHub()
        let loopback: Set<String> = ["127.0.0.1", "::1", "localhost"]
        router = WebRouter(container: container, events: events, metrics: NodeMetrics(container: container), allowedOrigins: configuration.allowedOrigins,
                           loopbackHosts: loopback.contains(configuration.host.lowercased()) ? ["localhost", "127.0.0.1", "::1"] : nil)
        self.logger = logger
    }

    /// Hands a node event to the event streams and the metrics: give it to the node's `onEvent`.
    public func nodeEvent(_ event: SyncNode.Event) {
        router.metrics.observe(event)
        events.publish(event)
    }

    /// The port it listens on, once started.
    public var boundPort: Int? { bound.withLockedValue { $0?.channel.localAddress?.port } }

    /// Binds the address; a port in use or an address not here fails with networkUnavailable.
    public func start() async throws(LatticeError) {
        // More threads than cores: a slow query (a long predicate over many records) leaves others to answer.
        let pool = NIOThreadPool(numberOfThreads: max(4, System.coreCount * 2))
        pool.start()
        let router = self.router
        let limits = WebRequestHandler.Limits(maximumBodyBytes: configuration.maximumBodyBytes, requestTimeout: configuration.requestTimeout,
                                              streamWriteTimeout: .seconds(30))
        let connections = self.connections
        let maximum = configuration.maximumConnections
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard connections.add(channel, upTo: maximum) else {
                    // Answered at once and closed, before it can send anything: over the cap, a connection holds nothing.
                    return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(BusyHandler()) }
                }
                channel.closeFuture.whenComplete { _ in connections.remove(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(WebRequestHandler(router: router, pool: pool, limits: limits, connections: connections))
                }
            }
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
        do {
            let channel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
            bound.withLockedValue { $0 = (channel, pool) }
        } catch {
            try? await pool.shutdownGracefully()
            throw LatticeError(.networkUnavailable, "cannot listen for HTTP on \(configuration.host) port \(configuration.port): \(error)")
        }
        startCommitObserver(pool: pool)
    }

    private let commitObserver = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// Follows every database's changes as they commit, for the metrics of
    /// records merged from other devices (the reads on the server's thread pool).
    private func startCommitObserver(pool: NIOThreadPool) {
        let container = router.container
        let metrics = router.metrics
        let task = Task.detached {
            let followers = DatabaseScope.allCases.map { ChangeFollower(database: container.database(with: $0), zones: nil, pageSize: 1_000) }
            for follower in followers { _ = try? follower.start(since: nil) }
            metrics.observeCommits(merged: [])
            for await _ in container.commits() {
                // Counted on the pool too: a merged record's conflicts are a store read.
                try? await pool.runIfActive {
                    var merged: [(record: Record, database: Database)] = []
                    for follower in followers {
                        while let page = try? follower.next() {
                            for change in page.changes {
                                guard let record = change.record, record.lastModifierReplica != container.replicaID else { continue }
                                merged.append((record, follower.database))
                            }
                            if !page.moreComing { break }
                        }
                    }
                    metrics.observeCommits(merged: merged)
                }
            }
        }
        commitObserver.withLockedValue { $0 = task }
    }

    /// Runs until the service group's graceful shutdown, then stops.
    public func run() async throws {
        if bound.withLockedValue({ $0 }) == nil { try await start() }
        if let port = boundPort { logger.info("HTTP on \(configuration.host) port \(port)") }
        try? await gracefulShutdown()
        await stop()
    }

    /// Closes the listener and every connection.
    public func stop() async {
        commitObserver.withLockedValue { $0?.cancel() }
        guard let (channel, pool) = bound.withLockedValue({ value in defer { value = nil }; return value }) else { return }
        try? await channel.close()
        for connection in connections.all { try? await connection.close() }
        try? await pool.shutdownGracefully()
    }
}

/// How many event streams are open now.
final class StreamCount: Sendable {
    private let count = NIOLockedValueBox(0)
    /// Adds `delta` and returns the new count.
    @discardableResult
    func add(_ delta: Int) -> Int { count.withLockedValue { $0 += delta; return $0 } }
    var value: Int { count.withLockedValue { $0 } }
}

/// The connections open now, at most a given number. At the cap, a new
/// connection takes the place of the oldest that never presented a valid
/// token: clients without one cannot keep those who have one out.
final class OpenConnections: Sendable {
    private struct Open {
        var channel: Channel
        var opened: NIODeadline
        var authenticated = false
    }

    private let channels = NIOLockedValueBox<[ObjectIdentifier: Open]>([:])

    /// Adds `channel` unless `maximum` are open and every one of them has authenticated.
    func add(_ channel: Channel, upTo maximum: Int) -> Bool {
        let evicted: Channel? = channels.withLockedValue { open in
            var evicted: Channel?
            if open.count >= maximum {
                guard let oldest = open.filter({ !$0.value.authenticated }).min(by: { $0.value.opened < $1.value.opened }) else { return nil }
                evicted = oldest.value.channel
                open.removeValue(forKey: oldest.key)
            }
            open[ObjectIdentifier(channel)] = Open(channel: channel, opened: .now())
            return evicted ?? channel
        }
        guard let evicted else { return false }
        if evicted !== channel { evicted.close(promise: nil) }
        return true
    }

    /// The connection presented a valid token: it is not evicted for newcomers.
    func authenticated(_ channel: Channel) {
        channels.withLockedValue { $0[ObjectIdentifier(channel)]?.authenticated = true }
    }

    func remove(_ channel: Channel) { channels.withLockedValue { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) } }
    var all: [Channel] { channels.withLockedValue { $0.values.map(\.channel) } }
}

/// Answers a connection over the limit with TRY_AGAIN_LATER as soon as it
/// opens, and closes it: it never waits for the client to speak.
final class BusyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        let body = (try? JSONEncoder().encode(WebError(.tryAgainLater, "this node has as many HTTP connections open as it takes; try again later").body)).map(Array.init) ?? []
        let head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: \(body.count)\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
        buffer.writeString(head)
        buffer.writeBytes(body)
        context.writeAndFlush(NIOAny(buffer)).whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
