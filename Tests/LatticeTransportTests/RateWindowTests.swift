import LatticeTransport
import NIOCore
import Testing

@Suite struct RateWindowTests {
    @Test func aWindowTakesItsBurstThenSaysHowManyItLeftOut() {
        var window = RateWindow(interval: .seconds(10), burst: 2)
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        #expect(window.take(at: start) == 0)
        #expect(window.take(at: start + .seconds(1)) == 0)
        #expect(window.take(at: start + .seconds(2)) == nil)
        #expect(window.take(at: start + .seconds(3)) == nil)
        // The next window: its first event carries the count left out before it.
        #expect(window.take(at: start + .seconds(10)) == 2)
        #expect(window.take(at: start + .seconds(11)) == 0)
    }
}
