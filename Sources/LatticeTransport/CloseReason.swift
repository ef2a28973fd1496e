@_spi(Tools) import LatticeProtocol

/// Why a connection ended, typed so the node can tell a refusal or another
/// container from a network failure without reading messages.
package enum CloseReason: Sendable, Hashable, CustomStringConvertible {
    case transport(TransportError)
    case protocolError(ProtocolError)
    /// This side refused the peer's batch: its writes were not what their writers signed.
    case refusedWrites(String)
    /// Anything else: a socket error, this side's store, a planned restart.
    case other(String)

    init(_ error: any Error) {
        switch error {
        case let error as TransportError: self = .transport(error)
        case let error as ProtocolError: self = .protocolError(error)
        default: self = .other("\(error)")
        }
    }

    /// This side refused a stranger: logged, bounded, by whoever counts refusals.
    package var isRefusalOfStranger: Bool {
        if case .transport(.untrusted) = self { return true }
        return false
    }

    package var description: String {
        switch self {
        case .transport(let error): return error.description
        case .protocolError(let error): return error.description
        case .refusedWrites(let why): return "refused its writes: \(why)"
        case .other(let why): return why
        }
    }
}
