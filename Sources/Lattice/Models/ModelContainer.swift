import Foundation
@_spi(Tools) import LatticeCore

/// The store of a set of model types and the sync node that shares it, as
/// SwiftData's `ModelContainer` with CloudKit: one line opens both.
///
/// ```swift
/// let container = try await ModelContainer(for: Movie.self, Review.self, configuration: ModelConfiguration("iCloud.com.example.movies"))
/// let context = ModelContext(container)
/// ```
public final class ModelContainer: @unchecked Sendable {
    public let configuration: ModelConfiguration
    /// The record store underneath: records, zones, trust, pairing.
    public let store: Container
    /// The private database the objects live in.
    public let database: Database
    public let zoneID: Zone.ID
    /// The sync node, when the configuration syncs; running once `init` returns.
    /// The container reads its events and republishes them through `changes()`
    /// (an event stream has one reader): follow sync there.
    public let node: SyncNode?
    /// The record types of the model types, by name.
    let schemas: [String: ModelSchema]
    let events: ModelEventHub

    public convenience init(for types: any PersistentModel.Type..., configuration: ModelConfiguration) async throws(LatticeError) {
        try await self.init(for: types, configuration: configuration)
    }

    /// Opens (or creates) the store, checks the model types, and starts the sync node.
    public init(for types: [any PersistentModel.Type], configuration: ModelConfiguration) async throws(LatticeError) {
        self.configuration = configuration
        var schemas: [String: ModelSchema] = [:]
        for type in types {
            let schema = ModelSchema.of(type)
            try schema.check()
            schemas[schema.recordType] = schema
        }
        // Types reached through relationships belong to the container too.
        var pending = Array(schemas.values)
        while let schema = pending.popLast() {
            for link in schema.relationships where schemas[link.target.recordType] == nil {
                try link.target.check()
                schemas[link.target.recordType] = link.target
                pending.append(link.target)
            }
        }
        self.schemas = schemas
        var directory = configuration.directory
        if configuration.isStoredInMemoryOnly {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("lattice-memory-\(UUID().uuidString)")
        }
        store = try Container(identifier: configuration.containerIdentifier, directory: directory)
        database = store.privateCloudDatabase
        zoneID = Zone.ID(zoneName: configuration.zoneName)
        if let zones = configuration.replicatedZones {
            try database.setReplicatedZones((zones.union([configuration.zoneName])).sorted().map { Zone.ID(zoneName: $0) })
        }
        if !zoneID.isDefault { try await database.save(Zone(zoneID: zoneID)) }
        try Self.declare(schemas.values, in: store)
        try Self.addInverseIndexes(schemas.values, to: store)
        events = ModelEventHub(database: database, zoneID: zoneID, recordTypes: Set(schemas.keys))
        if configuration.sync.isEnabled && !configuration.isStoredInMemoryOnly {
            var node = SyncNode.Configuration()
            node.port = configuration.sync.port
            node.peers = configuration.sync.peers
            node.discovers = configuration.sync.discovers
            let syncNode = SyncNode(container: store, configuration: node)
            try await syncNode.start()
            self.node = syncNode
            events.follow(syncNode)
        } else {
            node = nil
        }
    }

    /// The models' record types and fields go into the store's schema at
    /// once, so a field's type is the model's from the start and can be indexed.
    private static func declare(_ schemas: some Sequence<ModelSchema>, in store: Container) throws(LatticeError) {
        var recordTypes: [String] = []
        var fields: [(recordType: String, field: String, type: FieldType)] = []
        for schema in schemas {
            recordTypes.append(schema.recordType)
            for property in schema.properties {
                if let access = property.attribute {
                    fields.append((schema.recordType, property.name, access.fieldType))
                } else if let link = schema.link(property) {
                    switch link.storage {
                    case .reference: fields.append((schema.recordType, property.name, FieldType(.reference)))
                    case .inverseReference: break
                    case .links(let links):
                        recordTypes.append(links.recordType)
                        fields.append((links.recordType, links.ownField, FieldType(.reference)))
                        fields.append((links.recordType, links.otherField, FieldType(.reference)))
                    }
                }
            }
        }
        do {
            try store.declare(recordTypes: recordTypes, fields: fields)
        } catch {
            throw LatticeError(error.code, "the models do not fit this container's schema: \(error.message)")
        }
    }

    /// A to-many is read by querying the references that point at the object
    /// (the inverse's field, or a link's): index them, so that read does not scan.
    private static func addInverseIndexes(_ schemas: some Sequence<ModelSchema>, to store: Container) throws(LatticeError) {
        let current = try store.schema()
        for schema in schemas {
            for link in schema.relationships {
                let indexed: (recordType: String, field: String)
                switch link.storage {
                case .reference: continue
                case .inverseReference:
                    guard let inverse = link.inverse else { continue }
                    indexed = (link.target.recordType, inverse.name)
                case .links(let links): indexed = (links.recordType, links.ownField)
                }
                if !current.indexKinds(indexed.field, of: indexed.recordType).contains(.queryable) {
                    try store.addIndex(.queryable, field: indexed.field, of: indexed.recordType)
                }
            }
        }
    }

    /// Stops the sync node; a store made by `isStoredInMemoryOnly` is removed.
    public func close() async {
        events.finish()
        await node?.stop()
        if configuration.isStoredInMemoryOnly { try? FileManager.default.removeItem(at: store.directory) }
    }

    /// Changes to the container's objects as they commit, from this process,
    /// another on the store, or a peer; and the sync node's setup, import and
    /// export events, as `NSPersistentCloudKitContainer.eventChangedNotification`.
    /// Each call starts a new stream from now.
    public func changes() -> AsyncStream<ModelEvent> { events.subscribe() }
}
