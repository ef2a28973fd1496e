import NIOConcurrencyHelpers
import NIOCore
@testable import LatticeTransport
import Testing

/// The limiter on its own, with a clock the test moves.
@Suite struct ConnectionLimiterTests {
    final class Connection {}

    final class Clock: @unchecked Sendable {
        private let lock = NIOLock()
        private var value = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var now: NIODeadline { lock.withLock { value } }
        func advance(_ amount: TimeAmount) { lock.withLock { value = value + amount } }
    }

    func limiter(perSource: Int = 2, total: Int = 100, allowance: StrangerAllowance = .default, clock: Clock) -> ConnectionLimiter<Connection> {
        ConnectionLimiter(maximumPendingPerSource: perSource, maximumTotal: total, grace: .seconds(1), allowance: allowance, now: { clock.now })
    }

    func refusal(_ admission: ConnectionLimiter<Connection>.Admission) -> ConnectionLimiter<Connection>.Refusal? {
        if case .refused(let why) = admission { return why }
        return nil
    }

    func isAdmitted(_ admission: ConnectionLimiter<Connection>.Admission) -> Bool {
        if case .admitted = admission { return true }
        return false
    }

    func evicted(_ admission: ConnectionLimiter<Connection>.Admission) -> Connection? {
        if case .admitted(let evicted) = admission { return evicted }
        return nil
    }

    @Test func aPendingHandshakeInItsGracePeriodIsNotEvictedByANewcomerFromItsSource() {
        // A real peer behind a shared address finishes its handshake in milliseconds: a flood from that address must not cut it.
        let clock = Clock()
        let limiter = limiter(clock: clock)
        let real = Connection()
        #expect(isAdmitted(limiter.admit(real, from: "10.0.0.5")))
        #expect(isAdmitted(limiter.admit(Connection(), from: "10.0.0.5")))
        guard case .refused(.sourceBusy) = limiter.admit(Connection(), from: "10.0.0.5") else {
            Issue.record("a newcomer evicted a handshake in its grace period")
            return
        }
        // Past the grace period the oldest goes, and only it.
        clock.advance(.milliseconds(1001))
        #expect(evicted(limiter.admit(Connection(), from: "10.0.0.5")) === real)
        #expect(limiter.pendingCount(from: "10.0.0.5") == 2)
    }

    @Test func atTheTotalTheOldestPendingConnectionOfAnySourceGoes() {
        let clock = Clock()
        let limiter = limiter(perSource: 8, total: 3, clock: clock)
        let oldest = Connection()
        let trusted = Connection()
        _ = limiter.admit(trusted, from: "10.0.0.1")
        limiter.trusted(trusted)
        _ = limiter.admit(oldest, from: "10.0.0.2")
        clock.advance(.milliseconds(10))
        _ = limiter.admit(Connection(), from: "10.0.0.3")
        // Full, and every pending connection is in its grace period: the newcomer waits its turn.
        guard case .refused(.full) = limiter.admit(Connection(), from: "10.0.0.4") else {
            Issue.record("admitted past the total")
            return
        }
        clock.advance(.seconds(2))
        // Full: the oldest pending one is evicted, never the trusted session.
        #expect(evicted(limiter.admit(Connection(), from: "10.0.0.4")) === oldest)
        #expect(limiter.count == 3)
        limiter.release(oldest) // its close arrives later: counted once
        #expect(limiter.count == 3)
    }

    @Test func onlyTrustedSessionsLeaveNoRoomAndNothingIsEvicted() {
        let clock = Clock()
        let limiter = limiter(total: 2, clock: clock)
        let sessions = [Connection(), Connection()] // alive, as open channels are
        for connection in sessions {
            _ = limiter.admit(connection, from: "10.0.0.1")
            limiter.trusted(connection)
        }
        clock.advance(.seconds(5))
        guard case .refused(.full) = limiter.admit(Connection(), from: "10.0.0.9") else {
            Issue.record("a trusted session was evicted or the total passed")
            return
        }
        #expect(limiter.count == sessions.count)
    }

    @Test func aStrangerStaysPendingUntilItCloses() {
        let clock = Clock()
        let limiter = limiter(clock: clock)
        let stranger = Connection()
        _ = limiter.admit(stranger, from: "10.0.0.7")
        #expect(limiter.pendingCount(from: "10.0.0.7") == 1)
        limiter.release(stranger)
        #expect(limiter.pendingCount(from: "10.0.0.7") == 0)
        #expect(limiter.count == 0)
    }

