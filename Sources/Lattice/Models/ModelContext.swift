import Foundation
@_spi(Tools) import LatticeCore

/// Where objects are inserted, changed, deleted and fetched, as SwiftData's
/// `ModelContext`. `save()` writes every pending change in one atomic
/// `modifyRecords`. A context and its objects belong to one task at a time
/// (they are not `Sendable`); make a context per task.
public final class ModelContext {
    public let container: ModelContainer
    /// Objects with a record, by identity: one object per record per context,
    /// held weakly (as Core Data's contexts hold unchanged objects): pending
    /// inserts, changes and deletes are held strongly until saved.
    var registry: [PersistentIdentifier: WeakModel] = [:]
    var inserted: [any PersistentModel] = []
    var changedObjects: [ObjectIdentifier: any PersistentModel] = [:]
    var deleted: [ObjectIdentifier: any PersistentModel] = [:]
    /// Set while one side of a relationship is being mirrored on the other.
    var isMirroring = false
    /// The registry's size after it was last pruned.
    var liveRegistrySize = 0
    /// Objects deleted before they were ever saved: a save still applies their delete rules.
    var deletedUnsaved: [any PersistentModel] = []
    /// While a save runs: the objects it deletes (they hold no relationships any more).
    var deleting = Set<ObjectIdentifier>()

    public init(_ container: ModelContainer) {
        self.container = container
    }

    /// The author string this context's saves carry in history (SwiftData's
    /// `ModelContext.author`): `DefaultHistoryTransaction.author` on this device.
    public var author: String?

    var database: Database { container.database.withHistoryAuthor(author) }
    var zoneID: Zone.ID { container.zoneID }
    var valueStore: ModelValueStore { ModelValueStore(container: container.store) }

    /// Whether anything is inserted, changed or deleted and not saved.
    public var hasChanges: Bool {
        !inserted.isEmpty || !deleted.isEmpty || changedObjects.values.contains { !$0._$backing.changed.isEmpty }
    }

    /// Objects inserted and not yet saved.
    public var insertedModels: [any PersistentModel] { inserted }

    // MARK: Insert and delete

    /// Adds a new object; the next save writes it. Objects it relates to are inserted too.
    public func insert<T: PersistentModel>(_ model: T) {
        let backing = model._$backing
        guard backing.context == nil else {
            if backing.context === self, backing.isDeleted, backing.isPersisted {
                backing.isDeleted = false
                deleted[ObjectIdentifier(model)] = nil
            }
            return
        }
        backing.context = self
        backing.isDeleted = false
        let schema = ModelSchema.of(T.self)
        if schema.key.isEmpty {
            let id = PersistentIdentifier(recordType: schema.recordType, recordID: Record.ID(recordName: UUID().uuidString, zoneID: zoneID))
            backing.id = id
            register(model, as: id)
        }
        inserted.append(model)
        for link in schema.relationships {
            let related = link.access.get(model)
            for object in related { insertAny(object) }
            if !related.isEmpty { mirror(model, field: link.property.name, removed: [], added: related) }
        }
    }

    private func insertAny(_ object: AnyObject) {
        guard let model = object as? any PersistentModel, model._$backing.context == nil else { return }
        insert(model)
    }

    /// Marks an object deleted; the next save deletes its record and applies
    /// its relationships' delete rules.
    public func delete<T: PersistentModel>(_ model: T) {
        let backing = model._$backing
        guard backing.context === self, !backing.isDeleted else { return }
        backing.isDeleted = true
        if backing.isPersisted {
            deleted[ObjectIdentifier(model)] = model
        } else {
            inserted.removeAll { $0 === model }
            deletedUnsaved.append(model)
            if let id = backing.id, registry[id]?.object === model { registry[id] = nil }
        }
    }

