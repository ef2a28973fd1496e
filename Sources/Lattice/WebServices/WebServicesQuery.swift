import Foundation
@_spi(Tools) import LatticeCore

/// A `filterBy` entry: `{"fieldName","comparator","fieldValue":{"value","type"},"distance"?}`.
public struct WebServicesFilter: Codable, Hashable, Sendable {
    public var fieldName: String
    public var comparator: String
    public var fieldValue: WebServicesField
    /// Meters, for NEAR.
    public var distance: Double?

    /// The condition; an unknown comparator or a value that does not fit is invalidArguments.
    public func condition() throws(LatticeError) -> QueryCondition {
        guard let comparator = QueryComparator(rawValue: comparator.uppercased()) else {
            throw LatticeError(.invalidArguments, "unknown comparator \"\(self.comparator)\"; CloudKit's are \(QueryComparator.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return QueryCondition(QueryKey(name: fieldName), comparator, try fieldValue.fieldValue(field: fieldName), distance: distance)
    }

    /// All the filters of a `filterBy` array, ANDed as CloudKit does; none matches every record.
    public static func predicate(_ filters: [WebServicesFilter]) throws(LatticeError) -> QueryPredicate {
        guard !filters.isEmpty else { return .all }
        var conditions: [QueryPredicate] = []
        for filter in filters { conditions.append(.condition(try filter.condition())) }
        return conditions.count == 1 ? conditions[0] : .and(conditions)
    }
}

/// A `sortBy` entry: `{"fieldName","ascending"?,"relativeLocation"?}`.
public struct WebServicesSort: Codable, Hashable, Sendable {
    public var fieldName: String
    public var ascending: Bool?
    public var relativeLocation: WebServicesValue?

    public func sort() throws(LatticeError) -> QuerySort {
        var location: Location?
        if let relativeLocation {
            guard case .location(let value) = try? WebServicesField.value(relativeLocation, as: FieldType(.location), field: fieldName, importAsset: nil) else {
                throw LatticeError(.invalidArguments, "relativeLocation of \(fieldName) must be {\"latitude\": …, \"longitude\": …}")
            }
            location = value
        }
        return QuerySort(QueryKey(name: fieldName), ascending: ascending ?? true, relativeLocation: location)
    }
}

/// A page of query results: `{"records": […], "continuationMarker"?}`.
public struct WebServicesQueryResponse: Codable, Hashable, Sendable {
    public var records: [WebServicesRecord]
    /// Where the next page starts (`Query.Cursor.stringValue`).
    public var continuationMarker: String?

    public init(records: [WebServicesRecord], continuationMarker: String?) {
        self.records = records
        self.continuationMarker = continuationMarker
    }
}

/// A deleted record, as change lists and deletes report it: `{"recordName","recordType"?,"zoneID"?,"deleted":true}`.
public struct WebServicesDeletedRecord: Codable, Hashable, Sendable {
    public var recordName: String
    public var recordType: String?
    public var zoneID: WebServicesZoneID?
    public var deleted = true

    public init(recordName: String, recordType: String? = nil, zoneID: Zone.ID? = nil) {
        self.recordName = recordName
        self.recordType = recordType
        self.zoneID = zoneID.map(WebServicesZoneID.init)
    }
}

/// A record or a deletion, in one list.
public enum WebServicesRecordEntry: Encodable, Hashable, Sendable {
    case record(WebServicesRecord)
    case deleted(WebServicesDeletedRecord)

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .record(let record): try record.encode(to: encoder)
        case .deleted(let deletion): try deletion.encode(to: encoder)
        }
    }
}

/// A zone: `{"zoneID":{…},"recordCount"?,"deleted"?}`.
public struct WebServicesZone: Codable, Hashable, Sendable {
    public var zoneID: WebServicesZoneID
    public var recordCount: Int?
    public var deleted: Bool?

    public init(_ zoneID: Zone.ID, recordCount: Int? = nil, deleted: Bool? = nil) {
        self.zoneID = WebServicesZoneID(zoneID)
        self.recordCount = recordCount
        self.deleted = deleted
    }
}

/// CloudKit's error dictionary: `{"serverErrorCode","reason"}`.
public struct WebServicesError: Codable, Hashable, Sendable {
    public var serverErrorCode: String
    public var reason: String

    public init(serverErrorCode: String, reason: String) {
        self.serverErrorCode = serverErrorCode
        self.reason = reason
    }

    /// CloudKit Web Services' code for a Lattice error (`SERVER_RECORD_CHANGED`, `NOT_FOUND`, …).
    public init(_ error: LatticeError) {
        self.init(serverErrorCode: error.code.webServicesCode, reason: error.message)
    }
}

extension LatticeError.Code {
    /// The `serverErrorCode` CloudKit Web Services uses for this code.
    public var webServicesCode: String {
        switch self {
        case .unknownItem: return "UNKNOWN_ITEM"
        case .zoneNotFound: return "ZONE_NOT_FOUND"
        case .badContainer: return "BAD_CONTAINER"
        case .serverRecordChanged: return "CONFLICT"
        case .changeTokenExpired: return "CHANGE_TOKEN_EXPIRED"
        case .permissionFailure: return "ACCESS_DENIED"
        case .limitExceeded: return "LIMIT_EXCEEDED"
        case .invalidArguments, .assetFileNotFound, .partialFailure: return "BAD_REQUEST"
        case .batchRequestFailed: return "ATOMIC_ERROR"
        case .networkUnavailable: return "NETWORK_FAILURE"
        case .badDatabase, .internalError, .incompatibleVersion: return "INTERNAL_ERROR"
        }
    }
}
