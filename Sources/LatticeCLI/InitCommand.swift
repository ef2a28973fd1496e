import ArgumentParser
import Foundation
import Lattice

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "init", abstract: "Create a store (and this device's identity).",
        discussion: "Example: lattice init --store ~/movies --name laptop")

    @OptionGroup var options: GlobalOptions
    @Option(help: "A name for this device.") var name: String?

    func run() throws {
        let directory = options.storeDirectory
        let existed = FileManager.default.fileExists(atPath: directory.appendingPathComponent("lattice.sqlite").path)
        let container = try library { try Container(identifier: options.container, directory: directory, create: true) }
        if let name { try library { try container.setDeviceName(name) } }
        Output.emit(InitOutput(store: directory.path, deviceID: container.deviceID, replicaID: container.replicaID.description, created: !existed,
                               name: (try? container.deviceName()) ?? nil), json: options.json)
    }
}

/// What `init` prints.
struct InitOutput: CommandOutput {
    var store: String
    var deviceID: String
    var replicaID: String
    var created: Bool
    @Nullable var name: String?

    var text: String { (created ? "created store at \(store)" : "store already exists at \(store)") + "\ndevice ID \(deviceID)" }
}
