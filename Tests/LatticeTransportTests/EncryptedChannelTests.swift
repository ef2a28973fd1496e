@_spi(Tools) import LatticeCrypto
import LatticeTransport
import NIOCore
import NIOEmbedded
import Testing

/// Collects what reaches the end of the pipeline.
final class Collector: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var received: [[UInt8]] = []
    var completed: HandshakeCompleted?
    var errors: [String] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received.append(buffer.readBytes(length: buffer.readableBytes) ?? [])
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? HandshakeCompleted { completed = event }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) { errors.append("\(error)") }
}

/// Two ends of an encrypted channel on EmbeddedChannels, bytes carried by hand.
struct ChannelPair {
    let initiator = EmbeddedChannel()
    let responder = EmbeddedChannel()
    let initiatorCollector = Collector()
    let responderCollector = Collector()
    let alice = try! Identity.generate()
    let bob = try! Identity.generate()
    let initiatorLimit: FrameLimit
    let responderLimit: FrameLimit

    /// `limited`: frames are handshake-sized until the handshake completes, as the node sets it up.
    init(responderVersions: ClosedRange<UInt8> = 1...1, limited: Bool = false) throws {
        initiatorLimit = FrameLimit(limited ? Handshake.maximumMessageLength : 1 << 20)
        responderLimit = FrameLimit(limited ? Handshake.maximumMessageLength : 1 << 20)
        for (channel, collector, identity, isInitiator, versions, limit) in [
            (initiator, initiatorCollector, alice, true, 1...1 as ClosedRange<UInt8>, initiatorLimit), (responder, responderCollector, bob, false, responderVersions, responderLimit),
        ] {
            try channel.pipeline.syncOperations.addHandlers([
                ByteToMessageHandler(FrameDecoder(limit: limit)),
                MessageToByteHandler(FrameEncoder()),
                try HandshakeHandler(identity: identity, initiator: isInitiator, versions: versions, timeout: .seconds(10)),
                collector,
            ])
        }
        try responder.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try initiator.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 2)).wait()
    }

    /// Moves bytes both ways until neither side has more to send; `tamper` may change them in transit.
    func pump(tamper: (inout ByteBuffer) -> Void = { _ in }) throws {
        var moved = true
        while moved {
            moved = false
            for (from, to) in [(initiator, responder), (responder, initiator)] {
                while var bytes = try from.readOutbound(as: ByteBuffer.self) {
                    tamper(&bytes)
                    moved = true
                    if to.isActive { _ = try? to.writeInbound(bytes) }
                }
            }
        }
    }

    func send(_ text: String, from channel: EmbeddedChannel) throws {
        try channel.writeAndFlush(channel.allocator.buffer(string: text)).wait()
    }
}

@Suite struct EncryptedChannelTests {
    @Test func handshakeThenEncryptedFramesBothWays() throws {
        let pair = try ChannelPair()
        try pair.pump()
        #expect(pair.initiatorCollector.completed?.result.peerDeviceID == pair.bob.deviceID)
        #expect(pair.responderCollector.completed?.result.peerDeviceID == pair.alice.deviceID)
        var wire: [UInt8] = []
        try pair.send("hello responder", from: pair.initiator)
        try pair.send("hello initiator", from: pair.responder)
        try pair.pump { wire += $0.getBytes(at: $0.readerIndex, length: $0.readableBytes) ?? [] }
        #expect(pair.responderCollector.received == [Array("hello responder".utf8)])
        #expect(pair.initiatorCollector.received == [Array("hello initiator".utf8)])
        #expect(!String(decoding: wire, as: UTF8.self).contains("hello"))
    }

    @Test func aModifiedFrameEndsTheConnection() throws {
        let pair = try ChannelPair()
        try pair.pump()
        try pair.send("secret", from: pair.initiator)
        try pair.pump { buffer in
            let last = buffer.writerIndex - 1
            buffer.setInteger(buffer.getInteger(at: last, as: UInt8.self)! ^ 1, at: last)
        }
        #expect(pair.responderCollector.received.isEmpty)
        #expect(!pair.responder.isActive)
        #expect(pair.responderCollector.errors.contains { $0.contains("authentication") })
    }

