import Foundation
import Lattice

// The request dictionaries of CloudKit Web Services, as documented: every
// key optional that CloudKit makes optional, and no key it does not define.

extension KeyedDecodingContainer where Key == AnyKey {
    func optional<T: Decodable>(_ name: String, _ type: T.Type = T.self) throws -> T? { try decodeIfPresent(T.self, forKey: AnyKey(name)) }
    func required<T: Decodable>(_ name: String, _ type: T.Type = T.self) throws -> T { try decode(T.self, forKey: AnyKey(name)) }
}

/// A record as a request carries it: for a delete, its name (and tag) alone.
struct RecordInput: Decodable, Sendable, Equatable {
    static let keys = ["recordName", "recordType", "recordChangeTag", "fields", "zoneID", "created", "modified", "deleted", "parent", "share", "pluginFields"]
    var recordName: String?
    var recordType: String?
    var recordChangeTag: String?
    var fields: [String: WebServicesField]?
    var zoneID: WebServicesZoneID?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(Self.keys, in: "a record dictionary")
        let container = try decoder.container(keyedBy: AnyKey.self)
        recordName = try container.optional("recordName")
        recordType = try container.optional("recordType")
        recordChangeTag = try container.optional("recordChangeTag")
        fields = try container.optional("fields", [String: FieldInput].self)?.mapValues(\.field)
        zoneID = try container.optional("zoneID", ZoneIDInput.self)?.zoneID
    }

    init(recordName: String?, recordType: String?, recordChangeTag: String?, fields: [String: WebServicesField]?, zoneID: WebServicesZoneID?) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.zoneID = zoneID
    }
}

/// `{"value": …, "type"?}`.
struct FieldInput: Decodable, Sendable {
    var field: WebServicesField

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["value", "type"], in: "a field dictionary")
        let container = try decoder.container(keyedBy: AnyKey.self)
        field = WebServicesField(value: try container.required("value"), type: try container.optional("type"))
    }
}

/// `{"zoneName","ownerRecordName"?}` (or `ownerName`).
struct ZoneIDInput: Decodable, Sendable {
    var zoneID: WebServicesZoneID

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["zoneName", "ownerRecordName", "ownerName", "zoneType"], in: "a zone ID dictionary")
        zoneID = try WebServicesZoneID(from: decoder)
    }
}

/// `records/modify`.
struct ModifyRequest: Decodable, Sendable, Equatable {
    struct Operation: Decodable, Sendable, Equatable {
        var operationType: String
        var record: RecordInput
        var desiredKeys: [String]?

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["operationType", "record", "desiredKeys"], in: "an operation dictionary")
            let container = try decoder.container(keyedBy: AnyKey.self)
            operationType = try container.required("operationType")
            record = try container.required("record")
            desiredKeys = try container.optional("desiredKeys")
        }

        init(operationType: String, record: RecordInput, desiredKeys: [String]?) {
            self.operationType = operationType
            self.record = record
            self.desiredKeys = desiredKeys
        }
    }

    var operations: [Operation]
    var zoneID: WebServicesZoneID?
    var atomic: Bool?
    var desiredKeys: [String]?
    var numbersAsStrings: Bool?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["operations", "zoneID", "atomic", "desiredKeys", "numbersAsStrings"], in: "records/modify")
        let container = try decoder.container(keyedBy: AnyKey.self)
        operations = try container.required("operations")
        zoneID = try container.optional("zoneID", ZoneIDInput.self)?.zoneID
        atomic = try container.optional("atomic")
        desiredKeys = try container.optional("desiredKeys")
        numbersAsStrings = try container.optional("numbersAsStrings")
    }

    init(operations: [Operation], zoneID: WebServicesZoneID?, atomic: Bool?, desiredKeys: [String]?, numbersAsStrings: Bool?) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
        self.desiredKeys = desiredKeys
        self.numbersAsStrings = numbersAsStrings
    }
}

/// `records/query`.
struct QueryRequest: Decodable, Sendable {
    struct QueryShape: Decodable, Sendable {
        var recordType: String
        var filterBy: [WebServicesFilter]?
        var sortBy: [WebServicesSort]?

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["recordType", "filterBy", "sortBy"], in: "a query dictionary")
            let container = try decoder.container(keyedBy: AnyKey.self)
            recordType = try container.required("recordType")
            filterBy = try container.optional("filterBy", [FilterInput].self)?.map(\.filter)
            sortBy = try container.optional("sortBy", [SortInput].self)?.map(\.sort)
        }
    }

    var query: QueryShape
    var zoneID: WebServicesZoneID?
    var resultsLimit: Int?
    var continuationMarker: String?
    var desiredKeys: [String]?
    var zoneWide: Bool?
    var numbersAsStrings: Bool?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["query", "zoneID", "resultsLimit", "continuationMarker", "desiredKeys", "zoneWide", "numbersAsStrings"], in: "records/query")
        let container = try decoder.container(keyedBy: AnyKey.self)
        query = try container.required("query")
        zoneID = try container.optional("zoneID", ZoneIDInput.self)?.zoneID
        resultsLimit = try container.optional("resultsLimit")
        continuationMarker = try container.optional("continuationMarker")
        desiredKeys = try container.optional("desiredKeys")
        zoneWide = try container.optional("zoneWide")
        numbersAsStrings = try container.optional("numbersAsStrings")
    }
}

