import ArgumentParser
import Foundation
import Lattice

/// The `lattice` command: a thin shell over the library.
public struct LatticeCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "lattice",
        abstract: "CloudKit's data model, replicated between devices without a server.",
        discussion: """
            The store comes from --store DIR, else $LATTICE_STORE, else $XDG_DATA_HOME/lattice/<container>.
            Every command takes --store, --container, --database, --json and --log-level, before or after its name.

            \(ExitStatus.helpText)
            """,
        version: LatticeCommand.version,
        subcommands: [
            InitCommand.self, IDCommand.self, ZoneCommand.self, RecordCommand.self, QueryCommand.self,
            ChangesCommand.self, WatchCommand.self, ConflictsCommand.self, SchemaCommand.self,
            StatusCommand.self, VectorCommand.self, BundleCommand.self,
            BatchCommand.self, ServeCommand.self, SyncCommand.self, PeersCommand.self, TrustCommand.self, UntrustCommand.self, PairCommand.self, AccountCommand.self, ShareCommand.self, AssetCommand.self, DiffCommand.self, DoctorCommand.self, HTTPCommand.self, HistoryCommand.self,
        ]
    )

    public init() {}

    /// What `lattice --version` prints.
    public static let version = "0.24.0"

    /// Runs the command line, mapping every failure to one line (or a JSON error) and its exit code.
    public static func main(_ arguments: [String]? = nil) {
        let arguments = GlobalOptions.placedAfterSubcommand(arguments ?? Array(CommandLine.arguments.dropFirst()))
        let json = arguments.contains("--json")
        do {
            if let quick = QuickCommand(arguments) {
                try quick.run()
            } else {
                var command = try parseAsRoot(arguments)
                try command.run()
            }
            OpenStores.finish()
        } catch let error as CLIError {
            fail(error, json: json)
        } catch let error as PredicateSyntaxError {
            fail(CLIError.usage(error.description), json: json)
        } catch let code as ExitCode {
            // A result, not a failure (`diff` exits 1 when it finds differences): what it printed stands.
            OpenStores.finish()
            Foundation.exit(code.rawValue)
        } catch {
            // Argument-parser errors (usage 64, help 0) keep its own messages and codes.
            if json, exitCode(for: error) != .success {
                fail(CLIError(.usage, code: "BAD_REQUEST", fullMessage(for: error)), json: true)
            }
            exit(withError: error)
        }
    }

    static func fail(_ error: CLIError, json: Bool) -> Never {
        if json {
            Output.json(ErrorOutput(error: .init(serverErrorCode: error.code, reason: error.message, exitCode: Int(error.status.rawValue))))
        } else {
            Output.standardError("lattice: \(error.message)")
        }
        Foundation.exit(error.status.rawValue)
    }
}
