@_spi(Tools) import LatticeCore

/// What a model object keeps beside its properties: its identity, its
/// context, the fields changed since the last save, and the state of its
/// relationships (references read from the record resolve on first access).
///
/// The accessors `@Model` writes call `_get` and `_set`; the overload chosen
/// by the property's type decides whether it is an attribute or a relationship.
public final class ModelBacking {
    /// Held strongly: an object can follow its relationships after the code
    /// that fetched it dropped the context. The context holds saved objects weakly.
    var context: ModelContext?
    var id: PersistentIdentifier?
    var isPersisted = false
    var isDeleted = false
    /// Field names written since the object was fetched or saved.
    var changed: Set<String> = []
    var relations: [String: RelationState] = [:]
    /// True while the context fills the object from its record: those writes are not changes.
    var isLoading = false
    /// For to-manys stored as links: the names linked when the relationship was
    /// read or last saved. A save adds and removes what changed since then.
    var linkBaselines: [String: Set<String>] = [:]

    public init() {}

    /// A relationship's objects. Saved objects are held by record name and
    /// weakly (read again from the store when they were let go), so objects that
    /// point at each other do not keep each other alive; new ones strongly.
    /// An entry whose record has not arrived keeps its name: it is read again on
    /// the next access, and a save does not unlink it.
    enum RelationState {
        case related([Related])
    }

    struct Related {
        var name: String?
        weak var weakObject: AnyObject?
        var strongObject: AnyObject?

        init(_ object: AnyObject) {
            let backing = (object as? any PersistentModel)?._$backing
            name = backing?.isPersisted == true ? backing?.id?.recordID.recordName : nil
            if name != nil { weakObject = object } else { strongObject = object }
        }

        init(name: String) { self.name = name }

        var object: AnyObject? { strongObject ?? weakObject }
    }

    // MARK: Attributes

    public func _get<Owner: PersistentModel, Value>(_ owner: Owner, _ stored: Value, _ field: String) -> Value { stored }

    public func _set<Owner: PersistentModel, Value>(_ owner: Owner, _ storage: inout Value, _ value: Value, _ field: String) {
        storage = value
        noteChange(owner, field)
    }

    func noteChange(_ owner: any PersistentModel, _ field: String) {
        guard !isLoading else { return }
        changed.insert(field)
        context?.noteChanged(owner)
    }

    // MARK: Relationships

    /// The objects a relationship holds now: live ones, and names read again
    /// from the store (a name whose record is not here yet stays, unresolved).
    private func resolve<Target: PersistentModel>(_ field: String, as type: Target.Type) -> [Target]? {
        guard case .related(var entries)? = relations[field] else { return nil }
        var found: [Target] = []
        for index in entries.indices {
            if let object = entries[index].object as? Target {
                if !object._$backing.isDeleted { found.append(object) }
            } else if let name = entries[index].name, let object = context?.resolve(Target.self, recordName: name) {
                entries[index].weakObject = object
                found.append(object)
            }
        }
        relations[field] = .related(entries)
        return found
    }

    enum RelationTarget {
        case name(String)
        /// An object that has no record name yet.
        case unnamed
    }

    /// What a to-one holds, without reading the store: a name (resolved or not), an unnamed new object, or nothing.
    func relationTarget(_ field: String) -> RelationTarget? {
        guard case .related(let entries)? = relations[field], let entry = entries.first else { return nil }
        if let object = entry.object as? any PersistentModel {
            return object._$backing.id.map { .name($0.recordID.recordName) } ?? .unnamed
        }
        return entry.name.map(RelationTarget.name)
    }

    /// Names a relationship holds whose records are not here: a save keeps their
    /// links. A name whose object this context deleted is gone, not waiting.
    func unresolvedNames(_ field: String, recordType: String) -> [String] {
        guard case .related(let entries)? = relations[field] else { return [] }
        return entries.filter { $0.object == nil }.compactMap(\.name).filter { name in
            context?.isDeletedHere(recordType: recordType, recordName: name) != true
        }
    }

    /// Holds saved objects by name and weakly from now on (after a save gave them records).
    func releaseSavedRelations() {
        for (field, state) in relations {
            guard case .related(let entries) = state else { continue }
            relations[field] = .related(entries.map { entry in entry.object.map(Related.init) ?? entry })
        }
    }

    // MARK: To-one

    public func _get<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ stored: Target?, _ field: String) -> Target? {
        guard let found = resolve(field, as: Target.self) else { return stored }
        return found.first
    }

    public func _set<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ storage: inout Target?, _ value: Target?, _ field: String) {
        let old = isLoading ? nil : _get(owner, storage, field)
        // The relation state holds the object; the peer storage stays empty so objects do not hold each other.
        storage = nil
        relations[field] = .related(value.map { [Related($0)] } ?? [])
        guard !isLoading else { return }
        noteChange(owner, field)
        if let value, let context, value._$backing.context == nil { context.insert(value) }
        if old !== value { context?.mirror(owner, field: field, removed: old.map { [$0] } ?? [], added: value.map { [$0] } ?? []) }
    }

    // MARK: To-many

    public func _get<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ stored: [Target], _ field: String) -> [Target] {
        if let found = resolve(field, as: Target.self) { return found }
        // Read on first access, once the object has a record: the objects whose
        // inverse names this one, or the other ends of its links.
        guard let context, isPersisted, let loaded = context.relatedObjects(of: owner, field: field, as: Target.self) else { return stored }
        relations[field] = .related(loaded.found.map { Related($0) } + loaded.missing.map { Related(name: $0) })
        return loaded.found
    }

    public func _set<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ storage: inout [Target], _ value: [Target], _ field: String) {
        let old = isLoading ? [] : _get(owner, storage, field)
        storage = []
        // Links to records that have not arrived were not in the list the app saw: they stay.
        let unresolved = unresolvedNames(field, recordType: Target.recordType).map { Related(name: $0) }
        relations[field] = .related(value.map { Related($0) } + unresolved)
        guard !isLoading else { return }
        noteChange(owner, field)
        if let context { for target in value where target._$backing.context == nil { context.insert(target) } }
        let removed = old.filter { item in !value.contains { $0 === item } }
        let added = value.filter { item in !old.contains { $0 === item } }
        if !removed.isEmpty || !added.isEmpty { context?.mirror(owner, field: field, removed: removed, added: added) }
    }
}
