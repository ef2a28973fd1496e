import ArgumentParser
import Foundation
import Lattice

struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bundle", abstract: "Change sets as files: sync by USB stick.",
        subcommands: [Create.self, Apply.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Write what the other side lacks to a file.",
            discussion: "Example: lattice bundle create -o for-phone.ltb --since phone-vector.json Movies")
        @OptionGroup var options: GlobalOptions
        @Option(name: .shortAndLong, help: "Bundle file to write.") var output: String
        @Option(help: "The other side's `lattice vector --json` file (default: everything).") var since: String?
        @Flag(name: .customLong("with-assets"), help: "Carry the content of the assets the zones' records reference (that is here).") var withAssets = false
        @Argument(help: "Zones to include (default: all).") var zones: [String] = []

        func run() throws {
            let container = try options.openContainer()
            let vectors = try since.map { path in try bundleFiles { try VersionVectorFile.read(path) } } ?? [:]
            var keys = try library { try container.allZoneKeys() }
            if !zones.isEmpty {
                keys = try zones.map { name in
                    guard let key = keys.first(where: { $0.zoneID.zoneName == name && $0.scope == options.scope }) else {
                        throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "zone \(name) does not exist in the \(options.scope) database")
                    }
                    return key
                }
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory), isDirectory.boolValue {
                throw CLIError.usage("-o \(output) is a directory; give the bundle a file name, such as \(output)/out.ltb")
            }
            let written = try bundleFiles { try container.writeBundle(to: output, zones: keys, since: vectors, withAssets: withAssets) }
            Output.emit(BundleCreated(file: output, zones: written.zones, records: written.records, assets: written.assets, bytes: written.bytes, withAssets: withAssets),
                        json: options.json)
        }
    }

    struct Apply: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "apply", abstract: "Apply a bundle, all or nothing.",
            discussion: "Example: lattice bundle apply from-laptop.ltb")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Bundle file.") var file: String

        func run() throws {
            let container = try options.openContainer()
            let summary = try bundleFiles { try container.applyBundle(at: file) }
            Output.emit(BundleApplied(file: file, recordsReceived: summary.recordsReceived, recordsChanged: summary.recordsChanged,
                                      conflicts: summary.conflicts, recordsDeferred: summary.recordsDeferred), json: options.json)
        }
    }
}

/// What `bundle create` prints.
struct BundleCreated: CommandOutput {
    var file: String
    var zones: Int
    var records: Int
    var assets: Int
    var bytes: Int
    /// People are told the assets only when they asked for them.
    var withAssets: Bool

    enum CodingKeys: String, CodingKey { case file, zones, records, assets, bytes }

    var text: String {
        "wrote \(Output.count(records, "record")) of \(Output.count(zones, "zone"))\(withAssets ? " and \(Output.count(assets, "asset"))" : "") to \(file) (\(bytes) bytes)"
    }
}

/// What `bundle apply` prints.
struct BundleApplied: CommandOutput {
    var file: String
    var recordsReceived: Int
    var recordsChanged: Int
    var conflicts: Int
    var recordsDeferred: Int

    var text: String {
        "applied \(file): \(Output.count(recordsChanged, "record")) changed of \(recordsReceived) received, \(Output.count(conflicts, "conflict"))"
            + (recordsDeferred > 0 ? ", \(recordsDeferred) deferred (their clock is too far ahead)" : "")
    }
}

/// Bundle and vector files' errors as the CLI's: a file that is not what it
/// should be is bad input (65), one that is not there is not found (66), one
/// that cannot be read or written input/output (74); the store's own errors as everywhere.
private func bundleFiles<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as LatticeError {
        switch error.code {
        case .invalidArguments: throw CLIError.corrupt(error.message)
        case .unknownItem: throw CLIError(.notFound, code: "NOT_FOUND", error.message)
        case .internalError: throw CLIError.io(error.message)
        default: throw CLIError(error)
        }
    }
}
