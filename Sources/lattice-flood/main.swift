// A hostile client for the flood test and benchmark: throwaway identities
// that complete the handshake with a node, then try to send large messages.
// It speaks the raw protocol over blocking sockets, one thread per lane.
//
//   lattice-flood --port P [--host 127.0.0.1] [--source ADDRESS] [--handshakes 2000] [--lanes 16]
//                 [--messages 4] [--message-bytes 1048576] [--seconds 60]
//
// Each 100th attempt prints its count on standard error, so a test can
// tell how far the flood has come. SIGTERM or SIGINT stops it early (each lane finishes its connection first).
// Prints one JSON line: attempts, handshakes completed, connections refused
// before the handshake ended, bytes of messages the node took, and how long
// the node held a stranger after its handshake (p50, p99, max, in ms).
import Foundation
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeRawClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Options {
    var host = "127.0.0.1"
    /// The local address to connect from (on loopback, 127.0.0.2 stands for another host).
    var source: String?
    var port = 0
    var handshakes = 2000
    var lanes = 16
    var messages = 4
    var messageBytes = SyncWire.maximumMessageSize
    var seconds = 60.0

    init(_ arguments: [String]) {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { Self.fail("\(flag) needs a value") }
            switch flag {
            case "--host": host = value
            case "--source": source = value
            case "--port": port = Self.number(value, flag)
            case "--handshakes": handshakes = Self.number(value, flag)
            case "--lanes": lanes = max(1, Self.number(value, flag))
            case "--messages": messages = Self.number(value, flag)
            case "--message-bytes": messageBytes = min(SyncWire.maximumMessageSize, Self.number(value, flag))
            case "--seconds": seconds = Double(Self.number(value, flag))
            default: Self.fail("unknown option \(flag)")
            }
        }
        guard port > 0 else { Self.fail("--port is required") }
    }

    static func number(_ text: String, _ flag: String) -> Int {
        guard let value = Int(text), value >= 0 else { fail("\(flag) takes a whole number, got \(text)") }
        return value
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("lattice-flood: \(message)\n".utf8))
        exit(64)
    }
}

/// One connection's fate.
struct Outcome {
    var connected = false
    var handshake = false
    var messageBytesTaken = 0
    /// From the end of the handshake to the node's close, in milliseconds.
    var heldMilliseconds: Double?
}

func attack(_ options: Options, payload: [UInt8]) -> Outcome {
    var outcome = Outcome()
    guard let connection = RawConnection(host: options.host, port: options.port, source: options.source, timeoutSeconds: 10) else { return outcome }
    outcome.connected = true
    do {
        var initiator = try HandshakeInitiator(identity: try Identity.generate(), versions: SyncWire.versions)
        connection.frame(initiator.start())
        guard let second = connection.readFrame() else { return outcome }
        let (reply, result) = try initiator.receive(second)
        guard connection.frame(reply) == reply.count + 4 else { return outcome }
        outcome.handshake = true
        let done = Date()
        if options.messages > 0 {
            var sender = try result.sendKey.withBytes { try SecretStreamSender(key: $0) }
            var taken = connection.frame(sender.header)
            for _ in 0..<options.messages {
                let frame = try sender.seal(payload)
                let sent = connection.frame(frame)
                taken += sent
                if sent < frame.count + 4 { break }
            }
            outcome.messageBytesTaken = taken
        }
        if connection.closedByServer() { outcome.heldMilliseconds = Date().timeIntervalSince(done) * 1000 }
    } catch {
        // A handshake the node broke off counts as refused.
    }
    return outcome
}

/// The attempts taken and their outcomes, shared by the lanes.
final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var taken = 0
    private var stopped = false
    private var results: [Outcome] = []
    let limit: Int
    let deadline: Date

    init(limit: Int, deadline: Date) {
        self.limit = limit
        self.deadline = deadline
    }

    /// Takes the next attempt, or false when all are taken or time is up.
    func claim() -> Bool {
        lock.withLock {
            guard !stopped, taken < limit, Date() < deadline else { return false }
            taken += 1
            return true
        }
    }

    func stop() { lock.withLock { stopped = true } }
    func add(_ outcome: Outcome) {
        let count = lock.withLock {
            results.append(outcome)
            return results.count
        }
        if count % 100 == 0 { FileHandle.standardError.write(Data("\(count)\n".utf8)) }
    }
    var outcomes: [Outcome] { lock.withLock { results } }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let payload = [UInt8](repeating: 0x5A, count: options.messageBytes)
let start = Date()
let tally = Tally(limit: options.handshakes, deadline: start.addingTimeInterval(options.seconds))
let signals = [SIGTERM, SIGINT].map { number in
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
    source.setEventHandler { tally.stop() }
    source.resume()
    return source
}
let finished = DispatchSemaphore(value: 0)
for _ in 0..<options.lanes {
    Thread.detachNewThread {
        while tally.claim() { tally.add(attack(options, payload: payload)) }
        finished.signal()
    }
}
for _ in 0..<options.lanes { finished.wait() }
let elapsed = Date().timeIntervalSince(start)
let outcomes = tally.outcomes
for source in signals { source.cancel() }

let held = outcomes.compactMap(\.heldMilliseconds).sorted()
func percentile(_ p: Double) -> Double { held.isEmpty ? 0 : held[min(held.count - 1, Int((Double(held.count) * p).rounded(.up)) - 1)] }
let summary: [String: Any] = [
    "attempts": outcomes.count,
    "connected": outcomes.filter(\.connected).count,
    "handshakes": outcomes.filter(\.handshake).count,
    "refusedBeforeHandshake": outcomes.filter { $0.connected && !$0.handshake }.count,
    "messageBytesTaken": outcomes.map(\.messageBytesTaken).reduce(0, +),
    "heldP50Ms": percentile(0.5), "heldP99Ms": percentile(0.99), "heldMaxMs": held.last ?? 0,
    "seconds": elapsed,
    "handshakesPerSecond": Double(outcomes.filter(\.handshake).count) / max(elapsed, 0.001),
]
let json = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
