import ArgumentParser
import Foundation
import Lattice

struct IDCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "id", abstract: "Print this device's ID (--json: its account's ID too, for `lattice share --with`).", discussion: "Example: lattice id")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer(forOneCommand: true)
        let name = try library { try container.deviceName() }
        Output.emit(IDOutput(deviceID: container.deviceID, replicaID: container.replicaID.description, accountID: try library { try container.accountID }, name: name),
                    json: options.json)
    }
}

/// What `id` prints (people get the device ID alone).
struct IDOutput: CommandOutput {
    var deviceID: String
    var replicaID: String
    /// The account's ID (its first device's): what `lattice share --with` takes.
    var accountID: String
    @Nullable var name: String?

    var text: String { deviceID }
}
