import ArgumentParser
import Foundation
import Lattice

struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff", abstract: "Compare this store's zones with a peer's: print `in sync`, or each record held differently.",
        discussion: """
            Compares per zone a digest of every record, tombstone and conflict (range-based set reconciliation: equal zones \
            in one round trip, differences found in a number of round trips that grows with the logarithm of the store). \
            Nothing is synced: the peer streams nothing and nothing here changes. Without ZONE, every zone of --database \
            that either side syncs with the other. `lattice diff DEVICE-ID [ZONE...]` asks the node running on this store \
            to compare with that connected device; `--peer HOST:PORT` connects by itself (also while a node runs). Each difference is printed as ZONE/NAME with what each side holds; the \
            round trips and bytes go to standard error.
            Exit codes: 0 in sync; 1 differences found (as diff(1) has it); 66 a ZONE neither side holds; 69 the peer cannot be \
            reached, no node runs here (DEVICE-ID) or the comparison was cut off; 77 a device does not trust the other, or a ZONE \
            is not synced between the two.
            Example: lattice diff --peer 192.168.1.20:7766 Movies
                     lattice diff TZAOL4C-AIEA3S7-…-3GTHVQY
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "The device to compare with, HOST:PORT (without it, the first argument is a DEVICE-ID the running node is connected to).") var peer: String?
    @Argument(help: "[DEVICE-ID] then zones to compare (default: every zone of --database).") var arguments: [String] = []
    @Option(help: "Give up after this many seconds.") var timeout: Double = 120

    func validate() throws {
        if timeout <= 0 { throw ValidationError("--timeout must be positive") }
        if peer == nil, arguments.isEmpty { throw ValidationError("name a device: `lattice diff DEVICE-ID` (through the running node) or `lattice diff --peer HOST:PORT`") }
    }

    func run() throws {
        let container = try options.openContainer()
        let scope = options.scope
        let database = container.database(with: scope)
        let zones = peer == nil ? Array(arguments.dropFirst()) : arguments
        let keys = try zones.map { name -> ZoneKey in
            let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: name)) }
            return try library { try database.storedZoneKey(zoneID) }
        }
        guard let peer else {
            let device = arguments[0]
            let outcome = try library { try container.compareThroughRunningNode(with: device, zones: keys.isEmpty ? nil : keys, scope: scope, timeout: .milliseconds(Int64(self.timeout * 1000))) }
            return try finish(outcome, keys: keys, database: database, scope: scope, peer: device)
        }
        let address = try parsePeers([peer])
        let logger = LatticeLogging.standardError(level: options.logLevel)
        var configuration = SyncNode.Configuration()
        configuration.peers = address
        configuration.publicFrom = try options.publicSyncPolicy()
        configuration.comparesOnly = true
        configuration.reconnect = false
        configuration.publishesStatus = false
        let node = SyncNode(container: container, configuration: configuration, logger: logger)
        let result = LockedBox<Result<ZoneComparison, CLIError>?>(nil)
        let timeout = timeout
        let ourID = container.deviceID
        try runBlocking {
            try await node.start()
            let watchdog = Task {
                try await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                result.value = result.value ?? .failure(CLIError(.unavailable, code: "NETWORK_FAILURE", "the comparison did not finish within \(Int(timeout)) s"))
                await node.stop()
            }
            for await event in node.events {
                switch event {
                case .caughtUp(let peer):
                    // The session runs (nothing streams in a comparison): compare now.
                    do {
                        result.value = .success(try await node.compare(with: peer, zones: keys.isEmpty ? nil : keys, scope: keys.isEmpty ? scope : nil))
                    } catch {
                        result.value = .failure(CLIError(.unavailable, code: "NETWORK_FAILURE", "the comparison with \(peer) failed: \(error)"))
                    }
                case .publicOnly(let peer) where scope != .public:
                    result.value = .failure(CLIError(.permission, code: "PERMISSION_FAILURE", "\(peer) does not trust this device (it syncs the public database only with it); on it, run `lattice trust \(ourID)`"))
                case .unreachable(let address, let reason):
                    result.value = .failure(CLIError(.unavailable, code: "NETWORK_FAILURE", "cannot reach \(address): \(reason)"))
                case .refused(let peer, let address):
                    result.value = .failure(CLIError(.permission, code: "PERMISSION_FAILURE", "device \(peer) at \(address) is not trusted here; check its ID and run `lattice trust \(peer)`"))
                case .disconnected(let peer, let address, let reason):
                    if reason?.cause == .notTrustedByPeer {
                        result.value = .failure(CLIError(.permission, code: "PERMISSION_FAILURE", "\(peer ?? address) does not trust this device; on it, run `lattice trust \(ourID)`"))
                    } else {
                        result.value = result.value ?? .failure(CLIError(.unavailable, code: "NETWORK_FAILURE", "the connection to \(address) ended before the comparison\(reason.map { ": \($0)" } ?? "")"))
                    }
                default: break
                }
                if result.value != nil { break }
            }
            watchdog.cancel()
            await node.stop()
        }
        switch result.value {
        case .failure(let error): throw error
        case .none: throw CLIError(.unavailable, code: "NETWORK_FAILURE", "the comparison with \(peer) did not run")
        case .success(let outcome): try finish(outcome, keys: keys, database: database, scope: scope, peer: peer)
        }
    }

    private func finish(_ outcome: ZoneComparison, keys: [ZoneKey], database: Database, scope: DatabaseScope, peer: String) throws {
        // A zone named that neither side holds is a mistake, not a zone in sync.
        let here = Set(try library { try database.allRecordZones() }.map(\.zoneID))
        if let unshared = keys.first(where: { !outcome.zones.contains($0) }) {
            throw CLIError(.permission, code: "PERMISSION_FAILURE", "zone \(unshared.zoneID.zoneName) of the \(scope) database is not synced between this device and \(peer), so it cannot be compared")
        }
        if let missing = keys.first(where: { key in !here.contains(key.zoneID) && !outcome.differences.contains { $0.zone == key } }) {
            throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "neither this device nor \(peer) holds zone \(missing.zoneID.zoneName) in the \(scope) database")
        }
        try report(outcome, database: database)
        if !outcome.differences.isEmpty { throw ExitCode(1) }
    }

    private func report(_ outcome: ZoneComparison, database: Database) throws {
        let rows = outcome.differences.map { difference -> DiffOutput.Difference in
            let zone = difference.zone.zoneID.zoneName
            guard let name = difference.recordName else {
                return DiffOutput.Difference(zone: zone, recordName: nil, here: difference.here == nil ? "missing" : "zone state", there: difference.there == nil ? "missing" : "another zone state")
            }
            var here = "missing"
            if difference.here != nil {
                let id = Record.ID(recordName: name, zoneID: Zone.ID(zoneName: difference.zone.zoneID.zoneName, ownerName: difference.zone.zoneID.ownerName))
                here = (try? database.record(for: id)) != nil ? "live" : "deleted"
            }
            let there = difference.there == nil ? "missing" : (difference.here == nil ? "present" : "another state")
            return DiffOutput.Difference(zone: zone, recordName: name, here: here, there: there)
        }
        let output = DiffOutput(inSync: rows.isEmpty, differences: rows, roundTrips: outcome.rounds, bytesSent: outcome.bytesSent, bytesReceived: outcome.bytesReceived)
        Output.emit(output, json: options.json)
        if !options.json { Output.standardError(output.summary) }
    }
}

/// What `lattice diff` prints: `in sync`, or each record held differently.
struct DiffOutput: CommandOutput {
    struct Difference: Encodable {
        var zone: String
        /// Nil for the zone's own state (deleted or re-created differently).
        var recordName: String?
        /// live, deleted or missing; for the zone: zone state or missing.
        var here: String
        /// present, another state or missing.
        var there: String
    }
    var inSync: Bool
    var differences: [Difference]
    var roundTrips: Int
    var bytesSent: Int
    var bytesReceived: Int

    var text: String {
        guard !differences.isEmpty else { return "in sync" }
        return differences.map { row in
            let path = row.recordName.map { "\(row.zone)/\($0)" } ?? "\(row.zone) (the zone itself)"
            return "\(path)\there: \(row.here)\tthere: \(row.there)"
        }.joined(separator: "\n")
    }

    /// What people are told on standard error: how many differences, and what finding them took.
    var summary: String {
        let count = differences.isEmpty ? "in sync" : "\(differences.count) difference\(differences.count == 1 ? "" : "s")"
        return "\(count): \(roundTrips) round trip\(roundTrips == 1 ? "" : "s"), \(bytesSent) bytes sent, \(bytesReceived) received"
    }
}
