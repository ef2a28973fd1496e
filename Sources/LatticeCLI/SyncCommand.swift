import ArgumentParser
import Foundation
import Lattice

struct SyncCommand: ParsableCommand {
    /// Connections closed before the handshake, in a row, before a peer counts as failed.
    static let attemptsBeforeHandshake = 4
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Sync with peers: once and exit (--once), or until interrupted.",
        discussion: """
            Syncs the private and public databases with each --peer of this account; with --database public, the public database with any device of the container. With --once: until both sides hold what the other had, then prints what moved and exits.
            Exit codes: 69 a peer cannot be reached, is not a Lattice node, the sync was cut off or records were deferred (clock skew); 77 a device does not trust the other; 66 the peer syncs another container.
            Example: lattice sync --peer 192.168.1.20:7766 --once
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "A peer to sync with, HOST:PORT; repeat for more.") var peer: [String] = []
    @Flag(help: "Sync until both sides have what the other had, then exit with a summary.") var once = false
    @Option(help: "With --once: give up after this many seconds.") var timeout: Double = 600

    func validate() throws {
        if peer.isEmpty { throw ValidationError("name at least one --peer HOST:PORT (a running `lattice serve` finds peers by mDNS by itself)") }
        if timeout <= 0 { throw ValidationError("--timeout must be positive") }
    }

    func run() throws {
        let publicFrom = try options.publicSyncPolicy()
        let peers = try parsePeers(peer)
        let container = try options.openContainer()
        let logger = LatticeLogging.standardError(level: options.logLevel)
        var configuration = SyncNode.Configuration()
        configuration.peers = peers
        configuration.publicFrom = publicFrom
        // With --once too: a node under load may close a connection before
        // its handshake (too many from this address); the dial comes again.
        configuration.reconnect = true
        // A one-off sync leaves the store's status to the node that may be serving it.
        configuration.publishesStatus = !once
        let node = SyncNode(container: container, configuration: configuration, logger: logger)
        let printer = EventPrinter(json: options.json)
        guard once else {
            try runUntilSignalled(node, printer: printer)
            return
        }
        let outcome = LockedBox(OnceOutcome())
        let json = options.json
        let timeout = timeout
        let peerCount = peers.count
        let scopeIsPrivate = options.scope == .private
        try runBlocking {
            try await node.start()
            let watchdog = Task {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                outcome.value.timedOut = true
                await node.stop()
            }
            var progress = ProgressLine(enabled: !json && Output.standardErrorIsTerminal)
            var ended = 0
            var closedBeforeHandshake: [String: Int] = [:]
            for await event in node.events {
                var state = outcome.value
                switch event {
                case .refused(let peer, let address): state.failures.append(.permission("device \(peer) at \(address) is not trusted here; check its ID and run `lattice trust \(peer)`"))
                case .unreachable(let address, let reason):
                    state.failures.append(.unavailable("cannot reach \(address): \(reason)"))
                    ended += 1
                case .disconnected(let peer, let address, let reason):
                    if let reason, reason.cause == .containerMismatch {
                        state.failures.append(.container("\(address): \(reason); use the same --container on both devices"))
                    } else if reason?.cause == .notTrustedByPeer {
                        state.failures.append(.permission("\(peer ?? address) at \(address) does not trust this device; on it, run `lattice trust \(container.deviceID)`"))
                    } else if let peer, state.publicOnly.contains(peer) {
                        break // counted when it said it syncs the public database only
                    } else if let peer, !state.caughtUp.contains(peer) {
                        state.failures.append(.unavailable("the connection to \(peer) at \(address) ended before the sync finished\(reason.map { ": \($0)" } ?? "")"))
                    } else if peer == nil {
                        // Closed with no reason before the handshake: busy, or not a Lattice node. Tried a few times.
                        if reason == nil || reason?.cause == .other && reason?.handshakeFailed == false {
                            closedBeforeHandshake[address, default: 0] += 1
                            if closedBeforeHandshake[address]! < Self.attemptsBeforeHandshake { break }
                        }
                        state.failures.append(.unavailable("\(address) is not a Lattice node, is too busy to take the connection, or the handshake with it failed\(reason.map { ": \($0)" } ?? "")"))
                    } else {
                        break
                    }
                    ended += 1
                case .progress(_, let zone, let direction, let recordsDone, let recordsTotal, let bytesDone, let bytesTotal):
                    let key = "\(direction == .receiving ? "receiving" : "sending") \(zone.zoneID.zoneName)"
                    let shown = state.streams[key, default: StreamTally()].update(records: (recordsDone, recordsTotal), bytes: (bytesDone, bytesTotal))
                    progress.show("\(key): \(shown.records.done)/\(shown.records.total) records, \(shown.bytes.done / 1024)/\(shown.bytes.total / 1024) KiB")
                    if direction == .receiving { state.received[zone.zoneID.zoneName] = shown.records.done } else { state.sent[zone.zoneID.zoneName] = shown.records.done }
                case .caughtUp(let peer):
                    if !state.publicOnly.contains(peer) { state.caughtUp.insert(peer) }
                case .publicOnly(let peer) where scopeIsPrivate:
                    // Asked for the private database, which the peer does not share with this device.
                    state.publicOnly.insert(peer)
                    state.failures.append(.permission("\(peer) does not trust this device (it syncs the public database only with it); on it, run `lattice trust \(container.deviceID)`"))
                    ended += 1
                case .publicOnly: break
                case .writesRefused(let peer, let zone, let records, let reason):
                    state.refused += records
                    state.refusedNote = "\(state.refused) record(s) from \(peer) were refused (\(zone)): \(reason)"
                case .deferred(let peer, let zone, let records):
                    state.deferred += records
                    state.deferredNote = "\(state.deferred) record(s) of \(zone.zoneID.zoneName) from \(peer) were deferred: its clock is ahead of this device's by more than the skew bound; they land in a later sync once the clocks agree (check both clocks)"
                case .listening, .connected, .syncStarted, .syncFinished, .discovered, .vanished, .discoveryUnavailable, .discoveryAvailable,
                     .assetProgress, .assetFetched, .assetRejected: break
                }
                outcome.value = state
                if json { printer.print(event) }
                if state.caughtUp.count + ended >= peerCount { break }
            }
            progress.finish()
            // Small assets (and eager zones') come with the records: their content too, from the peers still connected.
            if !outcome.value.caughtUp.isEmpty { await node.waitForAssetFetches(timeout: .seconds(max(1, Int64(timeout / 4)))) }
            watchdog.cancel()
            await node.stop()
        }
        let result = outcome.value
        if result.timedOut { throw CLIError(.unavailable, code: "NETWORK_FAILURE", "the sync did not finish within \(Int(timeout)) s") }
        if result.caughtUp.isEmpty, let failure = result.failures.first { throw failure.error }
        let received = result.received.values.reduce(0, +)
        let sent = result.sent.values.reduce(0, +)
        let output = SyncOutput(synced: result.caughtUp.sorted(), recordsReceived: received, recordsSent: sent,
                                recordsRefused: result.refused, failures: result.failures.map(\.error.message), peersNamed: peerCount)
        Output.emit(output, json: options.json)
        if !options.json {
            for failure in output.failures { Output.standardError("lattice: \(failure)") }
            // Refused writes are not a failed sync: the rest landed, and every honest replica refuses the same.
            if let note = result.refusedNote { Output.standardError("lattice: \(note)") }
        }
        if result.caughtUp.count < peerCount, let failure = result.failures.first { throw failure.error }
        if let note = result.deferredNote { throw CLIError(.unavailable, code: "NETWORK_FAILURE", "the sync is incomplete: \(note)") }
    }
}

struct OnceOutcome: Sendable {
    enum Failure: Sendable {
        case permission(String)
        case unavailable(String)
        case container(String)
        var error: CLIError {
            switch self {
            case .container(let message): return CLIError(.notFound, code: "BAD_CONTAINER", message)
            case .permission(let message): return CLIError(.permission, code: "ACCESS_DENIED", message)
            case .unavailable(let message): return CLIError(.unavailable, code: "NETWORK_FAILURE", message)
            }
        }
    }
    var caughtUp = Set<String>()
    var failures: [Failure] = []
    var received: [String: Int] = [:]
    var sent: [String: Int] = [:]
    var streams: [String: StreamTally] = [:]
    var timedOut = false
    var deferred = 0
    var deferredNote: String?
    var refused = 0
    var refusedNote: String?
    /// Peers that do not trust this device: they synced the public database only.
    var publicOnly = Set<String>()
}

/// Progress of one zone in one direction over a whole run. A session that
/// restarts (a push after a commit, a reconnect) reports a new stream from
/// zero: what earlier streams did is kept, so counts and totals never shrink.
struct StreamTally {
    private var finished = (records: (done: 0, total: 0), bytes: (done: 0, total: 0))
    private var current = (records: (done: 0, total: 0), bytes: (done: 0, total: 0))

    /// Takes a stream's progress; returns the run's.
    mutating func update(records: (Int, Int), bytes: (Int, Int)) -> (records: (done: Int, total: Int), bytes: (done: Int, total: Int)) {
        if records.0 < current.records.done || bytes.0 < current.bytes.done {
            finished.records.done += current.records.done
            finished.records.total += current.records.done
            finished.bytes.done += current.bytes.done
            finished.bytes.total += current.bytes.done
        }
        current = ((records.0, records.1), (bytes.0, bytes.1))
        return ((finished.records.done + records.0, finished.records.total + max(records.1, records.0)),
                (finished.bytes.done + bytes.0, finished.bytes.total + max(bytes.1, bytes.0)))
    }
}

/// One line of progress on a terminal, redrawn in place.
struct ProgressLine {
    let enabled: Bool
    private var shown = false
    init(enabled: Bool) { self.enabled = enabled }

    mutating func show(_ text: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
        shown = true
    }

    mutating func finish() {
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
        shown = false
    }
}

/// What `sync --once` prints (people get the failures on standard error).
struct SyncOutput: CommandOutput {
    var synced: [String]
    var recordsReceived: Int
    var recordsSent: Int
    /// Records refused: writes their writers had no right to make.
    var recordsRefused: Int
    var failures: [String]
    /// The peers named, which people are told the synced ones out of.
    var peersNamed: Int

    enum CodingKeys: String, CodingKey { case synced, recordsReceived, recordsSent, recordsRefused, failures }

    var text: String { "synced with \(synced.count) of \(peersNamed) peer(s): received \(recordsReceived) record(s), sent \(recordsSent)" }
}
