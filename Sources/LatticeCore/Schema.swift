/// One field of one record type, fixed by the first write that used it.
public struct SchemaField: Hashable, Sendable {
    public var recordType: String
    public var field: String
    public var type: FieldType
    /// The stamp of the defining write; the earliest definition wins a race.
    public var stamp: Stamp

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
    public struct Key: Hashable, Sendable, Comparable {
        public var recordType: String
        public var field: String

        public static func < (lhs: Key, rhs: Key) -> Bool { (lhs.recordType, lhs.field) < (rhs.recordType, rhs.field) }
    }

    public private(set) var fields: [Key: SchemaField] = [:]
    /// The recordTypes known even without fields.
    public private(set) var recordTypes: Set<String> = []
    /// When the schema was deployed to production; nil in development.
    public private(set) var deployed: Stamp?

    public init() {}

    public var isProduction: Bool { deployed != nil }

    public func field(_ name: String, of recordType: String) -> SchemaField? {
        fields[Key(recordType: recordType, field: name)]
    }

    /// Adds a definition; returns whether the schema changed.
    @discardableResult
    public mutating func merge(_ definition: SchemaField) -> Bool {
        recordTypes.insert(definition.recordType)
        let key = Key(recordType: definition.recordType, field: definition.field)
        if let existing = fields[key], existing.stamp < definition.stamp || existing == definition { return false }
        fields[key] = definition
        return true
    }

    @discardableResult
    public mutating func addRecordType(_ recordType: String) -> Bool { recordTypes.insert(recordType).inserted }

    @discardableResult
    public mutating func merge(deployed stamp: Stamp?) -> Bool {
        guard let stamp else { return false }
        if let deployed, deployed <= stamp { return false }
        deployed = stamp
        return true
    }

    public mutating func merge(_ other: Schema) {
        for definition in other.fields.values { merge(definition) }
        for recordType in other.recordTypes { addRecordType(recordType) }
        merge(deployed: other.deployed)
    }

    /// Definitions in a stable order.
    public var sortedFields: [SchemaField] {
        fields.sorted { $0.key < $1.key }.map(\.value)
    }
}
