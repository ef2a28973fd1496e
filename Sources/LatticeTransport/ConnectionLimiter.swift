import NIOConcurrencyHelpers
import NIOCore

/// Bounds connections whose device is not yet known to be trusted, per
/// source, and all connections in total.
///
/// A source is an IPv4 address, or an IPv6 /64: one host can use every
/// address of its /64, so counting exact IPv6 addresses would let it fill the
/// node alone.
///
/// A connection is pending from its admission until its device is known
/// trusted; a stranger stays pending until it is closed. A pending connection
/// has a grace period in which nothing evicts it, so a real peer's handshake
/// (milliseconds) always gets its chance. Past that, at the per-source bound a
/// newcomer evicts that source's oldest pending connection, and at the total
/// bound the oldest pending connection of any source; a newcomer that finds
/// only connections in their grace period, or only trusted sessions, is refused.
final class ConnectionLimiter<Connection>: @unchecked Sendable {
    private struct Pending {
        let connection: Connection
        let admitted: NIODeadline
    }

    private let lock = NIOLock()
    private var pending: [String: [Pending]] = [:]
    /// Every counted connection, with its source.
    private var admitted: [ObjectIdentifier: String] = [:]
    let maximumPendingPerSource: Int
    let maximumTotal: Int
    let grace: TimeAmount
    private let now: @Sendable () -> NIODeadline

    init(maximumPendingPerSource: Int, maximumTotal: Int, grace: TimeAmount = .seconds(1), now: @escaping @Sendable () -> NIODeadline = { .now() }) {
        self.maximumPendingPerSource = maximumPendingPerSource
        self.maximumTotal = maximumTotal
        self.grace = grace
        self.now = now
    }

    enum Refusal: Equatable {
        /// The source has its share of pending connections, all in their grace period.
        case sourceBusy
        /// The node holds its maximum, and no pending connection is past its grace period.
        case full
    }

    enum Admission {
        case admitted(evicting: Connection?)
        case refused(Refusal)
    }

    func admit(_ connection: Connection, from source: String) -> Admission {
        lock.withLock {
            let now = now()
            var evicted: Connection?
            if pending[source, default: []].count >= maximumPendingPerSource {
                guard let oldest = pending[source]?.first, oldest.admitted + grace <= now else { return .refused(.sourceBusy) }
                evicted = oldest.connection
            } else if admitted.count >= maximumTotal {
                let candidates = pending.values.compactMap(\.first).filter { $0.admitted + grace <= now }
                guard let oldest = candidates.min(by: { $0.admitted < $1.admitted }) else { return .refused(.full) }
                evicted = oldest.connection
            }
            if let evicted { forget(evicted) }
            admitted[Self.key(connection)] = source
            pending[source, default: []].append(Pending(connection: connection, admitted: now))
            return .admitted(evicting: evicted)
        }
    }

    /// The connection's device is trusted: it no longer counts against its source.
    func trusted(_ connection: Connection) {
        lock.withLock { removePending(connection) }
    }

    /// The connection closed (evicted ones were forgotten already).
    func release(_ connection: Connection) {
        lock.withLock { forget(connection) }
    }

    /// Connections counted now, pending or trusted.
    var count: Int { lock.withLock { admitted.count } }

    /// Pending connections of `source` now.
    func pendingCount(from source: String) -> Int { lock.withLock { pending[source]?.count ?? 0 } }

    /// Connections are objects (channels): their identity is the key.
    private static func key(_ connection: Connection) -> ObjectIdentifier { ObjectIdentifier(connection as AnyObject) }

    private func forget(_ connection: Connection) {
        removePending(connection)
        admitted[Self.key(connection)] = nil
    }

    private func removePending(_ connection: Connection) {
        guard let source = admitted[Self.key(connection)], let waiting = pending[source] else { return }
        let rest = waiting.filter { Self.key($0.connection) != Self.key(connection) }
        pending[source] = rest.isEmpty ? nil : rest
    }
}

extension SocketAddress {
    /// The source a connection from this address counts against: the IPv4
    /// address (also when mapped into IPv6), or the IPv6 /64 as `PREFIX::/64`.
    var connectionSource: String {
        switch self {
        case .v6(let address):
            let bytes = withUnsafeBytes(of: address.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
                return bytes[12...].map(String.init).joined(separator: ".")
            }
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            return groups.joined(separator: ":") + "::/64"
        case .v4: return ipAddress ?? "\(self)"
        case .unixDomainSocket: return "unix"
        }
    }
}
