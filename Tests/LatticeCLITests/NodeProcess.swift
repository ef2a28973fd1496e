import Foundation
import LatticeTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A `lattice serve` process on loopback, with its JSON event lines.
final class NodeProcess: @unchecked Sendable {
    let process = Process()
    let store: String
    private let lock = NSLock()
    private var buffer = ""
    private var errorBuffer = ""
    private(set) var port = 0

    /// Starts `lattice serve --port 0 --json` on `store`, dialing `peers`; returns once it listens.
    /// Without `mdns`, it runs with --no-mdns; `environment` is added to the test's.
    init(cli: CLI, store: String, peers: [Int] = [], extra: [String] = [], mdns: Bool = false, environment: [String: String] = [:], logLevel: String = "info") throws {
        self.store = store
        process.executableURL = CLI.binary
        process.arguments = ["serve", "--port", "0", "--listen", "127.0.0.1", "--json", "--log-level", logLevel, "--store", cli.path(store)]
            + (mdns ? [] : ["--no-mdns"]) + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] } + extra
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        PipeReader.start(out.fileHandleForReading) { [weak self] data in
            guard let self else { return }
            self.lock.withLock { self.buffer += String(decoding: data, as: UTF8.self) }
        }
        PipeReader.start(err.fileHandleForReading) { [weak self] data in
            guard let self else { return }
            self.lock.withLock { self.errorBuffer += String(decoding: data, as: UTF8.self) }
        }
        let listening = eventuallyBlocking(20) {
            guard let port = events.first(where: { $0["event"] as? String == "listening" })?["port"] as? Int else { return false }
            self.port = port
            return true
        }
        guard listening else {
            stop()
            throw NodeError.didNotStart(store)
        }
    }

    enum NodeError: Error { case didNotStart(String) }

    var events: [[String: Any]] {
        lock.withLock { buffer }.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// What it printed on standard error so far.
    var standardError: String { lock.withLock { errorBuffer } }

    /// The port of the HTTP surface (`--http`), once it listens.
    var httpPort: Int? { events.first { $0["event"] as? String == "httpListening" }?["port"] as? Int }

    func count(_ event: String) -> Int { events.filter { $0["event"] as? String == event }.count }

    /// SIGTERM, then wait: a clean stop exits 0.
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func kill9() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}


