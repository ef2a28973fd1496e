@testable import Lattice
import Testing

/// The quota on asset content written outside the account, as a pure rule.
struct AssetQuotaTests {
    @Test func sizesAreReadAsPeopleWriteThem() {
        #expect(AssetQuota.parseSize("512M") == 512 << 20)
        #expect(AssetQuota.parseSize("2G") == 2 << 30)
        #expect(AssetQuota.parseSize("1.5GiB") == 3 << 29)
        #expect(AssetQuota.parseSize("64k") == 64 << 10)
        #expect(AssetQuota.parseSize("1048576") == 1_048_576)
        #expect(AssetQuota.parseSize("0") == 0)
        for bad in ["", "G", "-1M", "lots", "1X", "nan", "1e400"] { #expect(AssetQuota.parseSize(bad) == nil, "\(bad)") }
        #expect(AssetQuota.describe(3 << 29) == "1.5 GiB" && AssetQuota.describe(300 << 20) == "300 MiB" && AssetQuota.describe(80) == "80 bytes")
    }

    @Test func eachSourceAndTheWholeAreBoundedButNeverThisAccount() {
        let usage = AssetUsageReport(sources: [], outsideHeldBytes: 0, outsideMissingBytes: 0)
        var admission = AssetQuotaAdmission(quota: AssetQuota(perSource: 100, total: 150), usage: usage)
        let a = AssetSource.account("A"), b = AssetSource.account("B"), stranger = AssetSource.device("5c07")
        var outcomes: [Bool] = []
        for (size, sources) in [(60, [a]), (60, [a]), (60, [b]), (40, [stranger]), (30, [stranger]), (1_000, [.thisAccount, a]), (1, [a, b])] as [(Int64, Set<AssetSource>)] {
            outcomes.append(admission.admit(size, from: sources))
        }
        // A past its 100; 150 in all; this account's references never bounded; content two sources reference counts for each.
        #expect(outcomes == [true, false, true, false, true, true, false])
        #expect(admission.refused[a]?.assets == 2 && admission.refused[a]?.bytes == 61 && admission.refused[stranger]?.bytes == 40)
    }

    @Test func whatIsHeldAlreadyCounts() {
        var held = AssetUsage(source: .account("A"))
        held.heldBytes = 90
        var admission = AssetQuotaAdmission(quota: AssetQuota(perSource: 100, total: 1_000), usage: AssetUsageReport(sources: [held], outsideHeldBytes: 990, outsideMissingBytes: 0))
        let outcomes = [admission.admit(20, from: [.account("A")]), admission.admit(10, from: [.account("B")]), admission.admit(1, from: [.account("B")])]
        #expect(outcomes == [false, true, false])
    }
}
