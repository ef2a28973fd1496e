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

/// `{"zones": [...]}`: what zone commands print.
struct ZonesOutput: Encodable {
    var zones: [WebServicesZone]
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
