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
        let target = try RecordPath(parsing: path)
        let database = try options.openContainer().database(with: options.scope)
        let conflicts = try library { try database.conflicts(for: target.recordID) }
        if conflicts.isEmpty {
            // No log for a record that is not there: say so (exit 66) rather than "no conflicts".
            _ = try library { try database.record(for: target.recordID) }
        }
        if clear { try library { try database.clearConflicts(for: target.recordID) } }
        if options.json {
            var entries: [[String: Any]] = []
            for conflict in conflicts {
                var entry: [String: Any] = ["fieldName": conflict.field]
                entry["losingValue"] = conflict.losingValue.map { WebServicesJSON.field($0) } ?? NSNull()
                entry["winningValue"] = conflict.winningValue.map { WebServicesJSON.field($0) } ?? NSNull()
                entry["losingWrite"] = ["timestamp": Int64(conflict.losingStamp.time.milliseconds), "deviceID": conflict.losingStamp.replica.description] as [String: Any]
                entry["winningWrite"] = ["timestamp": Int64(conflict.winningStamp.time.milliseconds), "deviceID": conflict.winningStamp.replica.description] as [String: Any]
                entries.append(entry)
            }
            Output.json(["recordName": target.recordName, "zoneID": WebServicesJSON.zone(target.zoneID), "cleared": clear, "conflicts": entries])
        } else {
            if conflicts.isEmpty { Output.line("no conflicts on \(path)") }
            for conflict in conflicts {
                Output.line("\(conflict.field): kept \(conflict.winningValue.map(WebServicesJSON.displayValue) ?? "(removed)"), lost \(conflict.losingValue.map(WebServicesJSON.displayValue) ?? "(removed)") written by \(conflict.losingStamp.replica.description.prefix(8)) at \(ISO8601.format(Int64(conflict.losingStamp.time.milliseconds)))")
            }
            if clear { Output.line("cleared \(conflicts.count) conflicts") }
        }
    }
}
