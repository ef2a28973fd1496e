@_spi(Tools) import LatticeCrypto
import NIOCore

/// Encrypts every frame after the handshake with one secretstream per
/// direction. The first frame each way is the stream's header; a frame that
/// fails authentication (modified, replayed, reordered) ends the connection,
/// and so does an end without the final frame (truncation), reported as such.
package final class SecretStreamHandler: ChannelDuplexHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer
    package typealias OutboundIn = ByteBuffer
    package typealias OutboundOut = ByteBuffer

    private var sender: SecretStreamSender
    private var receiver: SecretStreamReceiver?
    private let receiveKey: SecretBytes
    private var failed = false
    private var closing = false

    package init(sendKey: SecretBytes, receiveKey: SecretBytes) throws {
        sender = try sendKey.withBytes { try SecretStreamSender(key: $0) }
        self.receiveKey = receiveKey
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        // The streams' states hold the keys' successors: gone with the connection.
        sender.wipe()
        receiver?.wipe()
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: sender.header)), promise: nil)
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var frame = unwrapInboundIn(data)
        let bytes = frame.readBytes(length: frame.readableBytes) ?? []
        do {
            guard var receiver else {
                receiver = try receiveKey.withBytes { try SecretStreamReceiver(key: $0, header: bytes) }
                return
            }
            let (plaintext, final) = try receiver.open(bytes)
            self.receiver = receiver
            if final {
                // The peer ended the stream in order: nothing more is read.
                context.close(promise: nil)
                return
            }
            context.fireChannelRead(wrapInboundOut(context.channel.allocator.buffer(bytes: plaintext)))
        } catch {
            failed = true
            context.fireErrorCaught(TransportError.channelFailed("\(error)"))
            context.close(promise: nil)
        }
    }

    package func channelInactive(context: ChannelHandlerContext) {
        if !failed, !closing, receiver?.finished != true {
            context.fireErrorCaught(TransportError.truncated)
        }
        context.fireChannelInactive()
    }

    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        let plaintext = buffer.readBytes(length: buffer.readableBytes) ?? []
        do {
            let sealed = try sender.seal(plaintext)
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: sealed)), promise: promise)
        } catch {
            promise?.fail(error)
            context.fireErrorCaught(TransportError.channelFailed("\(error)"))
            context.close(promise: nil)
        }
    }

    /// An orderly close sends the stream's final frame first, so the peer can tell it from a cut.
    package func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if !closing, mode == .all, context.channel.isActive, let sealed = try? sender.seal([], final: true) {
            closing = true
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: sealed)), promise: nil)
        }
        closing = true
        context.close(mode: mode, promise: promise)
    }
}
