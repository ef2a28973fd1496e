import ArgumentParser
import Foundation
@_spi(CommandLine) import Lattice
import Synchronization

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

    /// The global options a user wrote before the subcommand
    /// (`lattice --database shared zone list`), moved where the subcommand
    /// reads them: after its other arguments, before a `--` if there is one.
    static func placedAfterSubcommand(_ arguments: [String]) -> [String] {
        let withValue: Set = ["--store", "--container", "--database", "--log-level"]
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if argument == "--json" {
                leading.append(argument)
                index += 1
            } else if withValue.contains(name) {
                let takesNext = !argument.contains("=") && index + 1 < arguments.count
                leading += takesNext ? [argument, arguments[index + 1]] : [argument]
                index += takesNext ? 2 : 1
            } else {
                break
            }
        }
        var rest = Array(arguments[index...])
        guard !leading.isEmpty, !rest.isEmpty else { return arguments }
        rest.insert(contentsOf: leading, at: rest.firstIndex(of: "--") ?? rest.endIndex)
        return rest
    }

    public mutating func validate() throws {
        guard DatabaseScope(name: database) != nil else { throw ValidationError("--database must be private, shared or public, not \"\(database)\"") }
        guard StoreOptions.logLevels.contains(logLevel.lowercased()) else {
            throw ValidationError("--log-level must be trace, debug, info, warning or error, not \"\(logLevel)\"")
        }
    }

    /// The options' values, for code that runs without the parser.
    var values: StoreOptions { StoreOptions(store: store, container: container, database: database, json: json, logLevel: logLevel) }

    var storeDirectory: URL { values.storeDirectory }
    var scope: DatabaseScope { values.scope }

    /// Opens the existing store; a missing one is "not found" with the fix in the message.
    /// `forOneCommand`: the command reads and writes and exits (no node, no waiting), so
    /// its reads may share the writer's connection.
    func openContainer(forOneCommand: Bool = false) throws -> Container { try values.openContainer(forOneCommand: forOneCommand) }

    func debug(_ message: @autoclosure () -> String) { values.debug(message()) }
}

/// The values of the options every command takes, checked (`GlobalOptions.validate`).
struct StoreOptions: Equatable {
    var store: String?
    var container = "default"
    var database = "private"
    var json = false
    var logLevel = "warning"

    static let logLevels: Set = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    var storeDirectory: URL {
        if let store { return URL(fileURLWithPath: store) }
        if let environment = ProcessInfo.processInfo.environment["LATTICE_STORE"], !environment.isEmpty {
            return URL(fileURLWithPath: environment)
        }
        return Container.defaultDirectory(for: container)
    }

    var scope: DatabaseScope { DatabaseScope(name: database) ?? .private }

    func openContainer(forOneCommand: Bool = false) throws -> Container {
        let directory = storeDirectory
        debug("opening store \(directory.path) (container \(container), \(scope) database)")
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("lattice.sqlite").path) else {
            if FileManager.default.fileExists(atPath: directory.path) {
                throw CLIError(.notFound, code: "BAD_CONTAINER", "\(directory.path) is not a Lattice store; run `lattice init --store \(directory.path)` on an empty directory")
            }
            throw CLIError(.notFound, code: "BAD_CONTAINER", "no store at \(directory.path); run `lattice init` first (or pass --store DIR)")
        }
        let opened = try library { try Container(identifier: container, directory: directory, create: false, forOneCommand: forOneCommand) }
        OpenStores.keep(opened)
        return opened
    }

    func debug(_ message: @autoclosure () -> String) {
        if ["trace", "debug"].contains(logLevel.lowercased()) { Output.standardError("debug: " + message()) }
    }
}

/// The stores a command opened, left open until the process exits. Closing
/// a store's last connection makes SQLite move the write-ahead log into the
/// database, sync it and delete the log, which the next command creates
/// again: a cost each short command would pay (about a millisecond) for
/// nothing, since every commit is already durable in the log, and the next
/// writer's automatic checkpoint moves it.
enum OpenStores {
    private static let kept = Mutex<[Container]>([])

    static func keep(_ container: Container) { kept.withLock { $0.append(container) } }

    /// As the command ends well: a store whose log grew large has it emptied
    /// (the next command would read it whole); a failure here is the next
    /// writer's to retry, not this command's.
    static func finish() {
        for container in kept.withLock({ $0 }) { try? container.emptyLargeLog() }
    }
}

/// Runs library code, turning its errors into CLI errors.
@discardableResult
func library<T>(_ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as LatticeError {
        throw CLIError(error)
    }
}
