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
        if options.json {
            let deleted = changes.deletions.map { WebServicesRecordEntry.deleted(WebServicesDeletedRecord(recordName: $0.recordID.recordName, recordType: $0.recordType)) }
            Output.json(ChangesOutput(
                records: changes.modifications.map { .record(WebServicesRecord($0, container: container)) } + deleted,
                syncToken: changes.changeToken.description, moreComing: changes.moreComing, zoneID: WebServicesZoneID(zoneID)))
        } else {
            for record in changes.modifications { Output.line("changed \(zone)/\(record.recordID.recordName) \(record.recordType) tag=\(record.recordChangeTag ?? "-")") }
            for deletion in changes.deletions { Output.line("deleted \(zone)/\(deletion.recordID.recordName) \(deletion.recordType)") }
            Output.line("token \(changes.changeToken)" + (changes.moreComing ? " (more coming)" : ""))
        }
    }
}

/// What `changes --json` prints, as CloudKit Web Services' zone changes response.
struct ChangesOutput: Encodable {
    var records: [WebServicesRecordEntry]
    var syncToken: String
    var moreComing: Bool
    var zoneID: WebServicesZoneID
}
