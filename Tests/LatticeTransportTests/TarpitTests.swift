import NIOCore
import NIOEmbedded
@testable import LatticeTransport
import Testing

@Suite struct TarpitTests {
    @Test func aHeldConnectionIsClosedAfterItsTimeAndTheTarpitIsBounded() throws {
        let loop = EmbeddedEventLoop()
        let tarpit = Tarpit(maximum: 2, holding: .milliseconds(250))
        let channels = (0..<3).map { _ in EmbeddedChannel(loop: loop) }
        #expect(tarpit.hold(channels[0]))
        #expect(tarpit.hold(channels[1]))
        #expect(!tarpit.hold(channels[2])) // full: the caller closes this one at once
        #expect(tarpit.count == 2)
        loop.advanceTime(by: .milliseconds(200))
        #expect(tarpit.count == 2)
        loop.advanceTime(by: .milliseconds(100))
        #expect(tarpit.count == 0)
        #expect(tarpit.hold(channels[2]))
    }
}
