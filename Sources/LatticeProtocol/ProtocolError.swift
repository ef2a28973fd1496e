/// Why a session ended on the protocol's account. Every case is a reason to
/// close the connection, logged; none changes the store.
@_spi(Tools) public enum ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    case malformed(String)
    case unexpected(String)
    case forbidden(String)
    case limitExceeded(String)
    /// The peer's hello names another container.
    case containerMismatch(peer: String, local: String)

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed message: \(why)"
        case .unexpected(let why): return "protocol violation: \(why)"
        case .forbidden(let why): return "refused: \(why)"
        case .limitExceeded(let why): return "limit exceeded: \(why)"
        case .containerMismatch(let peer, let local): return "refused: the peer syncs container \"\(peer)\", this node \"\(local)\""
        }
    }
}
