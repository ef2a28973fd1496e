import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP connection: reads each request whole (its body bounded, the
/// whole of it due within the request timeout), answers it from the thread
/// pool, and keeps an event stream open once one is asked for.
final class WebRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    struct Limits: Sendable {
        var maximumBodyBytes: Int
        /// From the connection's start or its last response: a request must
        /// arrive whole within it (else 408 once its head is in, or a silent
        /// close before), so a client that dribbles bytes holds nothing for long.
        var requestTimeout: TimeAmount
        /// An event stream whose client has not taken a message in this long is closed.
        var streamWriteTimeout: TimeAmount
    }

    private let router: WebRouter
    private let pool: NIOThreadPool
    private let limits: Limits
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// The rest of a refused request is read and dropped, the connection then closed.
    private var refusing = false
    private var deadline: Scheduled<Void>?
    private var started: ContinuousClock.Instant?
    private var streaming: Task<Void, Never>?

    private let connections: OpenConnections
    /// Whether a request on this connection presented a valid token; until
    /// then every answer closes the connection, so clients without a token hold no slot.
    private var authenticated = false

    init(router: WebRouter, pool: NIOThreadPool, limits: Limits, connections: OpenConnections) {
        self.router = router
        self.pool = pool
        self.limits = limits
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        armDeadline(context: context)
        context.fireChannelActive()
    }

    /// The time the next request has to arrive whole.
    private func armDeadline(context: ChannelHandlerContext) {
        deadline?.cancel()
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        let seconds = Double(limits.requestTimeout.nanoseconds) / 1e9
        deadline = context.eventLoop.scheduleTask(in: limits.requestTimeout) {
            let (handler, context) = bound.value
            guard handler.streaming == nil else { return }
            if handler.head == nil {
                context.close(promise: nil) // nothing of a request came whole: nobody to answer
            } else {
                handler.refuse(context: context, WebError(.requestTimeout, "the request did not arrive whole within \(seconds) s"))
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard streaming == nil else { return }
            self.head = head
            body = []
            refusing = false
            started = .now
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limits.maximumBodyBytes {
                refuse(context: context, tooLarge(length))
                return
            }
            // The token, origin and host are checked on the head: a refused request's body is never read.
            let checked = router.precheck(head)
            if let refusal = checked.refusal {
                refuse(context: context, refusal)
                return
            }
            if checked.authenticated, !authenticated {
                authenticated = true
                connections.authenticated(context.channel)
            }
        case .body(var buffer):
            guard !refusing, head != nil else { return }
            guard body.count + buffer.readableBytes <= limits.maximumBodyBytes else {
                refuse(context: context, tooLarge(body.count + buffer.readableBytes))
                return
            }
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            deadline?.cancel()
            deadline = nil
            guard !refusing, let head else { return }
            self.head = nil
            let request = WebRequest(head: head, body: body)
            body = []
            let router = self.router
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let started = self.started ?? .now
            let keepAlive = head.isKeepAlive && authenticated
            pool.runIfActive(eventLoop: context.eventLoop) { router.respond(to: request) }.whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let (operation, response)):
                    handler.write(response, keepAlive: keepAlive, operation: operation, started: started, context: context)
                case .failure:
                    handler.write(.error(WebError(.tryAgainLater, "the node is stopping")), keepAlive: false, operation: "unknown", started: started, context: context)
                }
            }
        }
    }

    private func tooLarge(_ bytes: Int) -> WebError {
        WebError(.limitExceeded, "the request body (\(bytes) bytes or more) is larger than this node takes (\(limits.maximumBodyBytes) bytes)")
    }

    /// Answers with an error at once and closes the connection: what is still to come of the request is not read.
    private func refuse(context: ChannelHandlerContext, _ error: WebError) {
        guard !refusing else { return }
        refusing = true
        deadline?.cancel()
        deadline = nil
        head = nil
        body = []
        write(.error(error), keepAlive: false, operation: "refused", started: started ?? .now, context: context)
    }

    private func write(_ response: WebResponse, keepAlive: Bool, operation: String, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        switch response {
        case .whole(let status, let contentType, let body, let extraHeaders):
            var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", String(body.count)),
                                       ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")])
            headers.add(contentsOf: extraHeaders)
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if keepAlive {
                armDeadline(context: context)
            } else {
                done.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
            }
            router.metrics.observeRequest(operation: operation, status: Int(status.code), duration: .now - started)
        case .eventStream(let source, let extraHeaders):
            deadline?.cancel()
            deadline = nil
            var headers = HTTPHeaders([("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-store"),
                                       ("X-Accel-Buffering", "no"), ("X-Content-Type-Options", "nosniff")])
            headers.add(contentsOf: extraHeaders)
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            router.metrics.observeRequest(operation: operation, status: 200, duration: .now - started)
            let channel = context.channel
            let streams = router.openStreams
            streams.add(1)
            let pool = self.pool
            let writeTimeout = limits.streamWriteTimeout
            streaming = Task {
                await source.run(pool: pool) { text in
                    guard channel.isActive else { return false }
                    // One message in flight at a time; a client that takes none for the
                    // timeout is let go rather than buffered for.
                    let giveUp = channel.eventLoop.scheduleTask(in: writeTimeout) { channel.close(promise: nil) }
                    defer { giveUp.cancel() }
                    do {
                        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(string: text))))
                        return true
                    } catch {
                        return false
                    }
                }
                streams.add(-1)
                try? await channel.close()
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        streaming?.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