/// `{"fieldName","comparator","fieldValue","distance"?}`.
struct FilterInput: Decodable, Sendable {
    var filter: WebServicesFilter

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["fieldName", "comparator", "fieldValue", "distance", "bounds"], in: "a filter dictionary")
        let container = try decoder.container(keyedBy: AnyKey.self)
        _ = try container.required("fieldValue", FieldInput.self)
        filter = try WebServicesFilter(from: decoder)
    }
}

/// `{"fieldName","ascending"?,"relativeLocation"?}`.
struct SortInput: Decodable, Sendable {
    var sort: WebServicesSort

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["fieldName", "ascending", "relativeLocation"], in: "a sort dictionary")
        sort = try WebServicesSort(from: decoder)
    }
}

/// `records/lookup`.
struct LookupRequest: Decodable, Sendable {
    struct Reference: Decodable, Sendable {
        var recordName: String
        var zoneID: WebServicesZoneID?

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["recordName", "zoneID", "desiredKeys"], in: "a record to look up")
            let container = try decoder.container(keyedBy: AnyKey.self)
            recordName = try container.required("recordName")
            zoneID = try container.optional("zoneID", ZoneIDInput.self)?.zoneID
        }
    }

    var records: [Reference]
    var zoneID: WebServicesZoneID?
    var desiredKeys: [String]?
    var numbersAsStrings: Bool?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["records", "zoneID", "desiredKeys", "numbersAsStrings"], in: "records/lookup")
        let container = try decoder.container(keyedBy: AnyKey.self)
        records = try container.required("records")
        zoneID = try container.optional("zoneID", ZoneIDInput.self)?.zoneID
        desiredKeys = try container.optional("desiredKeys")
        numbersAsStrings = try container.optional("numbersAsStrings")
    }
}

/// `records/changes`, and each zone of `changes/zone`.
struct ZoneChangesRequest: Decodable, Sendable {
    var zoneID: WebServicesZoneID
    var syncToken: String?
    var resultsLimit: Int?
    var desiredKeys: [String]?
    var numbersAsStrings: Bool?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["zoneID", "syncToken", "resultsLimit", "desiredKeys", "numbersAsStrings", "reverse"], in: "a zone changes request")
        let container = try decoder.container(keyedBy: AnyKey.self)
        zoneID = try container.required("zoneID", ZoneIDInput.self).zoneID
        syncToken = try container.optional("syncToken")
        resultsLimit = try container.optional("resultsLimit")
        desiredKeys = try container.optional("desiredKeys")
        numbersAsStrings = try container.optional("numbersAsStrings")
    }
}

/// `changes/zone`: several zones at once.
struct ZonesChangesRequest: Decodable, Sendable {
    var zones: [ZoneChangesRequest]

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["zones"], in: "changes/zone")
        zones = try decoder.container(keyedBy: AnyKey.self).required("zones")
    }
}

/// `changes/database` (and its older name `zones/changes`).
struct DatabaseChangesRequest: Decodable, Sendable {
    var syncToken: String?
    var resultsLimit: Int?

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["syncToken", "resultsLimit"], in: "changes/database")
        let container = try decoder.container(keyedBy: AnyKey.self)
        syncToken = try container.optional("syncToken")
        resultsLimit = try container.optional("resultsLimit")
    }
}

/// `zones/lookup`.
struct ZonesLookupRequest: Decodable, Sendable {
    var zones: [WebServicesZoneID]

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["zones"], in: "zones/lookup")
        zones = try decoder.container(keyedBy: AnyKey.self).required("zones", [ZoneIDInput].self).map(\.zoneID)
    }
}

/// `zones/modify`.
struct ZonesModifyRequest: Decodable, Sendable {
    struct Operation: Decodable, Sendable {
        var operationType: String
        var zoneID: WebServicesZoneID

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["operationType", "zone"], in: "a zone operation")
            let container = try decoder.container(keyedBy: AnyKey.self)
            operationType = try container.required("operationType")
            zoneID = try container.required("zone", ZoneInput.self).zoneID
        }
    }

    struct ZoneInput: Decodable, Sendable {
        var zoneID: WebServicesZoneID

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["zoneID", "atomic", "syncToken"], in: "a zone dictionary")
            zoneID = try decoder.container(keyedBy: AnyKey.self).required("zoneID", ZoneIDInput.self).zoneID
        }
    }

    var operations: [Operation]

    init(from decoder: any Decoder) throws {
        try decoder.requireKnownKeys(["operations"], in: "zones/modify")
        operations = try decoder.container(keyedBy: AnyKey.self).required("operations")
    }
}
