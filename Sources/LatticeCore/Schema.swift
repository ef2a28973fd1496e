/// One field of one record type, fixed by the first write that used it.
public struct SchemaField: Hashable, Sendable {
    /// The record type the field belongs to.
    public var recordType: String
    /// The field's name, unique within its record type.
    public var field: String
    /// The field's type: every later write of the field must match it.
    public var type: FieldType
    /// The stamp of the defining write; the earliest definition wins a race.
    public var stamp: Stamp

    /// A definition of `field` of `recordType` as `type`, by the write stamped `stamp`.
    public init(recordType: String, field: String, type: FieldType, stamp: Stamp) {
        self.recordType = recordType
        self.field = field
        self.type = type
        self.stamp = stamp
    }
}

/// A container's schema: just-in-time while in development, frozen against
/// new types and fields once deployed. Schemas only grow, and merge like data:
/// per field the earliest definition wins; deployment, once seen, stays.
public struct Schema: Hashable, Sendable {
    /// A field of a record type: what index kinds are kept by.
    public struct Key: Hashable, Sendable, Comparable {
        /// The record type the field belongs to.
        public var recordType: String
        /// The field's name within that record type.
        public var field: String

        /// The key of `field` of `recordType`.
        public init(recordType: String, field: String) {
            self.recordType = recordType
            self.field = field
        }

        public static func < (lhs: Key, rhs: Key) -> Bool { (lhs.recordType, lhs.field) < (rhs.recordType, rhs.field) }
    }

    /// The definitions by record type, then field: a save checks its fields
    /// with one lookup of its type and one of each field name.
    private var fieldsByType: [String: [String: SchemaField]] = [:]

    /// Every definition, in no particular order.
    public var definitions: [SchemaField] { fieldsByType.values.flatMap(\.values) }

    /// The recordTypes known even without fields.
    public private(set) var recordTypes: Set<String> = []
    /// When the schema was deployed to production; nil in development.
    public private(set) var deployed: Stamp?
    /// The index kinds asked for on each field, here or by peers. Like the
    /// rest of the schema they only grow: a merge takes the union.
    private var requestedIndexes: [Key: IndexKinds] = [:]
    /// Index kinds this replica removed: a local choice, as an index changes
    /// how fast a query runs, never what it returns. They are not sent to
    /// peers, and a peer's schema that carries them does not bring them
    /// back; adding them here does.
    public private(set) var removedIndexes: [Key: IndexKinds] = [:]

    /// The index kinds each field has here: those asked for, less those removed.
    public var indexes: [Key: IndexKinds] {
        guard !removedIndexes.isEmpty else { return requestedIndexes }
        var kept: [Key: IndexKinds] = [:]
        for (key, kinds) in requestedIndexes {
            let left = kinds.subtracting(removedIndexes[key] ?? [])
            if !left.isEmpty { kept[key] = left }
        }
        return kept
    }

    /// An empty schema, in development.
    public init() {}

    /// Whether the schema is deployed: new record types and fields are then refused.
    public var isProduction: Bool { deployed != nil }

    /// The definition of field `name` of `recordType`; nil when there is none yet.
    public func field(_ name: String, of recordType: String) -> SchemaField? {
        fieldsByType[recordType]?[name]
    }

    /// Adds a definition; returns whether the schema changed.
    @discardableResult
    public mutating func merge(_ definition: SchemaField) -> Bool {
        recordTypes.insert(definition.recordType)
        if let existing = field(definition.field, of: definition.recordType), existing.stamp < definition.stamp || existing == definition { return false }
        fieldsByType[definition.recordType, default: [:]][definition.field] = definition
        return true
    }

    /// Adds a record type, with no fields; returns whether it was new.
    @discardableResult
    public mutating func addRecordType(_ recordType: String) -> Bool { recordTypes.insert(recordType).inserted }

    /// The index kinds of a field (empty when it has none).
    public func indexKinds(_ field: String, of recordType: String) -> IndexKinds {
        let key = Key(recordType: recordType, field: field)
        return (requestedIndexes[key] ?? []).subtracting(removedIndexes[key] ?? [])
    }

