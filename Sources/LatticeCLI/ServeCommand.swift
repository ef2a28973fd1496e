import ArgumentParser
import Foundation
import Lattice
import LatticeWeb

/// Prints node events: one line each for people, JSON lines for scripts.
struct EventPrinter: Sendable {
    let json: Bool

    /// Where the HTTP surface listens, once bound: a line like `listening on port …`.
    func printHTTP(host: String, port: Int) {
        if json {
            struct Listening: Encodable { var event = "httpListening", host: String, port: Int }
            Output.json(Listening(host: host, port: port))
        } else {
            Output.line("HTTP on http://\(host.contains(":") ? "[\(host)]" : host):\(port)/")
        }
    }

    func print(_ event: SyncNode.Event) {
        if case .discoveryUnavailable(let reason) = event {
            // The one line a user must see, also when stdout goes to a log or a script: on stderr.
            Output.standardError("lattice: \(reason). Meanwhile serving --peer addresses and incoming connections, and retrying mDNS every few seconds.")
        }
        if json {
            Output.json(event)
        } else if let text = event.text {
            Output.line(text)
        }
    }
}

extension SyncNode.Event {
    var text: String? {
        switch self {
        case .listening(let port): return "listening on port \(port)"
        case .connected(let peer, let address): return "connected to \(peer) at \(address)"
        case .refused(let peer, let address): return "refused untrusted device \(peer) at \(address) (not in this account: `lattice pair` adds a device; `lattice account` lists removed ones)"
        case .unreachable(let address, let reason): return "cannot reach \(address): \(reason)"
        case .disconnected(let peer, let address, let reason): return "disconnected from \(peer ?? "unauthenticated peer") at \(address)\(reason.map { ": \($0)" } ?? "")"
        case .syncFinished(let peer, let zone, let direction): return "\(direction == .receiving ? "received" : "sent") \(zone.zoneID.zoneName) \(direction == .receiving ? "from" : "to") \(peer)"
        case .deferred(let peer, let zone, let records):
            return "deferred \(records) record(s) of \(zone.zoneID.zoneName) from \(peer): its clock is ahead by more than the skew bound"
        case .publicOnly(let peer):
            return "\(peer) does not trust this device: they sync the public database only (on it, run `lattice trust` with this device's ID, or pair them)"
        case .writesRefused(let peer, let zone, let records, let reason):
            return "refused \(records) record(s) of \(zone) from \(peer): \(reason)"
        case .discovered(let peer, let addresses, let problem):
            return "discovered \(peer) at \(addresses.joined(separator: ", "))\(problem.map { "; not syncing with it: \($0)" } ?? "")"
        case .vanished(let peer): return "\(peer) is no longer advertised on the network"
        case .discoveryAvailable: return "mDNS discovery works again"
        case .assetFetched(let asset, let fetched, let resumed):
            return "fetched asset \(asset.prefix(16))… (\(fetched) bytes\(resumed > 0 ? ", \(resumed) found from an earlier transfer" : ""))"
        case .assetRejected(let asset, let peer, let chunk, let reason):
            return "refused \(chunk < 0 ? "the outline" : "chunk \(chunk)") of asset \(asset.prefix(16))… from \(peer): \(reason); asking another peer"
        case .syncStarted, .progress, .caughtUp, .discoveryUnavailable, .assetProgress: return nil
        }
    }
}

/// Bridges an async body into the synchronous command (the CLI's entry point is synchronous).
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    let semaphore = DispatchSemaphore(value: 0)
    let failure = LockedBox<Error?>(nil)
    Task {
        do { try await body() } catch { failure.value = error }
        semaphore.signal()
    }
    semaphore.wait()
    if let error = failure.value { throw error }
}

final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

extension GlobalOptions {
    /// Who may sync the public database with a node `sync` runs:
    /// `--database public` syncs it with any device, and so does `--database
    /// shared` (a share's participants are other accounts' devices, met as
    /// strangers until their hellos prove their accounts); otherwise the account.
    func publicSyncPolicy() throws -> PublicSyncPolicy {
        scope == .private ? .trusted : .anyone
    }
}

