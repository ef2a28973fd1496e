import ArgumentParser
import Foundation
import Lattice

struct AssetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "asset", abstract: "Fetch and list asset content: it moves between devices by hash, in verified chunks.",
        discussion: """
            A record's asset field syncs with the record; its content comes after: assets up to 256 KiB (and every asset of an \
            eager zone: `lattice zone assets ZONE eager`) as soon as the record arrives, larger ones when asked for. \
            The public database's content, which any device on the LAN can reference, comes only when asked for \
            (or once its zone is made eager on this device). \
            Content comes from any connected peer that holds it and may read the record's zone, 256 KiB at a time, each 16 KiB \
            checked against the asset's hash before it is written; a cut transfer resumes where it stopped.
            Example: lattice asset fetch Movies/toy-story poster
                     lattice asset list --missing
            """,
        subcommands: [Fetch.self, List.self])

    struct Fetch: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "fetch",
            abstract: "Fetch a record's asset content (every asset field without FIELD), then print where it is.",
            discussion: """
                The node running on this store (`lattice serve`) fetches it; without one, --peer HOST:PORT names a device to fetch it from.
                Exit codes: 69 it did not arrive within --timeout (no connected peer holds it, or may send it here); 66 no such record or field.
                Example: lattice asset fetch Movies/toy-story poster --timeout 120
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Argument(help: "The asset field (default: every asset field of the record).") var field: String?
        @Option(help: "A device to fetch from when no node runs on this store, HOST:PORT; repeat for more.") var peer: [String] = []
        @Option(help: "Give up after this many seconds.") var timeout: Double = 600

        func validate() throws {
            if timeout <= 0 { throw ValidationError("--timeout must be positive") }
        }

        func run() throws {
            let container = try options.openContainer()
            let database = container.database(with: options.scope)
            let target = try RecordPath(parsing: path).resolved(in: database)
            let record = try library { try database.record(for: target.recordID) }
            let assets = try AssetCommand.assets(of: record, field: field, path: path)
            try AssetCommand.fetch(assets.map(\.asset), container: container, options: options, peers: try parsePeers(peer), timeout: timeout)
            Output.emit(AssetsFetched(assets: assets.map { AssetsOutput.Asset(field: $0.field, asset: $0.asset, container: container, records: nil) }), json: options.json)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list",
            abstract: "List the assets records here reference, and whether their content is here.",
            discussion: "Example: lattice asset list --missing --json")
        @OptionGroup var options: GlobalOptions
        @Flag(help: "Only assets whose content is not here yet.") var missing = false

        func run() throws {
            let container = try options.openContainer()
            let entries = try library { try container.assetEntries(missingOnly: missing) }
            let fetching = NodeStatus.read(store: container.directory)?.assets ?? []
            Output.emit(AssetsOutput(assets: entries.map { entry in
                var asset = AssetsOutput.Asset(field: nil, asset: entry.asset, container: container, records: entry.records.map { "\($0.zone.zoneID)/\($0.name)" })
                asset.bytesDone = fetching.first { $0.hash == entry.asset.hexHash }?.bytesDone
                asset.wanted = entry.isWanted
                asset.heldInStore = entry.isLocal
                asset.recordsByZoneName = entry.records.map { "\($0.zone.zoneID.zoneName)/\($0.name)" }
                return asset
            }, missingOnly: missing), json: options.json)
        }
    }

    /// The record's assets, of `field` or of every field.
    static func assets(of record: Record, field: String?, path: String) throws -> [(field: String, asset: AssetReference)] {
        var found: [(field: String, asset: AssetReference)] = []
        for name in record.allKeys().sorted() where field == nil || name == field {
            switch record[name] {
            case .asset(let asset)?: found.append((name, asset))
            case .list(let items)?: for case .asset(let asset) in items { found.append((name, asset)) }
            default: break
            }
        }
        if found.isEmpty {
            throw CLIError(.notFound, code: "UNKNOWN_ITEM", field.map { "\(path) has no asset field \($0)" } ?? "\(path) has no asset field")
        }
        return found
    }

    /// Fetches `assets` through the node running on the store, or a node of
    /// this process dialing `peers`; returns once all are here.
    static func fetch(_ assets: [AssetReference], container: Container, options: GlobalOptions, peers: [PeerAddress], timeout: Double) throws {
        let missing = assets.filter { container.fileURL(for: $0) == nil }
        guard !missing.isEmpty else { return }
        let running = NodeStatus.nodeRuns(store: container.directory)
        guard running || !peers.isEmpty else {
            throw CLIError(.unavailable, code: "NETWORK_FAILURE",
                "the content of \(missing.count) asset(s) is not here, and no node runs on this store to fetch it: start `lattice serve`, or give --peer HOST:PORT")
        }
        let progress = LockedBox(ProgressLine(enabled: !options.json && Output.standardErrorIsTerminal))
        let report: @Sendable (Int64, Int64) -> Void = { done, total in progress.value.show("assets: \(done / 1024)/\(total / 1024) KiB") }
        if running {
            try library { try container.requestAssets(missing) }
            let deadline = Date().addingTimeInterval(timeout)
            let total = missing.reduce(Int64(0)) { $0 + $1.size }
            while true {
                let left = missing.filter { container.fileURL(for: $0) == nil }
                let fetching = NodeStatus.read(store: container.directory)?.assets ?? []
                let done = total - left.reduce(Int64(0)) { $0 + $1.size } + left.reduce(Int64(0)) { sum, asset in
                    sum + (fetching.first { $0.hash == asset.hexHash }?.bytesDone ?? 0)
                }
                report(done, total)
                if left.isEmpty { break }
                guard Date() < deadline else {
                    progress.value.finish()
                    let problem = fetching.compactMap(\.problem).first.map { " (\($0))" } ?? ""
                    throw CLIError(.unavailable, code: "NETWORK_FAILURE",
                        "\(left.count) asset(s) did not arrive within \(timeout) s: no connected peer sent them\(problem); `lattice status` shows the transfer")
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            progress.value.finish()
            return
        }
        var configuration = SyncNode.Configuration()
        configuration.peers = peers
        configuration.publicFrom = try options.publicSyncPolicy()
        configuration.publishesStatus = false
        let node = SyncNode(container: container, configuration: configuration, logger: LatticeLogging.standardError(level: options.logLevel))
        let seconds = timeout
        try runBlocking {
            try await node.start()
            do {
                try await node.fetchAssets(missing, timeout: .milliseconds(Int64(seconds * 1000)), progress: report)
            } catch {
                await node.stop()
                throw error
            }
            await node.stop()
        }
        progress.value.finish()
    }
}

/// What `asset list` prints: the assets records here reference, and where their content stands.
struct AssetsOutput: CommandOutput {
    struct Asset: Encodable {
        var field: String?
        var fileChecksum: String
        var size: Int64
        var local: Bool
        var downloadURL: String?
        var records: [String]?
        var wanted: Bool?
        var bytesDone: Int64?
        /// People are shown the content's file, the records by zone name, and
        /// whether the store has the content (`local`: whether its file is there).
        var path: String?
        var recordsByZoneName: [String] = []
        var heldInStore = false

        enum CodingKeys: String, CodingKey { case field, fileChecksum, size, local, downloadURL, records, wanted, bytesDone }

        init(field: String?, asset: AssetReference, container: Container, records: [String]?) {
            self.field = field
            fileChecksum = asset.hexHash
            size = asset.size
            let url = container.fileURL(for: asset)
            local = url != nil
            downloadURL = url?.absoluteString
            path = url?.path
            self.records = records
        }
    }

    var assets: [Asset]
    /// With `--missing`: people are told that none is missing rather than that none is referenced.
    var missingOnly = false

    enum CodingKeys: String, CodingKey { case assets }

    var text: String {
        guard !assets.isEmpty else { return missingOnly ? "no asset content is missing" : "no record here references an asset" }
        return assets.map { asset in
            let state: String
            if asset.heldInStore {
                state = "here"
            } else if let bytesDone = asset.bytesDone {
                state = "fetching \(bytesDone)/\(asset.size) bytes"
            } else {
                state = asset.wanted == true ? "asked for" : "not here"
            }
            return "\(asset.fileChecksum.prefix(16))…  \(asset.size) bytes  \(state)  \(asset.recordsByZoneName.joined(separator: ", "))"
        }.joined(separator: "\n")
    }
}

/// What `asset fetch` prints: where each asset's content is now.
struct AssetsFetched: CommandOutput {
    var assets: [AssetsOutput.Asset]

    var text: String {
        assets.map { "\($0.field ?? "asset"): \($0.path ?? "not here") (\($0.size) bytes)" }.joined(separator: "\n")
    }
}
