import ArgumentParser
import Foundation
import Lattice

struct UntrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "untrust", abstract: "Stop trusting a device trusted by hand: a running node ends its sessions at once and refuses it from then on.", discussion: "A member of the account is removed from every device with `lattice account remove DEVICE-ID`. Example: lattice untrust ABCDEFG-...")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's ID.") var deviceID: String

    func run() throws {
        let container = try options.openContainer()
        try asUsage { try container.untrust(deviceID: deviceID) }
        Output.emit(Untrusted(untrusted: deviceID), json: options.json)
    }
}

/// What `untrust` prints.
struct Untrusted: CommandOutput {
    var untrusted: String
    var text: String { "untrusted \(untrusted)" }
}
