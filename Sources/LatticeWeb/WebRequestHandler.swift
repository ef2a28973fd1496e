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
        var requestTimeout: TimeAmount
        /// A connection with no request in this long is closed.
        var idleTimeout: TimeAmount
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

    init(router: WebRouter, pool: NIOThreadPool, limits: Limits) {
        self.router = router
        self.pool = pool
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard streaming == nil else { return }
            self.head = head
            body = []
            refusing = false
            started = .now
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let seconds = limits.requestTimeout.nanoseconds / 1_000_000_000
            deadline = context.eventLoop.scheduleTask(in: limits.requestTimeout) {
                bound.value.handler.refuse(context: bound.value.context, WebError(.requestTimeout, "the request did not arrive whole within \(seconds) s"))
            }
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limits.maximumBodyBytes {
                refuse(context: context, tooLarge(length))
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
            pool.runIfActive(eventLoop: context.eventLoop) { router.respond(to: request) }.whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let (operation, response)):
                    handler.write(response, keepAlive: head.isKeepAlive, operation: operation, started: started, context: context)
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
            if !keepAlive { done.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) } }
            router.metrics.observeRequest(operation: operation, status: Int(status.code), duration: .now - started)
        case .eventStream(let source):
            let headers = HTTPHeaders([("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-store"),
                                       ("X-Accel-Buffering", "no"), ("X-Content-Type-Options", "nosniff")])
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            router.metrics.observeRequest(operation: operation, status: 200, duration: .now - started)
            let channel = context.channel
            let streams = router.openStreams
            streams.add(1)
            streaming = Task {
                await source.run { text in
                    // A client that does not read is let go rather than buffered for.
                    guard channel.isActive, channel.isWritable else { return false }
                    let buffer = channel.allocator.buffer(string: text)
                    do {
                        try await channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)))
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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, streaming == nil, head == nil {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
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
