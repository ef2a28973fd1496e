import Foundation
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeTestSupport
import LatticeTransport
import NIOCore
import Testing
import LatticeRawClient

/// The inviter's endpoint on a real socket: an attempt that idles is closed
/// at its deadline and spends none of the code's guesses.
@Suite struct PairingEndpointTests {
    /// An inviter on a thread of its own, allowing one wrong guess: its port, the
    /// attempts that failed, and (once it ends) its outcome.
    struct Inviter {
        let code: PairingCode
        let port = Locked(0)
        let failures = Locked<[PairingFailure]>([])
        let ended = Locked<Result<PairingOutcome, Error>?>(nil)

        init(attemptDeadline: TimeAmount = PairingEndpoint.defaultAttemptDeadline) throws {
            let identity = try Identity.generate()
            let code = try PairingCode.generate()
            self.code = code
            let offer = PairingOffer(code: code, now: RecordClock.now(), lifetimeMilliseconds: 20_000, maximumFailures: 1)
            let (port, failures, ended) = (port, failures, ended)
            Thread {
                let outcome = Result {
                    try PairingEndpoint.invite(
                        offer: offer, makeInviter: { PairingInviter(code: code, identity: identity, name: "inviter", container: "c") },
                        host: "127.0.0.1", port: 0, wallClock: RecordClock.now, listening: { port.set($0) },
                        attemptFailed: { failure in failures.update { $0.append(failure) } }, attemptDeadline: attemptDeadline)
                }
                ended.set(outcome)
            }.start()
            while port.value == 0 { Thread.sleep(forTimeInterval: 0.01) }
        }

        /// The right code still pairs: the attempts before spent no guess.
        func expectPairs() throws {
            let joiner = try PairingJoiner(code: code, identity: try Identity.generate(), name: "joiner", container: "c")
            #expect(try PairingEndpoint.join(joiner, host: "127.0.0.1", port: port.value).peer.name == "inviter")
            while ended.value == nil { Thread.sleep(forTimeInterval: 0.01) }
            #expect((try ended.value?.get())?.peer.name == "joiner")
        }
    }

    @Test func anIdleAttemptIsClosedAtItsDeadlineAndSpendsNoGuess() throws {
        let inviter = try Inviter(attemptDeadline: .milliseconds(300))
        let (port, failures) = (inviter.port, inviter.failures)
        // Two idle connections in turn: each is closed by its deadline, well before the socket's own 15 s.
        for _ in 0..<2 {
            // The client gives up after 5 s: closed by the server means closed by the attempt's deadline.
            let idle = try #require(RawConnection(port: port.value, timeoutSeconds: 5))
            #expect(idle.closedByServer())
        }
        #expect(failures.value.count == 2 && failures.value.allSatisfy { $0 == .timedOut }, "\(failures.value)")
        // With one guess allowed, the right code still pairs: the idle attempts spent none.
        try inviter.expectPairs()
    }

    /// A stranger announces a message over the inviter's 64 KiB: the
    /// connection ends at the length prefix, before anything is buffered, and
    /// spends no guess (a joiner takes up to 1 MiB from the inviter alone).
    @Test func anOversizedMessageToTheInviterEndsItsAttemptAtTheLengthPrefix() throws {
        let inviter = try Inviter()
        let (port, failures) = (inviter.port, inviter.failures)
        for length in [PairingMessage.maximumLength + 1, PairingMessage.maximumIntroductionLength] {
            let hostile = try #require(RawConnection(port: port.value, timeoutSeconds: 5))
            // The prefix and a few bytes, not the body: the inviter must not wait for it.
            _ = hostile.send(withUnsafeBytes(of: UInt32(length).bigEndian, Array.init) + [1, 2, 3])
            // Closed by the server before the client's 5 s ran out: the inviter did not wait for the body.
            #expect(hostile.closedByServer(), "a \(length)-byte message was not refused")
        }
        #expect(failures.value.count == 2, "\(failures.value)")
        try inviter.expectPairs()
    }
}

/// Milliseconds since 1970.
enum RecordClock {
    @Sendable static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
}

/// A value shared between a test and the threads it starts.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func set(_ value: Value) { lock.withLock { stored = value } }
    func update(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
