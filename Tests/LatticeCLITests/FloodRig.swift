import Foundation
import Lattice
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real `lattice serve` processes under a flood of strangers from
/// `lattice-flood`: two trusted nodes (`a`, attacked, and `b`), an unrelated
/// node `c`, a trusted device `d` of `a`'s that dials in, and the figures
/// the flood test reads. Stores are named `PREFIX` + a, b, c, d.
final class FloodRig {
    let cli: CLI
    let prefix: String
    let a: NodeProcess
    let b: NodeProcess
    let c: NodeProcess
    private let databases: [String: Database]

    /// `openToStrangers`: the nodes let strangers sync the public database (the default of `serve`);
    /// otherwise they refuse them outright (`--public-from trusted`).
    init(cli: CLI, prefix: String, openToStrangers: Bool) throws {
        self.cli = cli
        self.prefix = prefix
        var ids: [String: String] = [:]
        for name in ["a", "b", "c", "d"] {
            try cli.ok(["init"], store: prefix + name)
            ids[name] = try cli.ok(["id"], store: prefix + name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Ping"], store: prefix + name)
            try cli.ok(["zone", "create", "Bulk"], store: prefix + name)
        }
        // a and b sync; d is a trusted device of a's that dials in during the flood.
        for (x, y) in [("a", "b"), ("a", "d")] {
            try cli.ok(["trust", ids[y]!, "--name", y], store: prefix + x)
            try cli.ok(["trust", ids[x]!, "--name", x], store: prefix + y)
        }
        let publicFrom = openToStrangers ? [] : ["--public-from", "trusted"]
        a = try NodeProcess(cli: cli, store: prefix + "a", extra: publicFrom, logLevel: "warning")
        b = try NodeProcess(cli: cli, store: prefix + "b", peers: [a.port], extra: publicFrom, logLevel: "warning")
        c = try NodeProcess(cli: cli, store: prefix + "c", extra: publicFrom, logLevel: "warning")
        var databases: [String: Database] = [:]
        for name in ["a", "b"] {
            databases[name] = try Container(identifier: "default", directory: URL(fileURLWithPath: cli.path(prefix + name)), create: false).privateCloudDatabase
        }
        self.databases = databases
    }

    func stop() { for node in [a, b, c] { node.stop() } }

    /// The store name the CLI knows rig store `name` by.
    func store(_ name: String) -> String { prefix + name }

    static var floodBinary: URL { CLI.binary.deletingLastPathComponent().appendingPathComponent("lattice-flood") }

    /// A running `lattice-flood`, and how many attempts it has made so far.
    final class Flood: @unchecked Sendable {
        let process = Process()
        let output = Pipe()
        private let progress = Pipe()
        private let lock = NSLock()
        private var attemptsSoFar = 0

        init(port: Int, handshakes: Int, messages: Int) throws {
            process.executableURL = FloodRig.floodBinary
            // From 127.0.0.2: another host than the trusted nodes, as on a LAN.
            process.arguments = ["--port", "\(port)", "--source", "127.0.0.2", "--handshakes", "\(handshakes)", "--lanes", "64", "--messages", "\(messages)"]
            process.standardOutput = output
            process.standardError = progress
            try process.run()
            PipeReader.start(progress.fileHandleForReading) { [weak self] data in
                let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
                guard let self, let last = lines.last.flatMap({ Int($0) }) else { return }
                self.lock.withLock { self.attemptsSoFar = max(self.attemptsSoFar, last) }
            }
        }

        var attempts: Int { lock.withLock { attemptsSoFar } }

        /// The summary line, once the flood has ended (with `stop`, at once).
        func summary(stop: Bool = false) -> [String: Any] {
            if stop { process.terminate() }
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        }
    }

    /// Starts `lattice-flood` against `port`: `handshakes` attempts, or until stopped.
    func flood(port: Int, handshakes: Int, messages: Int = 4) throws -> Flood {
        try Flood(port: port, handshakes: handshakes, messages: messages)
    }

    /// Starts `lattice record import` of `count` records into zone Bulk of
    /// `store` in one transaction: a long store write that holds the store's
    /// write lock, after which the node streams them to its peers (its store
    /// threads busy).
    func longWrite(store: String, count: Int, tag: String) throws -> Process {
        let file = cli.path("\(prefix)bulk-\(tag).jsonl")
        var lines = ""
        lines.reserveCapacity(count * 120)
        for i in 0..<count {
            lines += #"{"recordName":"\#(tag)-\#(i)","recordType":"Track","fields":{"title":{"value":"track \#(i) of a long import","type":"STRING"},"n":{"value":\#(i),"type":"INT64"}}}"#
            lines += "\n"
        }
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["record", "import", "Bulk", file, "--batch-size", "\(count)", "--store", cli.path(self.store(store))]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Saves a record on one trusted node and waits until the other has it,
    /// alternating directions, until `until` says stop (and at least `minimum`
    /// samples); returns each save-to-arrival time in milliseconds.
    func propagation(tag: String, minimum: Int, until done: () -> Bool) throws -> [Double] {
        var samples: [Double] = []
        var index = 0
        while samples.count < minimum || !done() {
            let (from, to) = index % 2 == 0 ? ("b", "a") : ("a", "b")
            let id = Record.ID(recordName: "\(tag)-\(index)", zoneID: Zone.ID(zoneName: "Ping"))
            var record = Record(recordType: "Ping", recordID: id)
            record["n"] = .int64(Int64(index))
            _ = try databases[from]!.save(record)
            let saved = Date()
            let deadline = saved.addingTimeInterval(60)
            while (try? databases[to]!.record(for: id)) == nil {
                guard Date() < deadline else { throw RigError.notPropagated(id.recordName) }
                usleep(1000)
            }
            samples.append(Date().timeIntervalSince(saved) * 1000)
            index += 1
            usleep(20_000)
        }
        return samples
    }

    enum RigError: Error { case notPropagated(String) }

    /// Waits until `store` holds `count` records in zone Bulk.
    func waitForBulk(on store: String, count: Int, seconds: Double = 120) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while (try? databases[store]!.recordCount(inZoneWith: Zone.ID(zoneName: "Bulk"))) ?? 0 < count {
            guard Date() < deadline else { throw RigError.notPropagated("\(count) Bulk records on \(store)") }
            usleep(50_000)
        }
    }

    /// The process's peak resident memory (VmHWM), in MB.
    static func peakRSS(_ node: NodeProcess) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(node.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
    }

    /// CPU seconds the process has used (user + system).
    static func cpuSeconds(_ node: NodeProcess) -> Double {
        let stat = (try? String(contentsOfFile: "/proc/\(node.process.processIdentifier)/stat", encoding: .utf8)) ?? ""
        // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th of them.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Bytes of every file in the store's directory tree.
    func storeBytes(_ store: String) -> Int {
        let root = URL(fileURLWithPath: cli.path(self.store(store)))
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.fileSizeKey])
        var total = 0
        while let file = files?.nextObject() as? URL {
            total += (try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0
        }
        return total
    }

    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}
