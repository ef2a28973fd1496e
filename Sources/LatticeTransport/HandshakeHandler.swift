@_spi(Tools) import LatticeCrypto
import NIOCore

/// Fired down the pipeline when the handshake succeeded.
package struct HandshakeCompleted: Sendable {
    package let result: HandshakeResult
    package let initiator: Bool
}

/// Runs the handshake over frames, then installs the encryption behind
/// itself and lets everything through. The handshake must finish within the
/// timeout or the connection closes.
package final class HandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private enum State {
        case initiating(HandshakeInitiator)
        case responding(HandshakeResponder, receivedOpening: Bool)
        case done
        case failed
    }

    private var state: State
    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    /// Frames stay as the decoder's limit has them: whoever learns that the
    /// peer is trusted raises it, not the handshake (a stranger's proof of
    /// identity must not let it send larger frames).
    package init(identity: Identity, initiator: Bool, versions: ClosedRange<UInt8>, timeout: TimeAmount) throws {
        state = initiator
            ? .initiating(try HandshakeInitiator(identity: identity, versions: versions))
            : .responding(try HandshakeResponder(identity: identity, versions: versions), receivedOpening: false)
        self.timeout = timeout
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = loopBound.value
            handler.fail(context: context, TransportError.handshakeTimedOut)
        }
        if case .initiating(var initiator) = state {
            send(initiator.start(), context: context)
            state = .initiating(initiator)
        }
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var frame = unwrapInboundIn(data)
        switch state {
        case .done: context.fireChannelRead(data)
        case .failed: break
        case .initiating(let initiator):
            do {
                let (reply, result) = try initiator.receive(frame.readBytes(length: frame.readableBytes) ?? [])
                send(reply, context: context)
                complete(context: context, result: result, initiator: true)
            } catch {
                fail(context: context, TransportError.handshakeFailed("\(error)"))
            }
        case .responding(var responder, let receivedOpening):
            do {
                let bytes = frame.readBytes(length: frame.readableBytes) ?? []
                if !receivedOpening {
                    send(try responder.receiveOpening(bytes), context: context)
                    state = .responding(responder, receivedOpening: true)
                } else {
                    complete(context: context, result: try responder.receiveProof(bytes), initiator: false)
                }
            } catch {
                fail(context: context, TransportError.handshakeFailed("\(error)"))
            }
        }
    }

    private func send(_ bytes: [UInt8], context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
    }

    private func complete(context: ChannelHandlerContext, result: HandshakeResult, initiator: Bool) {
        timer?.cancel()
        state = .done
        do {
            let stream = try SecretStreamHandler(sendKey: result.sendKey, receiveKey: result.receiveKey)
            try context.pipeline.syncOperations.addHandler(stream, position: .after(self))
        } catch {
            fail(context: context, TransportError.handshakeFailed("\(error)"))
            return
        }
        context.fireUserInboundEventTriggered(HandshakeCompleted(result: result, initiator: initiator))
    }

    private func fail(context: ChannelHandlerContext, _ error: TransportError) {
        switch state {
        case .done, .failed: return
        case .initiating, .responding:
            timer?.cancel()
            state = .failed
            context.fireErrorCaught(error)
            context.close(promise: nil)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }
}