func parsePeers(_ texts: [String]) throws -> [PeerAddress] {
    try texts.map { text in
        guard let address = PeerAddress(text) else { throw CLIError.usage("--peer takes HOST:PORT (or [IPv6]:PORT), not \"\(text)\"") }
        return address
    }
}

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the sync node until interrupted: listen, dial peers, push commits.",
        discussion: """
            Syncs the private and public databases with every device of this account that connects, that --peer names, or that mDNS finds on the local network (DNS-SD `_lattice._tcp`, through avahi-daemon on Linux), and the public database alone with any other device of the container (--public-from anyone, the default, as CloudKit's public database is open to every user of the app), and pushes each commit (from any process on this store) at once. In the public database anyone may create a record and only its creator may change or delete it; every replica checks that. A stranger's public batches are limited to 256 MiB at once, then 1 MiB/s per device. Without a running mDNS daemon it says so on stderr and keeps serving. Stops cleanly on SIGINT or SIGTERM. One node per store.
            Exit codes: 69 the port cannot be bound; 77 another node runs on this store.
            Example: lattice serve --port 7766 --peer 192.168.1.20:7766
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "TCP port to listen on (0 picks a free one).") var port: Int = 7766
    @Option(help: "Address to listen on (:: is every IPv4 and IPv6 address).") var listen: String = "::"
    @Option(help: "A peer to dial, HOST:PORT; repeat for more.") var peer: [String] = []
    @Flag(help: "Neither advertise this node nor look for peers by mDNS (only --peer and incoming connections).") var noMdns = false
    @Option(help: "Who syncs the public database with this node besides the account: anyone (any device of the container) or trusted.")
    var publicFrom: PublicSyncPolicy = .anyone
    @Option(help: "After a sync, compare digests with the peer at most every this many seconds (0: never); a difference is logged as a bug and repaired.")
    var verifyEvery: Double = 10
    @Option(help: "A device of the account unseen this long (30d, 12h, 90s) stops holding deleted records' tombstones back; it is told what went when it returns. Kept in the store. Default 30d.")
    var tombstoneHorizon: String?
    @Option(help: "Look for tombstones and unreferenced assets to remove every this many seconds.")
    var collectEvery: Double = 60
    @Option(help: ArgumentHelp("Asset content fetched by itself for the records of one account outside this one (or one writer of unknown account): 512M, 2G. Kept in the store. Default 1G.", valueName: "SIZE"))
    var assetQuotaPerWriter: String?
    @Option(help: ArgumentHelp("Asset content fetched by itself for records written outside this account, in all. Kept in the store. Default 4G. `lattice asset fetch` gets content whatever the quota.", valueName: "SIZE"))
    var assetQuota: String?
    @Option(help: ArgumentHelp("Also answer CloudKit Web Services, event streams and /metrics over HTTP here: PORT (on 127.0.0.1) or HOST:PORT. Requests need a token (`lattice http token create`).", valueName: "[HOST:]PORT"))
    var http: String?
    @Option(help: ArgumentHelp("An origin (https://app.example) whose pages may call the HTTP surface (CORS); repeat for more. None by default.", valueName: "ORIGIN"))
    var httpAllowOrigin: [String] = []
    @Option(help: "Seconds an HTTP request may take to arrive whole (from the connection's start or its last answer) before it is refused (REQUEST_TIMEOUT).")
    var httpRequestTimeout: Double = 10
    @Option(help: "HTTP connections at once (event streams included); more are answered TRY_AGAIN_LATER and closed.")
    var httpMaxConnections: Int = 512

    func run() throws {
        guard (0...65535).contains(port) else { throw CLIError.usage("--port must be 0 to 65535") }
        guard verifyEvery >= 0, verifyEvery.isFinite else { throw CLIError.usage("--verify-every must be 0 or more seconds") }
        guard collectEvery > 0, collectEvery.isFinite else { throw CLIError.usage("--collect-every must be more than 0 seconds") }
        let horizon = try tombstoneHorizon.map { text in
            guard let seconds = TombstoneHorizon.parse(text) else { throw CLIError.usage("--tombstone-horizon takes a duration such as 30d, 12h, 15m or 90s, not \"\(text)\"") }
            return seconds
        }
        func size(_ text: String?, _ flag: String) throws -> Int64? {
            try text.map { text in
                guard let bytes = AssetQuota.parseSize(text) else { throw CLIError.usage("\(flag) takes a size such as 512M, 2G or 1048576 (bytes), not \"\(text)\"") }
                return bytes
            }
        }
        let perWriter = try size(assetQuotaPerWriter, "--asset-quota-per-writer")
        let total = try size(assetQuota, "--asset-quota")
        let peers = try parsePeers(peer)
        let httpAddress = try http.map(parseHTTPAddress)
        guard (0.1...3600).contains(httpRequestTimeout) else { throw CLIError.usage("--http-request-timeout takes 0.1 to 3600 seconds") }
        guard (1...65536).contains(httpMaxConnections) else { throw CLIError.usage("--http-max-connections takes 1 to 65536") }
        for origin in httpAllowOrigin where !(origin.hasPrefix("http://") || origin.hasPrefix("https://")) || origin.hasSuffix("/") {
            throw CLIError.usage("--http-allow-origin takes an origin such as https://app.example (scheme and host, no path), not \"\(origin)\"")
        }
        let container = try options.openContainer()
        if let horizon { try library { try container.setTombstoneHorizon(seconds: horizon) } }
        if perWriter != nil || total != nil {
            let current = try library { try container.assetQuota() }
            try library { try container.setAssetQuota(AssetQuota(perSource: perWriter ?? current.perSource, total: total ?? current.total)) }
        }
        let logger = LatticeLogging.standardError(level: options.logLevel)
        var configuration = SyncNode.Configuration()
        configuration.port = port
        configuration.listenHost = listen
        configuration.peers = peers
        configuration.discovers = !noMdns
        configuration.publicFrom = publicFrom
        configuration.verificationInterval = .milliseconds(Int64(verifyEvery * 1000))
        configuration.assetCollectionInterval = .milliseconds(Int64(collectEvery * 1000))
        // Liveness comes from the connection (mDNS keeps a cut peer for an hour): a
        // silent peer is pinged after 2 s and dropped after 6 s.
        configuration.pingInterval = .seconds(2)
        configuration.idleTimeout = .seconds(6)
        let node = SyncNode(container: container, configuration: configuration, logger: logger)
        let printer = EventPrinter(json: options.json)
        guard let httpAddress else {
            try runUntilSignalled(node, printer: printer)
            return
        }
        var web = WebServer.Configuration()
        web.host = httpAddress.host
        web.port = httpAddress.port
        web.allowedOrigins = Set(httpAllowOrigin)
        web.requestTimeout = .milliseconds(Int64(httpRequestTimeout * 1000))
        web.maximumConnections = httpMaxConnections
        let server = WebServer(container: container, configuration: web, logger: logger)
        do {
            try runBlocking {
                try await server.start()
                printer.printHTTP(host: httpAddress.host, port: server.boundPort ?? httpAddress.port)
                try await node.runUntilSignalled(alongside: [server]) { event in
                    server.nodeEvent(event)
                    printer.print(event)
                }
            }
        } catch let error as LatticeError {
            throw CLIError(error)
        }
    }

    /// `PORT` (on loopback) or `HOST:PORT`, `[IPv6]:PORT`.
    private func parseHTTPAddress(_ text: String) throws -> (host: String, port: Int) {
        if let port = Int(text), (0...65535).contains(port) { return ("127.0.0.1", port) }
        guard let address = PeerAddress(text) else { throw CLIError.usage("--http takes PORT or HOST:PORT (or [IPv6]:PORT), not \"\(text)\"") }
        return (address.host, address.port)
    }
}

/// Runs the node until SIGINT or SIGTERM, printing its events.
func runUntilSignalled(_ node: SyncNode, printer: EventPrinter) throws {
    do {
        try runBlocking { try await node.runUntilSignalled(onEvent: printer.print) }
    } catch let error as LatticeError {
        throw CLIError(error)
    }
}

extension PublicSyncPolicy: ExpressibleByArgument {}
