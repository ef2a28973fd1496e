import ArgumentParser
import Foundation
import Lattice

struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Stream changed and deleted records as JSON lines until interrupted.",
        discussion: "Sees commits of every process on the store within milliseconds.\nExample: lattice watch Movies --type Movie --where 'rating >= 4'")

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Zone (default _defaultZone).") var zone: String = Zone.ID.defaultZoneName
    @Option(name: .customLong("type"), help: "Only records of this type.") var recordType: String?
    @Option(name: .customLong("where"), help: "Only records matching this predicate (needs --type).") var predicate: String?

    func validate() throws {
        if predicate != nil && recordType == nil { throw ValidationError("--where needs --type") }
    }

    func run() throws {
        let container = try options.openContainer()
        let database = container.database(with: options.scope)
        let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
        let subscription: Subscription
        if let recordType {
            let parsed = try predicate.map(PredicateParser.parse) ?? .all
            subscription = .query(recordType: recordType, predicate: parsed, zoneID: zoneID)
        } else {
            subscription = .zone(zoneID)
        }
        let stream = try library { try database.notifications(for: subscription, interval: 0.01) }
        try runBlocking {
            do {
                for try await notification in stream {
                    Output.json(NotificationOutput(reason: notification.reason.rawValue, recordName: notification.recordID.recordName,
                                                   recordType: notification.recordType, zoneID: WebServicesZoneID(zoneID),
                                                   record: notification.record.map { WebServicesRecord($0, container: container) }))
                }
            } catch let error as LatticeError {
                throw CLIError(error)
            } catch let error as CLIError {
                throw error
            } catch {
                throw CLIError(.internalError, code: "INTERNAL_ERROR", "\(error)")
            }
        }
    }
}

/// One line of `watch`: a subscription's notification, with the record as saved (none for a deletion).
struct NotificationOutput: Encodable {
    var reason: String
    var recordName: String
    var recordType: String
    var zoneID: WebServicesZoneID
    var record: WebServicesRecord?
}
