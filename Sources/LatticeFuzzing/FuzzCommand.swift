import Foundation

/// The fuzzer binary's own commands, for builds without libFuzzer: replay
/// inputs (crashers kept as regression tests), a seeded mutation loop, and
/// writing the seed corpus.
package enum FuzzCommand {
    package static func main(_ arguments: [String], target: ChangeSetFuzzTarget) -> Int32 {
        guard let command = arguments.first else { return usage() }
        var rest = Array(arguments.dropFirst())
        switch command {
        case "replay":
            let inputs = files(rest)
            for input in inputs { target.run(input.bytes) }
            print("replayed \(inputs.count) inputs")
            return 0
        case "mutate":
            var seed: UInt64 = 1
            var runs = 10_000
            while let flag = rest.first, flag.hasPrefix("--") {
                guard rest.count >= 2, let value = UInt64(rest[1]) else { return usage() }
                if flag == "--seed" { seed = value } else if flag == "--runs" { runs = Int(value) } else { return usage() }
                rest.removeFirst(2)
            }
            var corpus = files(rest).map(\.bytes)
            if corpus.isEmpty { corpus = FuzzHistories.make().seeds }
            // The input being run is kept on disk: after a crash it is the crasher.
            let current = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-fuzz-current-input.ltcs")
            FileHandle.standardError.write(Data("crashing input, if any: \(current.path)\n".utf8))
            mutationRun(target: target, corpus: corpus, seed: seed, runs: runs, keepingInputAt: current)
            try? FileManager.default.removeItem(at: current)
            print("ran \(runs) mutated inputs from \(corpus.count) seeds (seed \(seed))")
            return 0
        case "make-corpus":
            guard let directory = rest.first else { return usage() }
            let url = URL(fileURLWithPath: directory)
            try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for (index, seed) in FuzzHistories.make().seeds.enumerated() {
                _ = FileManager.default.createFile(atPath: url.appendingPathComponent(String(format: "seed-%02d.ltcs", index)).path, contents: Data(seed))
            }
            return 0
        default:
            return usage()
        }
    }

    /// Runs `runs` mutations of the corpus through the target; returns how many ran.
    @discardableResult
    package static func mutationRun(target: ChangeSetFuzzTarget, corpus: [[UInt8]], seed: UInt64, runs: Int, keepingInputAt file: URL? = nil) -> Int {
        var mutator = Mutator(seed: seed)
        for _ in 0..<runs {
            let input = mutator.mutate(corpus)
            if let file { try? Data(input).write(to: file) }
            target.run(input)
        }
        return runs
    }

    static func usage() -> Int32 {
        FileHandle.standardError.write(Data("usage: lattice-fuzz-changeset replay FILE_OR_DIR... | mutate [--seed S] [--runs N] FILE_OR_DIR... | make-corpus DIR\n".utf8))
        return 64
    }

    /// The files named, and the files in the directories named, in name order.
    package static func files(_ paths: [String]) -> [(name: String, bytes: [UInt8])] {
        var found: [(String, [UInt8])] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let names = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for name in names where !name.hasSuffix(".md") {
                if let data = FileManager.default.contents(atPath: name) { found.append((name, [UInt8](data))) }
            }
        }
        return found
    }
}

/// A seeded mutation loop: bit flips, byte changes, truncations, insertions,
/// duplicated ranges and splices of two inputs — what a hostile or broken peer sends.
struct Mutator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(max(bound, 1)))
    }

    mutating func mutate(_ corpus: [[UInt8]]) -> [UInt8] {
        var bytes = corpus[next(corpus.count)]
        for _ in 0...next(4) {
            guard !bytes.isEmpty else { break }
            let at = next(bytes.count)
            switch next(6) {
            case 0: bytes[at] ^= UInt8(1 << next(8))
            case 1: bytes[at] = UInt8(next(256))
            case 2: bytes.removeLast(next(bytes.count))
            case 3: bytes.insert(contentsOf: (0..<next(8) + 1).map { _ in UInt8(next(256)) }, at: at)
            case 4:
                let end = min(bytes.count, at + next(64) + 1)
                bytes.insert(contentsOf: bytes[at..<end], at: next(bytes.count))
            default:
                let other = corpus[next(corpus.count)]
                bytes = Array(bytes.prefix(at)) + Array(other.suffix(from: min(other.count, next(other.count + 1))))
            }
        }
        return bytes
    }
}
