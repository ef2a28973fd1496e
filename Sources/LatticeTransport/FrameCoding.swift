import NIOCore

/// Why the transport ended a connection. Logged with the peer's address; the
/// node keeps serving every other connection.
package enum TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    case oversizedFrame(length: Int, maximum: Int)
    case truncated
    case handshakeTimedOut
    case idleTimeout
    case handshakeFailed(String)
    case channelFailed(String)
    case untrusted(String)
    case noLongerTrusted(String)
    case tooManyConnections(String)
    case refusedByPeer

    /// The peer did not prove an identity: a failed or unfinished handshake.
    package var isHandshakeFailure: Bool {
        switch self {
        case .handshakeFailed, .handshakeTimedOut: return true
        default: return false
        }
    }

    package var description: String {
        switch self {
        case .oversizedFrame(let length, let maximum): return "a frame of \(length) bytes is over the \(maximum)-byte maximum"
        case .truncated: return "the connection ended without the stream's final frame (truncated)"
        case .handshakeTimedOut: return "the handshake did not finish in time"
        case .idleTimeout: return "nothing heard from the peer in time (idle or half-open)"
        case .handshakeFailed(let why): return "handshake failed: \(why)"
        case .channelFailed(let why): return "encrypted channel failed: \(why)"
        case .untrusted(let device): return "device \(device) is not trusted: connection refused after the handshake"
        case .noLongerTrusted(let device): return "device \(device) is no longer trusted: its session ended"
        case .tooManyConnections(let address): return "too many connections from \(address)"
        case .refusedByPeer: return "the peer ended the connection after the handshake: it does not trust this device"
        }
    }
}

/// The largest frame a connection accepts now: the handshake's size until it
/// completes, so an unauthenticated client cannot make the node buffer more.
/// Used on the connection's event loop only.
package final class FrameLimit: @unchecked Sendable {
    package var maximum: Int
    package init(_ maximum: Int) { self.maximum = maximum }
}

/// Cuts the byte stream into frames: a 4-byte big-endian length, then that
/// many bytes. A length over the limit ends the connection before any of
/// the frame is buffered.
package struct FrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = ByteBuffer
    package let limit: FrameLimit
    package var maximumLength: Int { limit.maximum }

    package init(maximumLength: Int) { limit = FrameLimit(maximumLength) }
    package init(limit: FrameLimit) { self.limit = limit }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard Int(length) <= maximumLength else { throw TransportError.oversizedFrame(length: Int(length), maximum: maximumLength) }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}

/// Prefixes each outgoing frame with its length.
package struct FrameEncoder: MessageToByteEncoder {
    package typealias OutboundIn = ByteBuffer

    package init() {}

    package func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        out.writeInteger(UInt32(data.readableBytes))
        out.writeImmutableBuffer(data)
    }
}
