import Foundation
@_spi(Tools) import LatticeCore

/// A zone ID as CloudKit Web Services writes it: `{"zoneName":"Movies"}`,
/// with the owner optional as CloudKit's is. Read, the owner may be named
/// `ownerName` or Web Services' `ownerRecordName`; written, it is `ownerName`.
public struct WebServicesZoneID: Codable, Hashable, Sendable {
    /// The zone's name.
    public var zoneName: String
    /// The owning account; absent (or null) when read, the zone is the
    /// caller's own (`Zone.ID.defaultOwnerName`), and in the shared database
    /// it is found by its name.
    public var ownerName: String

    public init(_ zoneID: Zone.ID) {
        zoneName = zoneID.zoneName
        ownerName = zoneID.ownerName
    }

    /// The zone ID this dictionary names.
    public var zoneID: Zone.ID { Zone.ID(zoneName: zoneName, ownerName: ownerName) }

    private enum CodingKeys: String, CodingKey { case zoneName, ownerName, ownerRecordName }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        zoneName = try container.decode(String.self, forKey: .zoneName)
        ownerName = try container.decodeIfPresent(String.self, forKey: .ownerName)
            ?? container.decodeIfPresent(String.self, forKey: .ownerRecordName)
            ?? Zone.ID.defaultOwnerName
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(zoneName, forKey: .zoneName)
        try container.encode(ownerName, forKey: .ownerName)
    }
}

/// When and by which device a record was created or last modified.
public struct WebServicesTimestamp: Codable, Hashable, Sendable {
    /// Milliseconds since 1970.
    public var timestamp: Int64
    /// The writer's replica ID; read, it may be absent (CloudKit's dictionary
    /// names the user, `userRecordName`, and the device only sometimes).
    public var deviceID: String

    public init(timestamp: Int64, deviceID: String) {
        self.timestamp = timestamp
        self.deviceID = deviceID
    }

    private enum CodingKeys: String, CodingKey { case timestamp, deviceID }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        timestamp = try container.decode(Int64.self, forKey: .timestamp)
        deviceID = try container.decodeIfPresent(String.self, forKey: .deviceID) ?? ""
    }
}

/// A record as CloudKit Web Services writes it:
/// `{"recordName","recordType","recordChangeTag","zoneID":{…},"fields":{"title":{"value":"Toy Story","type":"STRING"}},"created":{…},"modified":{…}}`.
/// The CLI prints and reads these; tests and a later HTTP API share them.
public struct WebServicesRecord: Codable, Hashable, Sendable {
    public var recordName: String
    public var recordType: String
    public var recordChangeTag: String?
    public var zoneID: WebServicesZoneID?
    public var fields: [String: WebServicesField]
    public var created: WebServicesTimestamp?
    public var modified: WebServicesTimestamp?

    private enum CodingKeys: String, CodingKey { case recordName, recordType, recordChangeTag, zoneID, fields, created, modified }

    /// Reads a record dictionary with CloudKit's optional keys absent: without
    /// `recordName` the record gets a new UUID name (as CloudKit names a
    /// created record), without `fields` it has none. `recordType` is required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        recordName = try container.decodeIfPresent(String.self, forKey: .recordName) ?? UUID().uuidString
        recordType = try container.decode(String.self, forKey: .recordType)
        recordChangeTag = try container.decodeIfPresent(String.self, forKey: .recordChangeTag)
        zoneID = try container.decodeIfPresent(WebServicesZoneID.self, forKey: .zoneID)
        fields = try container.decodeIfPresent([String: WebServicesField].self, forKey: .fields) ?? [:]
        created = try container.decodeIfPresent(WebServicesTimestamp.self, forKey: .created)
        modified = try container.decodeIfPresent(WebServicesTimestamp.self, forKey: .modified)
    }

    /// A record's dictionary from its parts (a request's, say).
    public init(recordName: String, recordType: String, fields: [String: WebServicesField], recordChangeTag: String? = nil, zoneID: Zone.ID? = nil) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
        self.recordChangeTag = recordChangeTag
        self.zoneID = zoneID.map(WebServicesZoneID.init)
    }

    /// A stored record's dictionary; `assetURL` gives an asset's local file, if any (`downloadURL`).
    public init(_ record: Record, assetURL: (AssetReference) -> URL? = { _ in nil }) {
        recordName = record.recordID.recordName
        recordType = record.recordType
        recordChangeTag = record.recordChangeTag
        zoneID = WebServicesZoneID(record.recordID.zoneID)
        fields = Dictionary(uniqueKeysWithValues: record.fields.map { ($0.key, WebServicesField($0.value, assetURL: assetURL)) })
        created = record.creationDate.map { WebServicesTimestamp(timestamp: $0, deviceID: record.creatorReplica?.description ?? "") }
        modified = record.modificationDate.map { WebServicesTimestamp(timestamp: $0, deviceID: record.lastModifierReplica?.description ?? "") }
    }

    /// The record this dictionary describes, in `zoneID`; `importAsset` turns an ASSETID value (a file path) into an asset.
    public func record(in zoneID: Zone.ID, importAsset: ((String) throws(LatticeError) -> FieldValue)? = nil) throws(LatticeError) -> Record {
        var record = Record(recordType: recordType, recordName: recordName, zoneID: zoneID)
        for (name, field) in fields {
            // A reference points into its record's zone, as CloudKit's do: one naming another zone is refused, not bent.
            if let other = Self.referencedZones(field.value).first(where: { $0.zoneName != zoneID.zoneName }) {
                throw LatticeError(.invalidArguments, "field \(name): a reference must point into the record's own zone (\(zoneID.zoneName)), not \(other.zoneName)")
            }
            record[name] = try field.fieldValue(field: name, importAsset: importAsset)
        }
        return record
    }
}

extension WebServicesRecord {
    /// The zones that reference values (one, or a list's) name in their `zoneID`.
    static func referencedZones(_ value: WebServicesValue) -> [WebServicesZoneID] {
        switch value {
        case .object(let members):
            guard case .object(let zone)? = members["zoneID"], case .string(let name)? = zone["zoneName"] else { return [] }
            var owner = Zone.ID.defaultOwnerName
            if case .string(let given)? = zone["ownerName"] ?? zone["ownerRecordName"] { owner = given }
            return [WebServicesZoneID(Zone.ID(zoneName: name, ownerName: owner))]
        case .array(let items): return items.flatMap(referencedZones)
        default: return []
        }
    }
}
