import LatticeTransport
import NIOCore
import NIOEmbedded
import NIOTestUtils
import Testing

/// The framing decoder as swift-nio checks its own: NIO's verifier feeds each
/// input whole, byte by byte and in random pieces, with the channel closing
/// in between, and expects the same frames every way.
@Suite struct FrameDecoderVerifierTests {
    func frame(_ bytes: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(bytes.count))
        buffer.writeBytes(bytes)
        return buffer
    }

    @Test func framesComeOutTheSameHoweverTheBytesArrive() throws {
        let long = (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var two = frame([1, 2])
        var second = frame([3, 4, 5])
        two.writeBuffer(&second)
        let pairs: [(ByteBuffer, [ByteBuffer])] = [
            (frame([1, 2, 3]), [ByteBuffer(bytes: [1, 2, 3])]),
            (frame([]), [ByteBuffer()]),
            (two, [ByteBuffer(bytes: [1, 2]), ByteBuffer(bytes: [3, 4, 5])]),
            (frame(long), [ByteBuffer(bytes: long)]),
        ]
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) { FrameDecoder(maximumLength: 4096) }
    }

    /// A length over the limit fails at the prefix: nothing of the body is waited for or kept.
    @Test func aLengthOverTheLimitFailsAtThePrefix() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maximumLength: 100)))
        var prefix = ByteBuffer()
        prefix.writeInteger(UInt32(101))
        #expect(throws: TransportError.oversizedFrame(length: 101, maximum: 100)) { try channel.writeInbound(prefix) }
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
    }

    /// A connection that ends inside a frame yields nothing of it (the session then reports the stream truncated).
    @Test func aFrameCutByTheEndOfTheConnectionIsNotDelivered() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maximumLength: 100)))
        var cut = frame([9, 9, 9, 9])
        cut.moveWriterIndex(to: cut.writerIndex - 1)
        try channel.writeInbound(cut)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        #expect(try channel.finish(acceptAlreadyClosed: true).isClean == false || (try channel.readInbound(as: ByteBuffer.self)) == nil)
    }
}