    @Test func aReplayedFrameEndsTheConnection() throws {
        let pair = try ChannelPair()
        try pair.pump()
        try pair.send("once", from: pair.initiator)
        var copy: ByteBuffer?
        try pair.pump { copy = $0 }
        #expect(pair.responderCollector.received.count == 1)
        _ = try? pair.responder.writeInbound(copy!)
        #expect(pair.responderCollector.received.count == 1)
        #expect(!pair.responder.isActive)
    }

    @Test func anOversizedLengthPrefixEndsTheConnectionBeforeBuffering() throws {
        let pair = try ChannelPair()
        var buffer = pair.responder.allocator.buffer(capacity: 8)
        buffer.writeInteger(UInt32(2_000_000_000))
        buffer.writeBytes([1, 2, 3, 4])
        _ = try? pair.responder.writeInbound(buffer)
        // Reported at once, from the prefix alone (the session handler closes on it).
        #expect(pair.responderCollector.errors == ["\(TransportError.oversizedFrame(length: 2_000_000_000, maximum: 1 << 20))"])
    }

    @Test func garbageInsteadOfAHandshakeEndsTheConnection() throws {
        let pair = try ChannelPair()
        var buffer = pair.responder.allocator.buffer(capacity: 64)
        buffer.writeInteger(UInt32(38))
        buffer.writeBytes([UInt8](repeating: 0x41, count: 38))
        _ = try? pair.responder.writeInbound(buffer)
        #expect(!pair.responder.isActive)
        #expect(pair.responderCollector.errors.contains { $0.contains("handshake failed") })
    }

    @Test func noCommonVersionEndsTheConnection() throws {
        let pair = try ChannelPair(responderVersions: 2...2)
        try pair.pump()
        #expect(pair.responderCollector.completed == nil)
        #expect(!pair.responder.isActive)
    }

    @Test func aCutWithoutTheFinalFrameIsReportedAsTruncation() throws {
        let pair = try ChannelPair()
        try pair.pump()
        pair.responder.pipeline.fireChannelInactive()
        #expect(pair.responderCollector.errors.contains { $0.contains("truncated") })
    }

    @Test func anOrderlyCloseIsNotTruncation() throws {
        let pair = try ChannelPair()
        try pair.pump()
        try pair.initiator.close().wait()
        try pair.pump()
        #expect(!pair.responder.isActive)
        #expect(!pair.responderCollector.errors.contains { $0.contains("truncated") })
    }
}

@Suite struct FrameLimitTests {
    @Test func framesStayHandshakeSizedUntilTheHandshakeCompletes() throws {
        let limit = FrameLimit(Handshake.maximumMessageLength)
        let channel = EmbeddedChannel()
        let collector = Collector()
        try channel.pipeline.syncOperations.addHandlers([
            ByteToMessageHandler(FrameDecoder(limit: limit)),
            MessageToByteHandler(FrameEncoder()),
            try HandshakeHandler(identity: try Identity.generate(), initiator: false, versions: 1...1, timeout: .seconds(10)),
            collector,
        ])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var buffer = channel.allocator.buffer(capacity: 8)
        buffer.writeInteger(UInt32(1000)) // a frame an unauthenticated client may not make the node buffer
        _ = try? channel.writeInbound(buffer)
        #expect(collector.errors == ["\(TransportError.oversizedFrame(length: 1000, maximum: Handshake.maximumMessageLength))"])
    }

    @Test func aCompletedHandshakeAloneDoesNotRaiseTheLimit() throws {
        // A stranger proves an identity as easily as a peer: only trust may let frames grow.
        let pair = try ChannelPair(limited: true)
        try pair.pump()
        #expect(pair.responderCollector.completed != nil)
        #expect(pair.responderLimit.maximum == Handshake.maximumMessageLength)
        try pair.send(String(repeating: "x", count: 10_000), from: pair.initiator)
        try? pair.pump()
        #expect(pair.responderCollector.received.isEmpty)
        #expect(pair.responderCollector.errors.contains { $0.contains("over the \(Handshake.maximumMessageLength)-byte maximum") })
    }
}
