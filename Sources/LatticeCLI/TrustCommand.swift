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
        Output.emit(Trusted(trusted: deviceID, name: name), json: options.json)
    }
}

/// What `trust` prints (`{"trusted": ID}`).
struct Trusted: CommandOutput {
    var trusted: String
    /// Shown to people only: the JSON has always been the ID alone.
    var name: String?

    enum CodingKeys: String, CodingKey { case trusted }

    var text: String { "trusted \(trusted)\(name.map { " (\($0))" } ?? "")" }
}

/// A malformed device ID or name is a usage error (64), as other malformed arguments.
func asUsage(_ body: () throws -> Void) throws {
    do { try library(body) } catch let error as CLIError where error.status == .corruptInput {
        throw CLIError.usage(error.message)
    }
}