    /// Forgets every unsaved change: inserted objects leave the context,
    /// deleted ones come back, changed ones read their records again.
    public func rollback() {
        for model in inserted + deletedUnsaved {
            model._$backing.context = nil
            model._$backing.isDeleted = false
            if let id = model._$backing.id, registry[id]?.object === model { registry[id] = nil }
        }
        for model in deleted.values { model._$backing.isDeleted = false }
        for model in changedObjects.values {
            guard let id = model._$backing.id else { continue }
            model._$backing.changed = []
            model._$backing.relations = [:]
            if let record = try? database.record(for: id.recordID) { fill(model, from: record) }
        }
        inserted = []
        deletedUnsaved = []
        deleted = [:]
        changedObjects = [:]
    }

    /// The live object registered for a record, if any.
    func registered(_ id: PersistentIdentifier) -> (any PersistentModel)? {
        guard let box = registry[id] else { return nil }
        guard let object = box.object else {
            registry[id] = nil
            return nil
        }
        return object
    }

    func register(_ model: any PersistentModel, as id: PersistentIdentifier) {
        registry[id] = WeakModel(model)
        // Dead entries go now and then, so the table stays the size of the live objects.
        if registry.count > 2 * max(1_024, liveRegistrySize) {
            registry = registry.filter { $0.value.object != nil }
            liveRegistrySize = registry.count
        }
    }

    func noteChanged(_ model: any PersistentModel) {
        let backing = model._$backing
        guard backing.isPersisted, !backing.isDeleted else { return }
        changedObjects[ObjectIdentifier(model)] = model
    }

    // MARK: Reading records into objects

    /// The context's object for a record, filled from it (an object with unsaved changes keeps them).
    func materialize<T: PersistentModel>(_ record: Record, as type: T.Type) -> T {
        let id = PersistentIdentifier(recordType: record.recordType, recordID: record.recordID)
        if let existing = registered(id) as? T {
            if existing._$backing.changed.isEmpty && !existing._$backing.isDeleted { fill(existing, from: record) }
            return existing
        }
        let backing = ModelBacking()
        backing.context = self
        backing.id = id
        backing.isPersisted = true
        let object = T(_$backing: backing)
        fill(object, from: record)
        register(object, as: id)
        return object
    }

    func fill(_ object: any PersistentModel, from record: Record) {
        let schema = ModelSchema.of(type(of: object))
        let backing = object._$backing
        backing.isLoading = true
        defer { backing.isLoading = false }
        let store = valueStore
        for property in schema.properties {
            switch property.kind {
            case .attribute(let access):
                access.write(object, record[property.name], schema.prototype, store)
            case .relationship(let access):
                guard !access.isToMany, schema.link(property)?.isStored == true else { backing.relations[property.name] = nil; continue }
                if case .reference(let reference)? = record[property.name] {
                    backing.relations[property.name] = .related([.init(name: reference.recordName)])
                } else {
                    backing.relations[property.name] = .related([])
                }
            case .unsupported:
                break
            }
        }
    }

    /// Whether this context holds the named object as deleted (not saved yet): gone, not missing.
    func isDeletedHere(recordType: String, recordName: String) -> Bool {
        let id = PersistentIdentifier(recordType: recordType, recordID: Record.ID(recordName: recordName, zoneID: zoneID))
        return registered(id)?._$backing.isDeleted == true
    }

    /// The object a reference names, fetched if this context has not read it; nil when its record is not here (yet).
    func resolve<T: PersistentModel>(_ type: T.Type, recordName: String) -> T? {
        let id = PersistentIdentifier(recordType: T.recordType, recordID: Record.ID(recordName: recordName, zoneID: zoneID))
        if let object = registered(id) as? T { return object._$backing.isDeleted ? nil : object }
        guard let record = try? database.record(for: id.recordID), record.recordType == T.recordType else { return nil }
        return materialize(record, as: T.self)
    }