    /// The fields of `recordType` that have an index, with their kinds, by name.
    public func indexedFields(of recordType: String) -> [(field: String, kinds: IndexKinds)] {
        requestedIndexes.keys.filter { $0.recordType == recordType }
            .map { ($0.field, indexKinds($0.field, of: recordType)) }
            .filter { !$0.1.isEmpty }.sorted { $0.field < $1.field }
    }

    /// Adds index kinds to a field's requests; returns the kinds that were new
    /// requests (kept off here when removed here).
    @discardableResult
    public mutating func merge(index kinds: IndexKinds, field: String, of recordType: String) -> IndexKinds {
        let key = Key(recordType: recordType, field: field)
        let existing = requestedIndexes[key] ?? []
        let added = kinds.subtracting(existing)
        guard !added.isEmpty else { return [] }
        requestedIndexes[key] = existing.union(kinds)
        return added
    }

    /// Sets the index kinds removed here from a field (empty: none).
    public mutating func setRemoved(index kinds: IndexKinds, field: String, of recordType: String) {
        removedIndexes[Key(recordType: recordType, field: field)] = kinds.isEmpty ? nil : kinds
    }

    /// How the store holds a field's index, from its kinds and type (kinds
    /// from a peer are not checked against the type, so the type decides).
    package func indexStructure(_ field: String, of recordType: String) -> IndexStructure? {
        let kinds = indexKinds(field, of: recordType)
        guard kinds.isOrdered else { return nil }
        guard let type = self.field(field, of: recordType)?.type else { return .column }
        if type.isList { return IndexStructure.memberElements.contains(type.element) ? .members : nil }
        return type.element == .location ? .location : .column
    }

    /// Takes a deployment stamp, keeping the earliest seen; returns whether `deployed` changed
    /// (never for nil).
    @discardableResult
    public mutating func merge(deployed stamp: Stamp?) -> Bool {
        guard let stamp else { return false }
        if let deployed, deployed <= stamp { return false }
        deployed = stamp
        return true
    }

    /// Merges `other` in and returns what changed: the definitions, record
    /// types and deployment to persist (empty when nothing did).
    @discardableResult
    public mutating func merge(_ other: Schema) -> Schema {
        var changes = Schema()
        for definition in other.definitions where merge(definition) { changes.merge(definition) }
        for recordType in other.recordTypes where addRecordType(recordType) { changes.addRecordType(recordType) }
        if merge(deployed: other.deployed) { changes.merge(deployed: other.deployed) }
        for (key, kinds) in other.requestedIndexes {
            let added = merge(index: kinds, field: key.field, of: key.recordType)
            if !added.isEmpty { changes.merge(index: added, field: key.field, of: key.recordType) }
        }
        return changes
    }

    /// Whether it holds nothing: no definition, record type, deployment, index request or removal.
    public var isEmpty: Bool { fieldsByType.isEmpty && recordTypes.isEmpty && deployed == nil && requestedIndexes.isEmpty && removedIndexes.isEmpty }

    /// The part of the schema whose stamps `accepts` takes (the clock-skew bound).
    public func filter(_ accepts: (Stamp) -> Bool) -> Schema {
        var kept = Schema()
        for definition in definitions where accepts(definition.stamp) { kept.merge(definition) }
        for recordType in recordTypes { kept.addRecordType(recordType) }
        if let deployed, accepts(deployed) { kept.merge(deployed: deployed) }
        kept.requestedIndexes = requestedIndexes
        kept.removedIndexes = removedIndexes
        return kept
    }

    /// Checks a write of `values` to a record of `recordType`: a field's type
    /// is fixed by its first definition, and production refuses new types and fields.
    /// Returns the fields written that the schema does not define yet.
    @discardableResult
    package func check(recordType: String, values: [(name: String, value: FieldValue?)]) throws(SchemaViolation) -> [(name: String, type: FieldType)] {
        if isProduction, !recordTypes.contains(recordType) { throw .unknownRecordType(recordType) }
        var undefined: [(name: String, type: FieldType)] = []
        let defined = fieldsByType[recordType] ?? [:]
        for (name, value) in values {
            guard let value else { continue }
            if let defined = defined[name] {
                // An empty list fits any list type.
                let emptyList = { if case .list(let items) = value { return items.isEmpty && defined.type.isList } else { return false } }()
                guard defined.type == value.type || emptyList else {
                    throw .typeMismatch(recordType: recordType, field: name, defined: defined.type, written: value.type)
                }
            } else if isProduction {
                throw .unknownField(recordType: recordType, field: name)
            } else if case .list(let items) = value, items.isEmpty {
                // An empty list carries no element type: the first list with a member defines the field.
                continue
            } else {
                undefined.append((name, value.type))
            }
        }
        return undefined
    }

