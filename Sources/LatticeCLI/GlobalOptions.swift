import ArgumentParser
import Foundation
import Lattice

/// Options every command takes.
public struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Store directory (default: $LATTICE_STORE, else $XDG_DATA_HOME/lattice/<container>).", valueName: "DIR"))
    var store: String?

    @Option(name: .long, help: ArgumentHelp("Container identifier.", valueName: "ID"))
    var container: String = "default"

    @Option(name: .long, help: "Database: private, shared or public.")
    var database: String = "private"

    @Flag(name: .long, help: "Print CloudKit Web Services JSON instead of text.")
    var json = false

    @Option(name: .long, help: "Log level: trace, debug, info, warning, error.")
    var logLevel: String = "warning"

    public init() {}

    public mutating func validate() throws {
        guard DatabaseScope(name: database) != nil else { throw ValidationError("--database must be private, shared or public, not \"\(database)\"") }
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel.lowercased()) else {
            throw ValidationError("--log-level must be trace, debug, info, warning or error, not \"\(logLevel)\"")
        }
    }

    var storeDirectory: URL {
        if let store { return URL(fileURLWithPath: store) }
        if let environment = ProcessInfo.processInfo.environment["LATTICE_STORE"], !environment.isEmpty {
            return URL(fileURLWithPath: environment)
        }
        return Container.defaultDirectory(for: container)
    }

    var scope: DatabaseScope { DatabaseScope(name: database) ?? .private }

    /// Opens the existing store; a missing one is "not found" with the fix in the message.
    func openContainer() throws -> Container {
        let directory = storeDirectory
        debug("opening store \(directory.path) (container \(container), \(scope) database)")
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("lattice.sqlite").path) else {
            if FileManager.default.fileExists(atPath: directory.path) {
                throw CLIError(.notFound, code: "BAD_CONTAINER", "\(directory.path) is not a Lattice store; run `lattice init --store \(directory.path)` on an empty directory")
            }
            throw CLIError(.notFound, code: "BAD_CONTAINER", "no store at \(directory.path); run `lattice init` first (or pass --store DIR)")
        }
        return try library { try Container(identifier: container, directory: directory, create: false) }
    }

    func debug(_ message: @autoclosure () -> String) {
        if ["trace", "debug"].contains(logLevel.lowercased()) { Output.standardError("debug: " + message()) }
    }
}

/// Runs library code, turning its errors into CLI errors.
func library<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as LatticeError {
        throw CLIError(error)
    }
}
