import Foundation
import LatticeFuzzing
import Testing

/// The change-set fuzzer's inputs as tests: every crasher it ever found and
/// its seed corpus replay through the store and the in-memory replica (a trap
/// ends the test run), and a short seeded mutation run goes past them.
/// The long coverage-guided runs are `scripts/fuzz.sh`.
@Suite struct ChangeSetFuzzReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    func target() throws -> ChangeSetFuzzTarget {
        try ChangeSetFuzzTarget(directory: URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-fuzz-test-\(UUID().uuidString)"))
    }

    @Test func crashersAndTheCorpusReplayWithoutATrap() throws {
        let crashers = FuzzCommand.files([Self.fuzzDirectory.appendingPathComponent("changeset-crashers").path])
        let corpus = FuzzCommand.files([Self.fuzzDirectory.appendingPathComponent("changeset-corpus").path])
        #expect(!crashers.isEmpty && corpus.count >= 10, "the fuzz inputs are missing from \(Self.fuzzDirectory.path)")
        let target = try target()
        for input in crashers + corpus { target.run(input.bytes) }
    }

    @Test func aSeededMutationRun() throws {
        let target = try target()
        let corpus = FuzzCommand.files([Self.fuzzDirectory.appendingPathComponent("changeset-corpus").path]).map(\.bytes)
        #expect(FuzzCommand.mutationRun(target: target, corpus: corpus, seed: 20_261_124, runs: 3_000) == 3_000)
    }
}
