import ArgumentParser
import Foundation
import Lattice

struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust", abstract: "Trust a device by hand, on this device alone: once it trusts this one too, both sync the private database.",
        discussion: "For one-off cases: `lattice pair` adds a device to the account, which every device of it then trusts. Compare the ID with what `lattice id` prints on the other device. Example: lattice trust ABCDEFG-... --name laptop")
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
        commandName: "untrust", abstract: "Stop trusting a device trusted by hand: a running node ends its sessions at once and refuses it from then on.", discussion: "A member of the account is removed from every device with `lattice account remove DEVICE-ID`. Example: lattice untrust ABCDEFG-...")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's ID.") var deviceID: String

    func run() throws {
        let container = try options.openContainer()
        try asUsage { try container.untrust(deviceID: deviceID) }
        if options.json { Output.json(["untrusted": deviceID]) } else { Output.line("untrusted \(deviceID)") }
    }
}

/// A malformed device ID or name is a usage error (64), as other malformed arguments.
func asUsage(_ body: () throws -> Void) throws {
    do { try library(body) } catch let error as CLIError where error.status == .corruptInput {
        throw CLIError.usage(error.message)
    }
}
