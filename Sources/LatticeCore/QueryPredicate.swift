/// What a query condition looks at: a field, or one of the system fields.
public enum QueryKey: Hashable, Sendable, CustomStringConvertible {
    case field(String)
    case recordName
    case creationDate
    case modificationDate
    /// Every string field at once, for token searches (`self CONTAINS` in NSPredicate).
    case allTokens

    /// The names CloudKit Web Services uses for system fields.
    public var description: String {
        switch self {
        case .field(let name): return name
        case .recordName: return "___recordID"
        case .creationDate: return "___createTime"
        case .modificationDate: return "___modTime"
        case .allTokens: return "___allTokens"
        }
    }

    /// The key `name` stands for: a system field by its Web Services or NSPredicate name
    /// (`___recordID` or `recordName`, `self` for all tokens, …), else the field of that name.
    public init(name: String) {
        switch name {
        case "___recordID", "recordName": self = .recordName
        case "___createTime", "creationDate": self = .creationDate
        case "___modTime", "modificationDate": self = .modificationDate
        case "___allTokens", "allTokens", "self": self = .allTokens
        default: self = .field(name)
        }
    }
}

/// CloudKit's query comparators, named as in CloudKit Web Services.
public enum QueryComparator: String, Sendable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case lessThan = "LESS_THAN"
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    /// Within `distance` meters of a location.
    case near = "NEAR"
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    case `in` = "IN"
    case notIn = "NOT_IN"
    case beginsWith = "BEGINS_WITH"
    case notBeginsWith = "NOT_BEGINS_WITH"
    case listContains = "LIST_CONTAINS"
    case notListContains = "NOT_LIST_CONTAINS"
    case listContainsAny = "LIST_CONTAINS_ANY"
    case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
    case listContainsAll = "LIST_CONTAINS_ALL"
    case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
}

/// One condition: `key comparator value` (plus a radius for NEAR).
public struct QueryCondition: Hashable, Sendable {
    /// What the condition looks at: a field or a system field.
    public var key: QueryKey
    /// How the key's value is compared with `value`.
    public var comparator: QueryComparator
    /// The operand: a list for IN, NOT_IN and LIST_CONTAINS_ANY/ALL, a location for NEAR,
    /// a string for the token and prefix comparators (`validationError` checks it).
    public var value: FieldValue
    /// Meters, for `.near` only.
    public var distance: Double?

    /// The condition `key comparator value`; `distance` in meters, for `.near` only.
    public init(_ key: QueryKey, _ comparator: QueryComparator, _ value: FieldValue, distance: Double? = nil) {
        self.key = key
        self.comparator = comparator
        self.value = value
        self.distance = distance
    }
}

/// A query's filter: conditions combined with AND, OR and NOT.
public indirect enum QueryPredicate: Hashable, Sendable {
    /// Matches every record (`NSPredicate(value: true)`).
    case all
    case condition(QueryCondition)
    case and([QueryPredicate])
    case or([QueryPredicate])
    case not(QueryPredicate)

    /// Why a predicate cannot run, found before any record is read.
    public func validationError() -> String? {
        switch self {
        case .all: return nil
        case .condition(let condition): return condition.validationError()
        case .and(let parts), .or(let parts):
            if parts.isEmpty { return "AND and OR need at least one operand" }
            return parts.lazy.compactMap { $0.validationError() }.first
        case .not(let inner): return inner.validationError()
        }
    }
}

extension QueryCondition {
    /// Why the condition cannot run (an operand of the wrong kind, a NEAR without a valid
    /// center or radius, a token key with another comparator); nil when it can.
    public func validationError() -> String? {
        let isList = { if case .list = value { return true } else { return false } }()
        switch comparator {
        case .near:
            guard case .location(let center) = value else { return "NEAR needs a location value" }
            guard center.isValid else { return "NEAR needs a latitude within ±90 and a longitude within ±180" }
            guard let distance, distance >= 0, distance.isFinite else { return "NEAR needs a distance in meters" }
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll:
            if !isList { return "\(comparator.rawValue) needs a list value" }
        case .containsAllTokens, .containsAnyTokens, .beginsWith, .notBeginsWith, .listMemberBeginsWith, .notListMemberBeginsWith:
            guard case .string = value else { return "\(comparator.rawValue) needs a string value" }
        default:
            if isList, comparator != .equals, comparator != .notEquals { return "\(comparator.rawValue) does not take a list" }
        }
        if key == .allTokens, comparator != .containsAllTokens, comparator != .containsAnyTokens {
            return "the all-tokens key only takes CONTAINS_ALL_TOKENS or CONTAINS_ANY_TOKENS"
        }
        return nil
    }
}
