import Foundation
import ArgumentParser
import Lattice

struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "conflicts", abstract: "Show (or clear) the losing values of concurrent writes to a record.",
        discussion: "Example: lattice conflicts Movies/toy-story --json")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "ZONE/NAME") var path: String
    @Flag(help: "Forget them: the conflicts are resolved.") var clear = false

    func run() throws {
        let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
        let target = try RecordPath(parsing: path).resolved(in: database)
        let conflicts = try library { try database.conflicts(for: target.recordID) }
        if conflicts.isEmpty {
            // No log for a record that is not there: say so (exit 66) rather than "no conflicts".
            _ = try library { try database.record(for: target.recordID) }
        }
        if clear { try library { try database.clearConflicts(for: target.recordID) } }
        if options.json {
            Output.json(ConflictsOutput(recordName: target.recordName, zoneID: WebServicesZoneID(target.zoneID), cleared: clear,
                                        conflicts: conflicts.map(ConflictsOutput.Entry.init)))
        } else {
            if conflicts.isEmpty { Output.line("no conflicts on \(path)") }
            for conflict in conflicts {
                Output.line("\(conflict.field): kept \(conflict.winningValue.map(FieldDisplay.text) ?? "(removed)"), lost \(conflict.losingValue.map(FieldDisplay.text) ?? "(removed)") written by \(conflict.losingStamp.replica.description.prefix(8)) at \(ISO8601Milliseconds.format(Int64(conflict.losingStamp.time.milliseconds)))")
            }
            if clear { Output.line("cleared \(conflicts.count) conflicts") }
        }
    }
}

/// What `conflicts --json` prints: each losing write and the write that won.
struct ConflictsOutput: Encodable {
    struct Entry: Encodable {
        var fieldName: String
        @Nullable var losingValue: WebServicesField?
        @Nullable var winningValue: WebServicesField?
        var losingWrite: WebServicesTimestamp
        var winningWrite: WebServicesTimestamp

        init(_ conflict: FieldConflict) {
            fieldName = conflict.field
            losingValue = conflict.losingValue.map { WebServicesField($0) }
            winningValue = conflict.winningValue.map { WebServicesField($0) }
            losingWrite = WebServicesTimestamp(timestamp: Int64(conflict.losingStamp.time.milliseconds), deviceID: conflict.losingStamp.replica.description)
            winningWrite = WebServicesTimestamp(timestamp: Int64(conflict.winningStamp.time.milliseconds), deviceID: conflict.winningStamp.replica.description)
        }
    }

    var recordName: String
    var zoneID: WebServicesZoneID
    var cleared: Bool
    var conflicts: [Entry]
}
