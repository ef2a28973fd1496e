/// How often a fuzzer run reached each situation it knows by name: a fuzzer
/// that never reaches a cascade or a deferral proves nothing about them.
/// A value, owned by one run and summed by whoever wants a total.
struct FuzzCoverage: Sendable {
    private(set) var counts: [String: Int] = [:]

    mutating func count(_ what: String, _ times: Int = 1) { counts[what, default: 0] += times }

    subscript(_ what: String) -> Int { counts[what, default: 0] }

    static func += (total: inout FuzzCoverage, run: FuzzCoverage) {
        total.counts.merge(run.counts, uniquingKeysWith: +)
    }

    /// "name count" pairs in name order, for a test's log.
    var summary: String { counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
}
