import Foundation
import Lattice

/// An optional that JSON shows as `null` rather than leaving out, so a script
/// finds every key of an output whether or not it has a value.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// `{"records": [...]}`: what record commands print.
struct RecordsOutput<Entry: Encodable>: Encodable {
    var records: [Entry]
}

/// `{"zones": [...]}`: what zone commands (and `share accept`) print.
struct ZonesOutput: CommandOutput {
    /// What became of the zones, which people are told; the JSON is CloudKit's zones alone.
    enum Event {
        case created
        /// With the zone as the command line named it.
        case deleted(asNamed: String)
        case listed
        case accepted
    }

    var zones: [WebServicesZone]
    var event: Event

    enum CodingKeys: String, CodingKey { case zones }

    var text: String {
        zones.map { zone in
            switch event {
            case .created: return "created zone \(zone.zoneID.zoneName)"
            case .deleted(let name): return "deleted zone \(name)"
            case .listed: return "\(zone.zoneID.displayName)\t\(Output.count(zone.recordCount ?? 0, "record"))"
            case .accepted: return "accepted \(zone.zoneID.displayName); it appears in the shared database (--database shared) once a device that holds it syncs with this one"
            }
        }.joined(separator: "\n")
    }
}

extension WebServicesZoneID {
    /// The zone as people read and type it (`Zone.ID.description`): NAME, or NAME:OWNER for another account's.
    var displayName: String { zoneID.description }
}

/// The error line of `--json`: CloudKit's dictionary and the exit code the command gives.
struct ErrorOutput: Encodable {
    struct Body: Encodable {
        var serverErrorCode: String
        var reason: String
        var exitCode: Int
    }

    var error: Body
}

extension WebServicesRecord {
    /// A record as the CLI prints it: an asset's `downloadURL` when its content is in the store.
    init(_ record: Record, container: Container?) {
        self.init(record, assetURL: { asset in container?.fileURL(for: asset) })
    }
}
