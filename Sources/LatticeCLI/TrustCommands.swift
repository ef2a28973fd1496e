import ArgumentParser
import Foundation
import Lattice

struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust", abstract: "Trust a device: once it trusts this one too, both sync the private database.",
        discussion: "Compare the ID with what `lattice id` prints on the other device. Example: lattice trust ABCDEFG-... --name laptop")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The other device's ID, as `lattice id` or `lattice peers` prints it.") var deviceID: String
    @Option(help: "A name for the device, shown by `lattice peers`.") var name: String?

    func run() throws {
        let container = try options.openContainer()
        try asUsage { try container.trust(deviceID: deviceID, name: name) }
        if options.json { Output.json(["trusted": deviceID]) } else { Output.line("trusted \(deviceID)\(name.map { " (\($0))" } ?? "")") }
    }
}

struct UntrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "untrust", abstract: "Stop trusting a device: a running node ends its sessions at once and refuses it from then on.", discussion: "Example: lattice untrust ABCDEFG-...")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's ID.") var deviceID: String

    func run() throws {
        let container = try options.openContainer()
        try asUsage { try container.untrust(deviceID: deviceID) }
        if options.json { Output.json(["untrusted": deviceID]) } else { Output.line("untrusted \(deviceID)") }
    }
}

struct PeersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers", abstract: "Devices this one knows: trusted ones and those seen connecting.",
        discussion: "Connection state and how far behind each side is come from the node running on this store (`lattice serve`), if any. Example: lattice peers")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let peers = try library { try container.peers() }
        let status = NodeStatus.read(store: container.directory)
        let live = Dictionary((status?.peers ?? []).map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
        if options.json {
            Output.json(["device": container.deviceID, "nodeRunning": status != nil, "peers": peers.map { peer -> [String: Any] in
                let now = live[peer.deviceID]
                return [
                    "deviceID": peer.deviceID, "name": peer.name ?? NSNull(), "trusted": peer.trusted,
                    "connected": now?.connected ?? false, "address": (now?.connected == true ? now?.address : nil) ?? peer.address ?? NSNull(),
                    "lastSeen": peer.lastSeen.map { Int64($0.timeIntervalSince1970 * 1000) } ?? NSNull(),
                    "recordsBehind": now.map { $0.recordsBehind } ?? NSNull(), "recordsPeerBehind": now.map { $0.recordsPeerBehind } ?? NSNull(),
                ]
            }])
            return
        }
        if peers.isEmpty {
            Output.line("no known devices; trust one with `lattice trust DEVICE-ID` (its `lattice id`)")
            return
        }
        if status == nil { Output.standardError("lattice: no node runs on this store, so connection state is unknown (start one with `lattice serve`)") }
        Output.line(["NAME", "DEVICE ID", "TRUSTED", "CONNECTED", "ADDRESS", "LAST SEEN", "BEHIND (us/them)"].joined(separator: "  "))
        let formatter = ISO8601DateFormatter()
        for peer in peers {
            let now = live[peer.deviceID]
            Output.line([
                peer.name ?? "-", peer.deviceID, peer.trusted ? "yes" : "no", now?.connected == true ? "yes" : "no",
                (now?.connected == true ? now?.address : nil) ?? peer.address ?? "-",
                peer.lastSeen.map { formatter.string(from: $0) } ?? "never",
                now.map { "\($0.recordsBehind)/\($0.recordsPeerBehind)" } ?? "-",
            ].joined(separator: "  "))
        }
    }
}

/// A malformed device ID or name is a usage error (64), as other malformed arguments.
func asUsage(_ body: () throws -> Void) throws {
    do { try library(body) } catch let error as CLIError where error.status == .corruptInput {
        throw CLIError.usage(error.message)
    }
}
