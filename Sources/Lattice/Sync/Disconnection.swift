@_spi(Tools) import LatticeProtocol
import LatticeTransport

/// Why a connection to a peer ended, with the cause a program can act on.
public struct Disconnection: Sendable, Hashable, CustomStringConvertible {
    public enum Cause: String, Codable, Sendable, Hashable {
        /// The peer proved itself, then ended the connection: it does not trust this device.
        case notTrustedByPeer
        /// This device does not trust the peer.
        case notTrustedHere
        /// This device stopped trusting the peer while its session ran.
        case trustRevoked
        /// The peer syncs another container.
        case containerMismatch
        /// A network, protocol or store failure, or a planned restart.
        case other
    }

    public var cause: Cause
    /// The reason in words, as logged.
    public var description: String
    /// The handshake failed or did not finish in time (the peer proved no identity).
    public var handshakeFailed = false

    init(cause: Cause, description: String) {
        self.cause = cause
        self.description = description
    }

    /// One of two connections to the same device, closed so one session remains.
    static let duplicateClosed = Disconnection(cause: .other, description: "a second connection to the same device, closed (the first one stays)")

    init(_ reason: CloseReason) {
        switch reason {
        case .transport(.refusedByPeer): cause = .notTrustedByPeer
        case .transport(.untrusted): cause = .notTrustedHere
        case .transport(.noLongerTrusted): cause = .trustRevoked
        case .protocolError(.containerMismatch): cause = .containerMismatch
        default: cause = .other
        }
        description = reason.description
        if case .transport(let error) = reason { handshakeFailed = error.isHandshakeFailure }
    }
}
