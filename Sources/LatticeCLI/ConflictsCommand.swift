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
        Output.emit(ConflictsOutput(recordName: target.recordName, zoneID: WebServicesZoneID(target.zoneID), cleared: clear,
                                    conflicts: conflicts.map(ConflictsOutput.Entry.init), pathAsNamed: path), json: options.json)
    }
}

/// What `conflicts` prints: each losing write and the write that won.
struct ConflictsOutput: CommandOutput {
    struct Entry: Encodable {
        var fieldName: String
        @Nullable var losingValue: WebServicesField?
        @Nullable var winningValue: WebServicesField?
        var losingWrite: WebServicesTimestamp
        var winningWrite: WebServicesTimestamp
        /// People are shown the values as `record get` shows them.
        var conflict: FieldConflict

        enum CodingKeys: String, CodingKey { case fieldName, losingValue, winningValue, losingWrite, winningWrite }

        init(_ conflict: FieldConflict) {
            self.conflict = conflict
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
    /// The record as the command line named it, which people are shown.
    var pathAsNamed: String

    enum CodingKeys: String, CodingKey { case recordName, zoneID, cleared, conflicts }

    var text: String {
        var lines = conflicts.isEmpty ? ["no conflicts on \(pathAsNamed)"] : []
        for conflict in conflicts.map(\.conflict) {
            lines.append("\(conflict.field): kept \(conflict.winningValue.map(FieldDisplay.text) ?? "(removed)"), lost \(conflict.losingValue.map(FieldDisplay.text) ?? "(removed)") written by \(conflict.losingStamp.replica.description.prefix(8)) at \(ISO8601Milliseconds.format(Int64(conflict.losingStamp.time.milliseconds)))")
        }
        if cleared { lines.append("cleared \(conflicts.count) conflicts") }
        return lines.joined(separator: "\n")
    }
}
