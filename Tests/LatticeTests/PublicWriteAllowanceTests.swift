@testable import Lattice
import NIOConcurrencyHelpers
import Testing

/// The spam limit on strangers' public batches: a byte budget per host that
/// comes back with time, one host's spending leaving another's whole.
@Suite struct PublicWriteAllowanceTests {
    @Test func aHostSpendsItsBurstThenWaitsForTheRateAndOthersAreUntouched() throws {
        let clock = NIOLockedValueBox(100.0)
        let allowances = PublicWriteAllowances(allowance: PublicWriteAllowance(burstBytes: 1000, bytesPerSecond: 100), now: { clock.withLockedValue { $0 } })
        try allowances.spend(600, by: "10.0.0.9")
        try allowances.spend(400, by: "10.0.0.9")
        #expect(throws: PublicAllowanceSpent.self) { try allowances.spend(1, by: "10.0.0.9") }
        // Another host has its whole burst.
        try allowances.spend(1000, by: "10.0.0.7")
        // Two seconds bring back 200 bytes: 150 pass, 100 more do not.
        clock.withLockedValue { $0 += 2 }
        try allowances.spend(150, by: "10.0.0.9")
        do {
            try allowances.spend(100, by: "10.0.0.9")
            Issue.record("spent past the allowance")
        } catch let spent as PublicAllowanceSpent {
            #expect(spent.retryAfter > 0 && spent.retryAfter <= 1, "\(spent.retryAfter)")
            #expect(spent.description.contains("10.0.0.9"))
        }
        // The budget never grows past the burst, however long a host waits.
        clock.withLockedValue { $0 += 3600 }
        #expect(throws: PublicAllowanceSpent.self) { try allowances.spend(1001, by: "10.0.0.9") }
        try allowances.spend(1000, by: "10.0.0.9")
    }
}
