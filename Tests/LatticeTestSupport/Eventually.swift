import Foundation

/// Waits until `condition` holds, at most `seconds`: a bound for a loaded CI
/// machine running the whole suite at once (it returns as soon as it holds),
/// not a claim about speed. The tests' one poll-until, in two forms: this one
/// for async tests, `eventuallyBlocking` for tests that block a thread.
package func eventually(_ seconds: Double = 60, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await condition()
}

/// `eventually` for synchronous tests (those that drive processes): polls every
/// 50 ms, blocking the thread, which an async test must not do.
@available(*, noasync, message: "use eventually, which sleeps without blocking a thread")
package func eventuallyBlocking(_ seconds: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}

/// How long a test waits before it calls something a hang: `seconds`, or five
/// times that under a sanitizer (`scripts/tsan.sh` sets `LATTICE_SANITIZER`),
/// where everything runs several times slower. Never a claim about speed.
public func hangBound(_ seconds: Double) -> Double {
    ProcessInfo.processInfo.environment["LATTICE_SANITIZER"] == nil ? seconds : seconds * 5
}
