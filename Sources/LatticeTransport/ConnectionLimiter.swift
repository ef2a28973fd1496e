import NIOConcurrencyHelpers
import NIOCore

/// A source's allowance of strangers: a token bucket.
struct StrangerAllowance: Equatable, Sendable {
    /// Strangers a source may bring at once.
    var burst: Double
    /// Strangers per second that come back.
    var refillPerSecond: Double

    static let `default` = StrangerAllowance(burst: 32, refillPerSecond: 4)
}

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
///
/// Every connection spends one of its source's allowance of strangers when
/// it is admitted, and gets it back once its device is known trusted: what a
/// source loses are its strangers, failed or unfinished handshakes and
/// evictions, and what it may have pending at once never exceeds what it has
/// left. The allowance comes back at a steady rate; a source that has spent
/// it is refused at connect, before any handshake work, until it has some
/// again (as OpenSSH's per-source penalties do). A flood of throwaway
/// identities from one host so costs the node an accepted socket each, not a
/// handshake each. Trusted sessions spend nothing.
final class ConnectionLimiter<Connection>: @unchecked Sendable {
    private struct Pending {
        let connection: Connection
        let admitted: NIODeadline
    }

    private struct Spent {
        var tokens: Double
        var updated: NIODeadline
    }

    private let lock = NIOLock()
    private var pending: [String: [Pending]] = [:]
    /// Every counted connection, with its source.
    private var admitted: [ObjectIdentifier: String] = [:]
    /// Sources that spent some of their allowance, with what they have left.
    private var spent: [String: Spent] = [:]
    let maximumPendingPerSource: Int
    let maximumTotal: Int
    let grace: TimeAmount
    let allowance: StrangerAllowance
    /// Sources tracked at most; past it, those whose allowance came back are forgotten first.
    static var maximumTrackedSources: Int { 4096 }
    private let now: @Sendable () -> NIODeadline

    init(
        maximumPendingPerSource: Int, maximumTotal: Int, grace: TimeAmount = .seconds(1), allowance: StrangerAllowance = .default,
        now: @escaping @Sendable () -> NIODeadline = { .now() }
    ) {
        self.maximumPendingPerSource = maximumPendingPerSource
        self.maximumTotal = maximumTotal
        self.grace = grace
        self.allowance = allowance
        self.now = now
    }

    enum Refusal: Equatable {
        /// The source has its share of pending connections, all in their grace period.
        case sourceBusy
        /// The node holds its maximum, and no pending connection is past its grace period.
        case full
        /// The source brought more strangers than its allowance: it waits until some comes back.
        case tooManyStrangers
    }

    enum Admission {
        case admitted(evicting: Connection?)
        case refused(Refusal)
    }

    func admit(_ connection: Connection, from source: String) -> Admission {
        lock.withLock {
            let now = now()
            let left = tokens(of: source, at: now)
            guard left >= 1 else { return .refused(.tooManyStrangers) }
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
            setTokens(of: source, to: left - 1, at: now)
            admitted[Self.key(connection)] = source
            pending[source, default: []].append(Pending(connection: connection, admitted: now))
            return .admitted(evicting: evicted)
        }
    }

    /// The connection's device is trusted: it no longer counts against its
    /// source, and the allowance it took comes back.
    func trusted(_ connection: Connection) {
        lock.withLock {
            guard let source = admitted[Self.key(connection)], removePending(connection, of: source) else { return }
            let now = now()
            setTokens(of: source, to: tokens(of: source, at: now) + 1, at: now)
        }
    }

    /// The connection closed (evicted ones were forgotten already).
    func release(_ connection: Connection) {
        lock.withLock { forget(connection) }
    }

    /// Sources whose spent allowance is remembered now.
    var trackedSources: Int { lock.withLock { spent.count } }

    /// What `source` has left of its allowance of strangers now.
    func allowanceLeft(for source: String) -> Double { lock.withLock { tokens(of: source, at: now()) } }

    /// Connections counted now, pending or trusted.
    var count: Int { lock.withLock { admitted.count } }

    /// Pending connections of `source` now.
    func pendingCount(from source: String) -> Int { lock.withLock { pending[source]?.count ?? 0 } }

    /// Connections are objects (channels): their identity is the key.
    private static func key(_ connection: Connection) -> ObjectIdentifier { ObjectIdentifier(connection as AnyObject) }

    /// Stops counting the connection (a pending one keeps the allowance it took).
    private func forget(_ connection: Connection) {
        guard let source = admitted.removeValue(forKey: Self.key(connection)) else { return }
        removePending(connection, of: source)
    }

    /// Returns whether the connection was pending.
    @discardableResult
    private func removePending(_ connection: Connection, of source: String) -> Bool {
        guard let waiting = pending[source] else { return false }
        let rest = waiting.filter { Self.key($0.connection) != Self.key(connection) }
        pending[source] = rest.isEmpty ? nil : rest
        return rest.count < waiting.count
    }

    private func tokens(of source: String, at now: NIODeadline) -> Double {
        guard let entry = spent[source] else { return allowance.burst }
        let seconds = Double((now - entry.updated).nanoseconds) / 1e9
        return min(allowance.burst, entry.tokens + max(0, seconds) * allowance.refillPerSecond)
    }

    private func setTokens(of source: String, to value: Double, at now: NIODeadline) {
        guard value < allowance.burst else {
            spent[source] = nil // whole again: nothing to remember
            return
        }
        if spent[source] == nil, spent.count >= Self.maximumTrackedSources { makeRoomInSpent(now: now) }
        spent[source] = Spent(tokens: max(0, value), updated: now)
    }

    /// Forgets the sources whose allowance came back whole; if none has, the one with the most left.
    private func makeRoomInSpent(now: NIODeadline) {
        let recovered = spent.keys.filter { tokens(of: $0, at: now) >= allowance.burst }
        if recovered.isEmpty {
            if let richest = spent.keys.max(by: { tokens(of: $0, at: now) < tokens(of: $1, at: now) }) { spent[richest] = nil }
        } else {
            for source in recovered { spent[source] = nil }
        }
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

extension ConnectionLimiter.Refusal {
    var explanation: String {
        switch self {
        case .full: return "the node is full"
        case .sourceBusy: return "its pending handshakes are all new"
        case .tooManyStrangers: return "it brought more untrusted or failed connections than it may, until some time passes"
        }
    }
}