    /// A to-many's objects as the store holds them: those whose inverse names
    /// `owner`, or the other ends of its links (`missing`: linked names whose records are not here yet).
    func relatedObjects<Target: PersistentModel>(of owner: any PersistentModel, field: String, as type: Target.Type) -> (found: [Target], missing: [String])? {
        let schema = ModelSchema.of(Swift.type(of: owner))
        guard let property = schema.byField[field], let link = schema.link(property), let id = owner._$backing.id else { return nil }
        let me = FieldValue.reference(RecordReference(recordName: id.recordID.recordName))
        switch link.storage {
        case .reference:
            return nil
        case .inverseReference:
            guard let inverse = link.inverse, let inverseAccess = inverse.relationship else { return nil }
            let query = Query(recordType: Target.recordType, predicate: .condition(QueryCondition(.field(inverse.name), .equals, me)), sortDescriptors: [QuerySort(.recordName)])
            guard let records = try? allRecords(matching: query) else { return nil }
            // An object whose unsaved inverse no longer names the owner is not in the relationship.
            let found = records.map { materialize($0, as: Target.self) }.filter { object in
                !object._$backing.isDeleted && inverseAccess.get(object).contains { $0 === owner }
            }
            return (found, [])
        case .links(let links):
            guard let names = try? linkedNames(links, of: id.recordID.recordName) else { return nil }
            owner._$backing.linkBaselines[field] = Set(names)
            var found: [Target] = []
            var missing: [String] = []
            for name in names {
                if let object = resolve(Target.self, recordName: name) {
                    found.append(object)
                } else if !isDeletedHere(recordType: Target.recordType, recordName: name) {
                    missing.append(name)
                }
            }
            return (found, missing)
        }
    }

    /// The names of the records linked to `owner` by link records, in name order.
    func linkedNames(_ links: LinkType, of owner: String) throws(LatticeError) -> [String] {
        let me = FieldValue.reference(RecordReference(recordName: owner))
        let query = Query(recordType: links.recordType, predicate: .condition(QueryCondition(.field(links.ownField), .equals, me)), sortDescriptors: [QuerySort(.recordName)])
        return try allRecords(matching: query).compactMap { record in
            if case .reference(let other)? = record[links.otherField] { return other.recordName }
            return nil
        }
    }

    func allRecords(matching query: Query, limit: Int = .max) throws(LatticeError) -> [Record] {
        var records: [Record] = []
        var page = try database.records(matching: query, inZoneWith: zoneID, resultsLimit: min(limit, Self.pageSize))
        records += page.matchResults
        while let cursor = page.queryCursor, records.count < limit {
            page = try database.records(continuingMatchFrom: cursor, resultsLimit: min(limit - records.count, Self.pageSize))
            records += page.matchResults
        }
        return records
    }

    static let pageSize = 1_000

    // MARK: Inverses

    /// Keeps the other side of a relationship in step with a change to this side.
    func mirror(_ owner: any PersistentModel, field: String, removed: [AnyObject], added: [AnyObject]) {
        guard !isMirroring else { return }
        let schema = ModelSchema.of(type(of: owner))
        guard let property = schema.byField[field], let link = schema.link(property),
              let inverse = link.inverse, let inverseAccess = inverse.relationship else { return }
        isMirroring = true
        defer { isMirroring = false }
        for object in removed {
            let current = inverseAccess.get(object)
            if current.contains(where: { $0 === owner }) { inverseAccess.set(object, current.filter { $0 !== owner }) }
        }
        for object in added {
            let current = inverseAccess.get(object)
            guard !current.contains(where: { $0 === owner }) else { continue }
            if inverseAccess.isToMany {
                inverseAccess.set(object, current + [owner])
            } else {
                // One-to-one: the object's previous partner loses it.
                if let previous = current.first { link.access.set(previous, link.access.get(previous).filter { $0 !== object }) }
                inverseAccess.set(object, [owner])
            }
        }
    }

    /// The object with this identity, from the context or the store; nil when it does not exist.
    public func model<T: PersistentModel>(for id: PersistentIdentifier, as type: T.Type = T.self) -> T? {
        guard id.recordType == T.recordType else { return nil }
        return resolve(T.self, recordName: id.recordID.recordName)
    }
}

/// A registered object, held weakly.
struct WeakModel {
    weak var object: (any PersistentModel)?

    init(_ object: any PersistentModel) { self.object = object }
}