    @Test func ipv6CountsPerSlash64AndMappedIPv4AsIPv4() throws {
        let a = try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1)
        let b = try SocketAddress(ipAddress: "2001:db8:1:2:ffff:ffff:ffff:ffff", port: 2)
        let c = try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 3)
        #expect(a.connectionSource == b.connectionSource)
        #expect(a.connectionSource != c.connectionSource)
        #expect(a.connectionSource == "2001:db8:1:2::/64")
        #expect(try SocketAddress(ipAddress: "::ffff:10.0.0.2", port: 4).connectionSource == "10.0.0.2")
        #expect(try SocketAddress(ipAddress: "10.0.0.2", port: 4).connectionSource == "10.0.0.2")
        // So 64 addresses of one /64 share one source's pending bound.
        let limiter = limiter(perSource: 8, clock: Clock())
        var refused = 0
        for host in 1...64 {
            let address = try SocketAddress(ipAddress: "2001:db8:1:2::\(String(host, radix: 16))", port: 9)
            if case .refused = limiter.admit(Connection(), from: address.connectionSource) { refused += 1 }
        }
        #expect(refused == 56)
    }

    @Test func aSourceThatBringsTooManyStrangersIsRefusedAtConnectUntilItsAllowanceComesBack() {
        let clock = Clock()
        let limiter = limiter(perSource: 8, allowance: StrangerAllowance(burst: 3, refillPerSecond: 1), clock: clock)
        for _ in 0..<3 {
            let stranger = Connection()
            #expect(refusal(limiter.admit(stranger, from: "10.0.0.66")) == nil)
            limiter.release(stranger) // refused after its handshake: never trusted
        }
        #expect(refusal(limiter.admit(Connection(), from: "10.0.0.66")) == .tooManyStrangers)
        // Another host is not touched by it.
        #expect(refusal(limiter.admit(Connection(), from: "10.0.0.5")) == nil)
        // The allowance comes back with time, one stranger a second here.
        clock.advance(.milliseconds(1001))
        #expect(limiter.allowanceLeft(for: "10.0.0.66") >= 1)
        #expect(refusal(limiter.admit(Connection(), from: "10.0.0.66")) == nil)
    }

    @Test func aSourceCannotHoldMoreHandshakesAtOnceThanItHasAllowanceLeft() {
        let clock = Clock()
        let limiter = limiter(perSource: 8, allowance: StrangerAllowance(burst: 1, refillPerSecond: 0.001), clock: clock)
        // The allowance is taken at admission: eight at once cannot all pass on one token.
        let admitted = (0..<8).filter { _ in refusal(limiter.admit(Connection(), from: "10.0.0.8")) == nil }.count
        #expect(admitted == 1)
    }

    @Test func trustedSessionsSpendNoAllowanceAndEvictionsDo() {
        let clock = Clock()
        let limiter = limiter(perSource: 1, allowance: StrangerAllowance(burst: 2, refillPerSecond: 0.001), clock: clock)
        for _ in 0..<10 {
            let session = Connection()
            #expect(refusal(limiter.admit(session, from: "10.0.0.1")) == nil)
            limiter.trusted(session)
            limiter.release(session)
        }
        #expect(limiter.allowanceLeft(for: "10.0.0.1") == 2)
        // A pending connection evicted by a newcomer from its source counts against that source.
        let first = Connection()
        _ = limiter.admit(first, from: "10.0.0.2")
        clock.advance(.seconds(2))
        #expect(evicted(limiter.admit(Connection(), from: "10.0.0.2")) === first)
        #expect(limiter.allowanceLeft(for: "10.0.0.2") < 2)
    }

    @Test func theSourcesTrackedStayBounded() {
        let clock = Clock()
        let limiter = limiter(perSource: 8, allowance: StrangerAllowance(burst: 2, refillPerSecond: 1), clock: clock)
        let sources = ConnectionLimiter<Connection>.maximumTrackedSources + 10
        for index in 0..<sources {
            let stranger = Connection()
            _ = limiter.admit(stranger, from: "source-\(index)")
            limiter.release(stranger)
        }
        #expect(limiter.trackedSources <= ConnectionLimiter<Connection>.maximumTrackedSources)
        // The latest are still remembered.
        #expect(limiter.allowanceLeft(for: "source-\(sources - 1)") < 2)
    }
}
