@testable import LatticeNode
import NIOCore
import Testing

/// The node's policies as values, driven by hand: time is an input, no socket, no sleep.
@Suite struct NodePolicyTests {
    @Test func statusIsWrittenAfterAChangeSettlesAndNoMoreThanFourTimesASecond() {
        var debounce = StatusDebounce()
        var now = NIODeadline.uptimeNanoseconds(10_000_000_000)
        // A first change: written 0.1 s later.
        #expect(debounce.changed(at: now) == .milliseconds(100))
        // More changes before the write: none schedules another.
        #expect(debounce.changed(at: now + .milliseconds(50)) == nil)
        #expect(debounce.isScheduled)
        now = now + .milliseconds(100)
        debounce.writing(at: now)
        #expect(!debounce.isScheduled)
        // A change right after the write waits out the 0.25 s spacing (0.24 s here), not just 0.1 s.
        #expect(debounce.changed(at: now + .milliseconds(10)) == .milliseconds(240))
        debounce.writing(at: now + .milliseconds(250))
        // A change long after the last write is written 0.1 s later again.
        #expect(debounce.changed(at: now + .seconds(5)) == .milliseconds(100))
    }

    @Test func anUnreachablePeerIsDialedLessAndLessOftenUpToTheCap() {
        var backoff = DialBackoff()
        let waits = (0..<10).map { _ in backoff.attemptEnded(.unreachable) }
        #expect(waits == [0.25, 0.5, 1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test func aConnectionThatLastedStartsTheWaitsOverAndAShortOneDoesNot() {
        var backoff = DialBackoff()
        for _ in 0..<4 { _ = backoff.attemptEnded(.unreachable) }
        // A session that ended after 1 s (a peer that refuses us, say) keeps backing off.
        #expect(backoff.attemptEnded(.ended(after: 1)) == 4)
        // One that lasted a minute: the peer restarted, dial again at once.
        #expect(backoff.attemptEnded(.ended(after: 60)) == 0.25)
        #expect(backoff.attemptEnded(.unreachable) == 0.5)
    }

    @Test func discoveredDevicesAreRetriedAtLeastEveryFiveSecondsAndAConnectionResetsTheWait() {
        var backoff = DialBackoff(cap: 5)
        #expect((0..<7).map { _ in backoff.nextWait() } == [0.25, 0.5, 1, 2, 4, 5, 5])
        backoff.reset()
        #expect(backoff.nextWait() == 0.25)
    }
}
