import LatticeCore

/// What a model object keeps beside its properties: its identity, its
/// context, the fields changed since the last save, and the state of its
/// relationships (references read from the record resolve on first access).
///
/// The accessors `@Model` writes call `_get` and `_set`; the overload chosen
/// by the property's type decides whether it is an attribute or a relationship.
public final class ModelBacking {
    weak var context: ModelContext?
    var id: PersistentIdentifier?
    var isPersisted = false
    var isDeleted = false
    /// Field names written since the object was fetched or saved.
    var changed: Set<String> = []
    var relations: [String: RelationState] = [:]
    /// True while the context fills the object from its record: those writes are not changes.
    var isLoading = false

    public init() {}

    enum RelationState {
        /// A to-one as read from the record: the name of the record it references, nil for none.
        case reference(String?)
        /// Resolved or set here. `missing` keeps the names of linked records that
        /// have not arrived, so a save does not unlink them.
        case objects([AnyObject], missing: [String])
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

    // MARK: To-one

    public func _get<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ stored: Target?, _ field: String) -> Target? {
        guard let state = relations[field] else { return stored }
        switch state {
        case .objects(let objects, _):
            guard let target = objects.first as? Target, !target._$backing.isDeleted else { return nil }
            return target
        case .reference(let name):
            guard let name, let context, let target = context.resolve(Target.self, recordName: name) else { return nil }
            relations[field] = .objects([target], missing: [])
            return target
        }
    }

    public func _set<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ storage: inout Target?, _ value: Target?, _ field: String) {
        let old = isLoading ? nil : _get(owner, storage, field)
        storage = value
        relations[field] = .objects(value.map { [$0] } ?? [], missing: [])
        guard !isLoading else { return }
        noteChange(owner, field)
        if let value, let context, value._$backing.context == nil { context.insert(value) }
        if old !== value { context?.mirror(owner, field: field, removed: old.map { [$0] } ?? [], added: value.map { [$0] } ?? []) }
    }

    // MARK: To-many

    public func _get<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ stored: [Target], _ field: String) -> [Target] {
        switch relations[field] {
        case .objects(let objects, _)?:
            return objects.compactMap { object in
                guard let target = object as? Target, !target._$backing.isDeleted else { return nil }
                return target
            }
        case .reference?:
            return []
        case nil:
            // Read on first access, once the object has a record: the objects whose
            // inverse names this one, or the other ends of its links.
            guard let context, isPersisted, let loaded = context.relatedObjects(of: owner, field: field, as: Target.self) else { return stored }
            relations[field] = .objects(loaded.found, missing: loaded.missing)
            return loaded.found
        }
    }

    public func _set<Owner: PersistentModel, Target: PersistentModel>(_ owner: Owner, _ storage: inout [Target], _ value: [Target], _ field: String) {
        let old = isLoading ? [] : _get(owner, storage, field)
        storage = value
        var missing: [String] = []
        if case .objects(_, let previous)? = relations[field] { missing = previous }
        relations[field] = .objects(value, missing: missing)
        guard !isLoading else { return }
        noteChange(owner, field)
        if let context { for target in value where target._$backing.context == nil { context.insert(target) } }
        let removed = old.filter { item in !value.contains { $0 === item } }
        let added = value.filter { item in !old.contains { $0 === item } }
        if !removed.isEmpty || !added.isEmpty { context?.mirror(owner, field: field, removed: removed, added: added) }
    }
}
