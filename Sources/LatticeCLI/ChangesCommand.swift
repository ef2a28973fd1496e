import ArgumentParser
import Foundation
import Lattice

struct ChangesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "changes", abstract: "Records changed and deleted in a zone since a token.",
        discussion: "Example: lattice changes Movies --since $(cat token) --json")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Zone.") var zone: String
    @Option(parsing: .unconditional, help: "A change token printed by an earlier call (syncToken).") var since: String?
    @Option(help: "At most this many records per call.") var limit: Int = 10_000

    func run() throws {
        let container = try options.openContainer(forOneCommand: true)
        let database = container.database(with: options.scope)
        let token = try since.map { text in try library { try ChangeToken(stringValue: text) } }
        let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
        let changes = try library { try database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: limit) }
        let deleted = changes.deletions.map { WebServicesRecordEntry.deleted(WebServicesDeletedRecord(recordName: $0.recordID.recordName, recordType: $0.recordType)) }
        Output.emit(ChangesOutput(
            records: changes.modifications.map { .record(WebServicesRecord($0, container: container)) } + deleted,
            syncToken: changes.changeToken.description, moreComing: changes.moreComing, zoneID: WebServicesZoneID(zoneID), zoneAsNamed: zone), json: options.json)
    }
}

/// What `changes` prints; its JSON is CloudKit Web Services' zone changes response.
struct ChangesOutput: CommandOutput {
    var records: [WebServicesRecordEntry]
    var syncToken: String
    var moreComing: Bool
    var zoneID: WebServicesZoneID
    /// The zone as the command line named it, which people are shown.
    var zoneAsNamed: String

    enum CodingKeys: String, CodingKey { case records, syncToken, moreComing, zoneID }

    /// A line per change, the changed records first, then the token.
    var text: String {
        let lines = records.map { entry in
            switch entry {
            case .record(let record): return "changed \(zoneAsNamed)/\(record.recordName) \(record.recordType) tag=\(record.recordChangeTag ?? "-")"
            case .deleted(let deletion): return "deleted \(zoneAsNamed)/\(deletion.recordName) \(deletion.recordType ?? "-")"
            }
        }
        return (lines + ["token \(syncToken)" + (moreComing ? " (more coming)" : "")]).joined(separator: "\n")
    }
}
