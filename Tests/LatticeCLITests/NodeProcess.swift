import Foundation
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
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.buffer += String(decoding: data, as: UTF8.self) }
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock { self.errorBuffer += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let event = events.first(where: { $0["event"] as? String == "listening" }), let port = event["port"] as? Int {
                self.port = port
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        stop()
        throw NodeError.didNotStart(store)
    }

    enum NodeError: Error { case didNotStart(String) }

    var events: [[String: Any]] {
        lock.withLock { buffer }.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// What it printed on standard error so far.
    var standardError: String { lock.withLock { errorBuffer } }

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

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}

/// A plain TCP client for hostile-peer tests.
final class RawConnection {
    let fd: Int32

    init?(port: Int) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard result == 0 else {
            close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    func frame(_ bytes: [UInt8]) { send(withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes) }

    /// Reads one frame (nil at end of stream or timeout).
    func readFrame() -> [UInt8]? {
        guard let header = read(4) else { return nil }
        let length = Int(header.reduce(0) { $0 << 8 | UInt32($1) })
        return read(length)
    }

    func read(_ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n <= 0 { return nil }
            got += n
        }
        return out
    }

    /// Whether the server closed the connection within the receive timeout (reads and discards until then).
    func closedByServer() -> Bool {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &scratch, scratch.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    deinit { close(fd) }
}