    /// Definitions in a stable order.
    public var sortedFields: [SchemaField] {
        definitions.sorted { ($0.recordType, $0.field) < ($1.recordType, $1.field) }
    }
}

/// Why a write breaks the schema.
package enum SchemaViolation: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownRecordType(String)
    case unknownField(recordType: String, field: String)
    case typeMismatch(recordType: String, field: String, defined: FieldType, written: FieldType)

    package var description: String {
        switch self {
        case .unknownRecordType(let type):
            return "record type \(type) does not exist in the production schema; add it in development before deploying"
        case .unknownField(let type, let field):
            return "field \(field) does not exist on \(type) in the production schema"
        case .typeMismatch(let type, let field, let defined, let written):
            return "field \(field) of \(type) is \(defined); cannot save a \(written)"
        }
    }
}

/// CloudKit's index kinds for a field: queryable (filters), sortable (sort
/// order and range filters), searchable (token searches of a string field).
public struct IndexKinds: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    /// Kinds from their bits: 1 queryable, 2 sortable, 4 searchable.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Filters on the field use an index.
    public static let queryable = IndexKinds(rawValue: 1)
    /// Sort orders and range filters on the field use an index.
    public static let sortable = IndexKinds(rawValue: 2)
    /// Token searches of a string field (CONTAINS_ALL_TOKENS, CONTAINS_ANY_TOKENS) use an index.
    public static let searchable = IndexKinds(rawValue: 4)
    /// All three kinds; `possible(for:)` says which a field type can have.
    public static let all: IndexKinds = [.queryable, .sortable, .searchable]

    /// Whether the field's values live in an ordered SQL index (both queryable and sortable do).
    public var isOrdered: Bool { !intersection([.queryable, .sortable]).isEmpty }

    /// The kinds' names, as the CLI prints and takes them.
    public var names: [String] {
        [(IndexKinds.queryable, "queryable"), (.sortable, "sortable"), (.searchable, "searchable")].filter { contains($0.0) }.map(\.1)
    }

    public var description: String { names.joined(separator: ", ") }

    /// Which field types an index of these kinds can hold; nil when `type` fits.
    public func refusal(for type: FieldType) -> String? {
        if contains(.searchable), type != FieldType(.string) { return "only STRING fields can be searchable" }
        if contains(.sortable), type.isList || ![.string, .int64, .double, .date, .bool].contains(type.element) {
            return "only STRING, INT64, DOUBLE, TIMESTAMP and BOOLEAN fields can be sortable"
        }
        if contains(.queryable), type.isList ? !IndexStructure.memberElements.contains(type.element) : type.element == .asset {
            return "assets, and lists of assets or locations, cannot be queryable"
        }
        return nil
    }

    /// Every kind a field of `type` can have.
    public static func possible(for type: FieldType) -> IndexKinds {
        [IndexKinds.queryable, .sortable, .searchable].filter { $0.refusal(for: type) == nil }.reduce(into: []) { $0.insert($1) }
    }

    /// The kinds a field of `type` takes when none are named: what it can have of queryable and sortable.
    public static func defaults(for type: FieldType) -> IndexKinds {
        possible(for: type).subtracting(.searchable)
    }
}

/// Where a queryable or sortable field's index lives in the store.
package enum IndexStructure: Sendable {
    /// A column of the type's index table, in an SQL index by value.
    case column
    /// One row per distinct list member (LIST_CONTAINS, LIST_MEMBER_BEGINS_WITH).
    case members
    /// A box of an R*Tree (NEAR … WITHIN).
    case location

    /// List elements a member index holds: those it compares as the query engine does.
    package static let memberElements: Set<FieldType.Element> = [.string, .int64, .double, .date, .bool, .bytes, .reference]
}
