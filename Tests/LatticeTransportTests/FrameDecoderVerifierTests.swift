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

    /// A frame comes out only once whole: its first bytes yield nothing, and its last completes it.
    @Test func aFrameIsDeliveredOnlyOnceWhole() throws {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(FrameDecoder(maximumLength: 100)))
        var whole = frame([9, 8, 7, 6])
        let last = whole.getSlice(at: whole.writerIndex - 1, length: 1)!
        whole.moveWriterIndex(to: whole.writerIndex - 1)
        try channel.writeInbound(whole)
        #expect(try channel.readInbound(as: ByteBuffer.self) == nil)
        try channel.writeInbound(last)
        #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(bytes: [9, 8, 7, 6]))
    }
}
