@_spi(Tools) import LatticeCore

/// A zone, as `CKRecordZone`.
public struct Zone: Hashable, Sendable {
    public typealias ID = ZoneID
    public var zoneID: ID

    public init(zoneID: ID) { self.zoneID = zoneID }
    public init(zoneName: String) { zoneID = ID(zoneName: zoneName) }

    public static let `default` = Zone(zoneID: .default)
}

/// A record, as `CKRecord`: a type, fields, and the system fields the store fills in.
///
/// A value type: the store never changes a `Record` you hold. Fields you set
/// are remembered as changed keys, which is what the changedKeys and
/// ifServerRecordUnchanged save policies write.
public struct Record: Hashable, Sendable {
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        public var recordName: String
        public var zoneID: Zone.ID

        public init(recordName: String, zoneID: Zone.ID = .default) {
            self.recordName = recordName
            self.zoneID = zoneID
        }

        /// The public database's record `recordName` that `creator` created
        /// (`Record.creatorReplica`): there, devices that create one name
        /// each have a record of their own, and a plain name reads this
        /// device's own, else the one it held first. For reads; a write
        /// goes by the plain name.
        public init(recordName: String, createdBy creator: ReplicaID, zoneID: Zone.ID = .default) {
            self.init(recordName: PublicRecordName.qualified(recordName, by: creator), zoneID: zoneID)
        }

        public var description: String { "\(zoneID)/\(recordName)" }
    }

    public let recordID: ID
    public let recordType: String
    private(set) var values: [String: FieldValue]
    private(set) var changed: Set<String>

    /// Set by the store: the tag ifServerRecordUnchanged compares.
    public internal(set) var recordChangeTag: String?
    /// Milliseconds since 1970, set by the store.
    public internal(set) var creationDate: Int64?
    public internal(set) var modificationDate: Int64?
    /// Device (replica) IDs of the creating and last modifying writers.
    public internal(set) var creatorReplica: ReplicaID?
    public internal(set) var lastModifierReplica: ReplicaID?

    public init(recordType: String, recordID: ID) {
        self.recordType = recordType
        self.recordID = recordID
        values = [:]
        changed = []
    }

    public init(recordType: String, recordName: String, zoneID: Zone.ID = .default) {
        self.init(recordType: recordType, recordID: ID(recordName: recordName, zoneID: zoneID))
    }

    /// `recordName`: the name the app knows it by (`StoreSnapshot.appRecordName`), where it differs from the plain one.
    init(state: RecordState, zoneID: Zone.ID, recordName: String? = nil) {
        self.init(recordType: state.recordType, recordID: ID(recordName: recordName ?? PublicRecordName.plain(state.recordName), zoneID: zoneID))
        values.reserveCapacity(state.fields.count)
        for field in state.fields { if let value = field.value { values[field.name] = value } }
        recordChangeTag = state.changeTag
        creationDate = Int64(state.created.time.milliseconds)
        let modified = state.lastModified
        modificationDate = Int64(modified.time.milliseconds)
        creatorReplica = state.created.replica
        lastModifierReplica = modified.replica
    }

    public subscript(key: String) -> FieldValue? {
        get { values[key] }
        set {
            values[key] = newValue
            changed.insert(key)
        }
    }

    /// Field names with a value, sorted.
    public func allKeys() -> [String] { values.keys.sorted() }

    /// Keys set or removed since the record was created or fetched.
    public func changedKeys() -> [String] { changed.sorted() }

    /// The fields as a dictionary.
    public var fields: [String: FieldValue] { values }
}
