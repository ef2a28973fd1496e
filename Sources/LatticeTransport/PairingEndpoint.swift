import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import NIOCore
import NIOPosix

/// `lattice pair` over TCP: length-prefixed `PairingMessage`s, one exchange
/// per connection, the inviter listening and the joiner dialing.
package enum PairingEndpoint {
    /// Offers `offer` on `host:port` until a device pairs (its outcome), the
    /// code expires or wrong attempts spend it (thrown `PairingFailure`).
    /// `listening` is told the bound port; `attempt` each failed attempt.
    /// An attempt's connection may stay this long: one that idles is closed,
    /// and counts as a guess only if it got as far as the key.
    package static let defaultAttemptDeadline: TimeAmount = .seconds(10)
    /// Connections open at once to one offer, beyond which new ones are refused.
    static let maximumConnections = 32

    package static func invite(
        offer initial: PairingOffer, makeInviter: @escaping @Sendable () -> PairingInviter, host: String, port: Int,
        wallClock: @escaping @Sendable () -> UInt64, listening: @escaping @Sendable (Int) -> Void,
        attemptFailed: @escaping @Sendable (PairingFailure) -> Void = { _ in }, attemptDeadline: TimeAmount = defaultAttemptDeadline
    ) throws -> PairingOutcome {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let result = loop.makePromise(of: PairingOutcome.self)
        let state = InviterState(offer: initial)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                // Attempts run side by side, so an idle connection holds nothing up; each
                // is checked against the offer when it starts and ends at its deadline.
                if let refusal = (state.completed ? PairingFailure.expired : nil) ?? state.offer.refusal(now: wallClock())
                    ?? (state.connections >= maximumConnections ? PairingFailure.refusedByPeer("too many devices are connecting now; try again") : nil) {
                    return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandlers(framing() + [RefusingHandler(reason: refusal.description)]) }
                }
                state.connections += 1
                var side = makeInviter()
                var reserved = false
                let receive: (PairingMessage) -> [PairingAction] = { message in
                    // A join is answered with a key confirmation: one guess at the code for a party
                    // without it. Guesses in flight count against the offer before they end, so
                    // attempts side by side never get more than the offer's guesses.
                    if case .join = message, !reserved {
                        guard state.offer.failures + state.guessesInFlight < state.offer.maximumFailures else {
                            return [.send(.refused(PairingFailure.busy.description)), .failed(.busy)]
                        }
                        reserved = true
                        state.guessesInFlight += 1
                    }
                    return side.receive(message)
                }
                let handler = ExchangeHandler(receive: receive, first: nil, deadline: attemptDeadline) { ending in
                    state.connections -= 1
                    if reserved { state.guessesInFlight -= 1 }
                    switch ending {
                    case .paired(let outcome): state.complete(result) { $0.succeed(outcome) }
                    case .failed(let failure):
                        guard !state.completed else { return }
                        attemptFailed(failure)
                        // Only an exchange that reached the key counts as a guess: a connection that
                        // closes, idles or sends junk before it learnt nothing of the code.
                        guard side.exchangedKeys else { return }
                        state.offer.recordFailure()
                        if let spent = state.offer.refusal(now: wallClock()) { state.complete(result) { $0.fail(spent) } }
                    }
                }
                return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandlers(framing() + [handler]) }
            }
        let server: Channel
        do { server = try bootstrap.bind(host: host, port: port).wait() } catch {
            result.fail(error) // a promise is always completed, or NIO reports it leaked
            throw error
        }
        listening(server.localAddress?.port ?? port)
        let remaining = initial.expires > wallClock() ? initial.expires - wallClock() : 0
        let expiry = loop.scheduleTask(in: .milliseconds(Int64(remaining))) { state.complete(result) { $0.fail(PairingFailure.expired) } }
        defer {
            expiry.cancel()
            try? server.close().wait()
        }
        return try result.futureResult.wait()
    }

    /// Joins the account of the device listening at `host:port`.
    package static func join(_ joiner: PairingJoiner, host: String, port: Int, timeout: TimeAmount = .seconds(30)) throws -> PairingOutcome {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let result = group.next().makePromise(of: PairingOutcome.self)
        let state = Once()
        let handler = ExchangeHandler(receive: joiner.receiving, first: joiner.start, deadline: timeout) { ending in
            switch ending {
            case .paired(let outcome): state.complete(result) { $0.succeed(outcome) }
            case .failed(let failure): state.complete(result) { $0.fail(failure) }
            }
        }
        let channel: Channel
        do {
            channel = try ClientBootstrap(group: group)
                .connectTimeout(.seconds(10))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(framing(maximumLength: PairingMessage.maximumIntroductionLength) + [handler])
                    }
                }
                .connect(host: host, port: port).wait()
        } catch {
            state.complete(result) { $0.fail(error) }
            throw error
        }
        let deadline = group.next().scheduleTask(in: timeout) { state.complete(result) { $0.fail(PairingFailure.malformed("no answer in time")) } }
        defer {
            deadline.cancel()
            channel.close(promise: nil)
        }
        return try result.futureResult.wait()
    }

    static func framing(maximumLength: Int = PairingMessage.maximumLength) -> [ChannelHandler] {
        [ByteToMessageHandler(FrameDecoder(maximumLength: maximumLength)), MessageToByteHandler(FrameEncoder())]
    }

    /// Completes the exchange's promise once: later endings (another
    /// connection, the expiry, a deadline) change nothing. Used on one event loop.
    class Once: @unchecked Sendable {
        private(set) var completed = false

        func complete(_ promise: EventLoopPromise<PairingOutcome>, _ body: (EventLoopPromise<PairingOutcome>) -> Void) {
            guard !completed else { return }
            completed = true
            body(promise)
        }
    }

    /// The offer as attempts change it; touched on the listener's one event loop only.
    final class InviterState: Once, @unchecked Sendable {
        var offer: PairingOffer
        /// Connections open now, and those of them whose key exchange has begun.
        var connections = 0
        var guessesInFlight = 0
        init(offer: PairingOffer) { self.offer = offer }
    }

    enum Ending {
        case paired(PairingOutcome)
        case failed(PairingFailure)
    }

    /// Drives one side of one exchange on a connection.
    final class ExchangeHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        private let receive: (PairingMessage) -> [PairingAction]
        private let first: PairingMessage?
        /// A joiner takes a larger message (the inviter's roster) than an inviter does.
        private var maximumLength: Int { first == nil ? PairingMessage.maximumLength : PairingMessage.maximumIntroductionLength }
        private let deadline: TimeAmount
        private let ended: (Ending) -> Void
        private var finished = false
        private var deadlineTask: Scheduled<Void>?

        init(receive: @escaping (PairingMessage) -> [PairingAction], first: PairingMessage?, deadline: TimeAmount, ended: @escaping (Ending) -> Void) {
            self.receive = receive
            self.first = first
            self.deadline = deadline
            self.ended = ended
        }

        func channelActive(context: ChannelHandlerContext) {
            if let first { send(first, context: context) }
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            deadlineTask = context.eventLoop.scheduleTask(in: deadline) {
                let (handler, context) = loopBound.value
                handler.finish(.failed(.timedOut), context: context)
            }
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let actions: [PairingAction]
            do {
                actions = receive(try PairingMessage(bytes: buffer.readBytes(length: buffer.readableBytes) ?? [], maximumLength: maximumLength))
            } catch {
                return finish(.failed(.malformed("\(error)")), context: context)
            }
            for action in actions {
                switch action {
                case .send(let message): send(message, context: context)
                case .paired(let outcome): finish(.paired(outcome), context: context)
                case .failed(let failure): finish(.failed(failure), context: context)
                }
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(.failed(.malformed("the other device closed the connection")), context: context)
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            finish(.failed(.malformed("\(error)")), context: context)
        }

        private func send(_ message: PairingMessage, context: ChannelHandlerContext) {
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: message.bytes)), promise: nil)
        }

        private func finish(_ ending: Ending, context: ChannelHandlerContext) {
            guard !finished else { return }
            finished = true
            deadlineTask?.cancel()
            ended(ending)
            // Let the last message (an introduction, or the reason) reach the other side first.
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .milliseconds(200)) { channel.close(promise: nil) }
        }
    }

    /// Answers an attempt the offer does not admit, then closes.
    final class RefusingHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let reason: String
        init(reason: String) { self.reason = reason }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let bytes = PairingMessage.refused(reason).bytes
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(channel.allocator.buffer(bytes: bytes))).whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

extension PairingInviter {
    /// A closure that drives this exchange (the handler owns its state).
    var receiving: (PairingMessage) -> [PairingAction] {
        var side = self
        return { side.receive($0) }
    }
}

extension PairingJoiner {
    var receiving: (PairingMessage) -> [PairingAction] {
        var side = self
        return { side.receive($0) }
    }
}
