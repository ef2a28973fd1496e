@_spi(Tools) import LatticeCore

extension ModelContext {
    /// Writes every insert, change and delete in one atomic `modifyRecords`:
    /// all of it is durable when the call returns, or none of it is written
    /// and the context is as it was before the call.
    ///
    /// An insert writes all its properties; a change writes only the fields
    /// set since the object was read, so concurrent edits of other fields on
    /// other devices are kept. Deletes apply their relationships' rules first.
    /// An object whose record was deleted elsewhere before this save stays
    /// deleted: its changes are dropped (CloudKit's unknownItem), never
    /// written as a record holding only the changed fields.
    public func save() throws(LatticeError) {
        var undo = SaveUndo()
        do {
            try save(recordingIn: &undo)
        } catch {
            undo.revert()
            throw error
        }
    }

    private func save(recordingIn undo: inout SaveUndo) throws(LatticeError) {
        let plan = try deletePlan()
        deleting = plan.all
        defer { deleting = [] }
        applyNullifications(plan.nullify, recordingIn: &undo)

        let store = valueStore
        var saving = RecordsToSave()
        let insertedNow = inserted.filter { !deleting.contains(ObjectIdentifier($0)) }
        var keyed: [(model: any PersistentModel, id: PersistentIdentifier)] = []
        for model in insertedNow {
            let schema = ModelSchema.of(type(of: model))
            try schema.check()
            guard !schema.key.isEmpty else { continue }
            let name = try schema.recordName(forKeyOf: model, store: store)
            let id = PersistentIdentifier(recordType: schema.recordType, recordID: Record.ID(recordName: name, zoneID: zoneID))
            keyed.append((model, id))
            let backing = model._$backing
            let previous = backing.id
            undo.add { backing.id = previous }
            backing.id = id
        }
        for model in insertedNow {
            let schema = ModelSchema.of(type(of: model))
            let record = try self.record(of: model, schema: schema, fields: nil, store: store)
            // Two new objects with one key: one record, the later insert's values.
            saving.put(record)
        }
        let changed = changedObjects.values.filter { model in
            !model._$backing.isDeleted && !model._$backing.changed.isEmpty && !deleting.contains(ObjectIdentifier(model))
                && model._$backing.id.map { !saving.contains($0.recordID) } ?? false
        }
        // Records deleted elsewhere since they were read: no change is written to them.
        let alive = try aliveRecords(changed.compactMap { $0._$backing.id?.recordID } + plan.stored.compactMap { $0._$backing.id?.recordID })
        let gone = changed.filter { !alive.contains($0._$backing.id!.recordID) }
        for model in changed where alive.contains(model._$backing.id!.recordID) {
            let schema = ModelSchema.of(type(of: model))
            let id = model._$backing.id!
            let keyFields = Set(schema.key.map(\.name))
            if !keyFields.isDisjoint(with: model._$backing.changed), try schema.recordName(forKeyOf: model, store: store) != id.recordID.recordName {
                throw LatticeError(.invalidArguments, "the key of \(id) changed: a key names its record, so delete the object and insert a new one")
            }
            let record = try self.record(of: model, schema: schema, fields: model._$backing.changed, store: store)
            guard !record.changedKeys().isEmpty else { continue }
            saving.put(record)
        }
        let links = try linkChanges(of: insertedNow.map { ($0, true) } + changed.filter { alive.contains($0._$backing.id!.recordID) }.map { ($0, false) })
        for record in links.saving where !saving.contains(record.recordID) { saving.put(record) }
        let storeDeletes = plan.stored.compactMap { $0._$backing.id?.recordID }.filter { alive.contains($0) && !saving.contains($0) }
        let deletes = links.deleting.filter { !saving.contains($0) } + storeDeletes
        if !saving.records.isEmpty || !deletes.isEmpty {
            _ = try database.modifyRecords(saving: saving.records, deleting: deletes, savePolicy: .changedKeys, atomically: true)
        }

        // Written: now the objects take their new state.
        undo = SaveUndo()
        for (model, id) in keyed {
            if let other = registered(id), other !== model { other._$backing.changed = [] }
            register(model, as: id)
        }
        for model in insertedNow {
            model._$backing.isPersisted = true
            model._$backing.changed = []
        }
        for model in changed { model._$backing.changed = [] }
        for (model, field, names) in links.baselines { model._$backing.linkBaselines[field] = names }
        for model in plan.stored + plan.unsaved + gone { forget(model) }
        // Saved objects now have records: relationships hold them by name, weakly.
        for model in insertedNow + changed { model._$backing.releaseSavedRelations() }
        inserted = []
        deletedUnsaved = []
        changedObjects = [:]
        deleted = [:]
    }

    /// Marks an object deleted and drops it from the registry (only if the registry holds this very object).
    private func forget(_ model: any PersistentModel) {
        model._$backing.isDeleted = true
        model._$backing.changed = []
        if let id = model._$backing.id, registry[id]?.object === model { registry[id] = nil }
    }

    /// Which of these records exist and are alive in the store now.
    private func aliveRecords(_ ids: [Record.ID]) throws(LatticeError) -> Set<Record.ID> {
        guard !ids.isEmpty else { return [] }
        let database = database
        return try LatticeError.wrap {
            try database.store.read { snapshot in
                Set(try ids.filter { id in try snapshot.record(reaching: id.recordName, in: database.key(id.zoneID, in: snapshot), writing: false).state?.isAlive == true })
            }
        }
    }

    /// The record a save writes: every stored property for a new object, the changed ones otherwise.
    private func record(of model: any PersistentModel, schema: ModelSchema, fields: Set<String>?, store: ModelValueStore) throws(LatticeError) -> Record {
        guard let id = model._$backing.id else { throw LatticeError(.internalError, "an inserted \(schema.recordType) has no identity") }
        var record = Record(recordType: schema.recordType, recordID: id.recordID)
        for property in schema.properties {
            if let fields, !fields.contains(property.name) { continue }
            switch property.kind {
            case .attribute(let access):
                let value = try access.read(model, store)
                if value != nil || fields != nil || !schema.key.isEmpty { record[property.name] = value }
            case .relationship(let access):
                guard let link = schema.link(property), link.isStored else { continue }
                let names = try relatedNames(model, property: property, access: access, schema: schema)
                if let name = names.first {
                    record[property.name] = .reference(RecordReference(recordName: name, action: link.referenceAction))
                } else if fields != nil || !schema.key.isEmpty {
                    record[property.name] = nil
                }
            case .unsupported:
                break
            }
        }
        return record
    }

    /// The record names a relationship holds now; an object not inserted anywhere is an error.
    private func relatedNames(_ model: any PersistentModel, property: AnyModelProperty, access: RelationshipAccess, schema: ModelSchema) throws(LatticeError) -> [String] {
        var names: [String] = []
        for object in access.get(model).compactMap({ $0 as? any PersistentModel }) {
            guard !object._$backing.isDeleted, !deleting.contains(ObjectIdentifier(object)) else { continue }
            guard let name = object._$backing.id?.recordID.recordName else {
                throw LatticeError(.invalidArguments, "\(schema.recordType).\(property.name) holds an object that is not inserted: insert it in this context")
            }
            names.append(name)
        }
        return names
    }

    /// The link records to add and remove for each changed to-many stored as
    /// links: what the app added to or removed from the relationship since it
    /// was read, so links another device added or removed meanwhile stay as
    /// they are (both sides of a pair name the same link record).
    private func linkChanges(of models: [(model: any PersistentModel, isNew: Bool)]) throws(LatticeError)
        -> (saving: [Record], deleting: [Record.ID], baselines: [(any PersistentModel, String, Set<String>)]) {
        var saving: [Record.ID: Record] = [:]
        var deleting = Set<Record.ID>()
        var baselines: [(any PersistentModel, String, Set<String>)] = []
        for (model, isNew) in models {
            let schema = ModelSchema.of(type(of: model))
            guard let own = model._$backing.id?.recordID.recordName else { continue }
            for link in schema.relationships {
                let field = link.property.name
                guard case .links(let links) = link.storage, isNew || model._$backing.changed.contains(field) else { continue }
                var wanted = Set(try relatedNames(model, property: link.property, access: link.access, schema: schema))
                wanted.formUnion(model._$backing.unresolvedNames(field, recordType: link.target.recordType))
                let present = isNew ? [] : Set(try linkedNames(links, of: own))
                let baseline = isNew ? [] : model._$backing.linkBaselines[field] ?? present
                for other in wanted.subtracting(baseline).subtracting(present) {
                    let record = links.record(own: own, other: other, zoneID: zoneID)
                    saving[record.recordID] = record
                }
                for other in baseline.subtracting(wanted).intersection(present) {
                    deleting.insert(links.recordID(own: own, other: other, zoneID: zoneID))
                }
                baselines.append((model, field, wanted))
            }
        }
        return (saving.values.sorted { $0.recordID.recordName < $1.recordID.recordName }, deleting.sorted { $0.recordName < $1.recordName }, baselines)
    }

    /// What deleting the deleted objects means: the objects whose records go
    /// (the deleted ones and what cascades from them), the unsaved ones that
    /// go with them, and the to-one inverses to set nil. Nothing is changed
    /// yet; a `.deny` relationship that still holds objects refuses here.
    private func deletePlan() throws(LatticeError) -> DeletePlan {
        var plan = DeletePlan()
        var walk: [any PersistentModel] = Array(deleted.values) + deletedUnsaved
        var seen = Set(walk.map(ObjectIdentifier.init))
        var index = 0
        while index < walk.count {
            let model = walk[index]
            index += 1
            if model._$backing.isPersisted { plan.stored.append(model) } else { plan.unsaved.append(model) }
            let schema = ModelSchema.of(type(of: model))
            for link in schema.relationships {
                let related = link.access.get(model).compactMap { $0 as? any PersistentModel }.filter { !seen.contains(ObjectIdentifier($0)) }
                switch link.deleteRule {
                case .cascade:
                    for object in related where seen.insert(ObjectIdentifier(object)).inserted { walk.append(object) }
                case .deny:
                    if !related.isEmpty {
                        throw LatticeError(.invalidArguments, "\(model._$backing.id.map(\.description) ?? schema.recordType) cannot be deleted: its \(link.property.name) still holds objects and its delete rule is deny")
                    }
                case .nullify:
                    // Links reference both ends with deleteSelf: the store removes them. A
                    // to-one on the other side is written nil, unless it is part of a key
                    // (a key names its record: the reference stays and reads as nil).
                    guard let inverse = link.inverse, let inverseAccess = inverse.relationship,
                          link.target.link(inverse)?.isStored == true, !inverse.unique else { continue }
                    for object in related { plan.nullify.append((object, inverse.name, inverseAccess, model)) }
                case .noAction:
                    break
                }
            }
        }
        // Children before parents: a cascade's deleteSelf then finds nothing left to delete twice.
        plan.stored.reverse()
        plan.all = Set((plan.stored + plan.unsaved).map(ObjectIdentifier.init))
        plan.nullify.removeAll { plan.all.contains(ObjectIdentifier($0.object)) }
        return plan
    }

    /// Sets the to-one inverses of deleted objects to nil, remembering how to undo it.
    private func applyNullifications(_ edits: [(object: any PersistentModel, field: String, access: RelationshipAccess, owner: any PersistentModel)], recordingIn undo: inout SaveUndo) {
        isMirroring = true
        defer { isMirroring = false }
        for edit in edits {
            let object = edit.object
            let backing = object._$backing
            // The relation's state as it was (a deleted object reads as absent, so the getter would not say).
            let previousState = backing.relations[edit.field]
            let previousChanged = backing.changed
            let wasTracked = changedObjects[ObjectIdentifier(object)] != nil
            undo.add { [self] in
                backing.relations[edit.field] = previousState
                backing.changed = previousChanged
                if !wasTracked { changedObjects[ObjectIdentifier(object)] = nil }
            }
            edit.access.set(object, edit.access.get(object).filter { $0 !== edit.owner })
        }
    }
}

/// The records one save writes, once each: a later record for an ID replaces the earlier one.
struct RecordsToSave {
    private(set) var records: [Record] = []
    private var positions: [Record.ID: Int] = [:]

    func contains(_ id: Record.ID) -> Bool { positions[id] != nil }

    mutating func put(_ record: Record) {
        if let position = positions[record.recordID] {
            records[position] = record
        } else {
            positions[record.recordID] = records.count
            records.append(record)
        }
    }
}

/// The objects a save deletes and the inverses it clears.
struct DeletePlan {
    /// Objects with records, children first.
    var stored: [any PersistentModel] = []
    /// Objects never saved that go with them.
    var unsaved: [any PersistentModel] = []
    var nullify: [(object: any PersistentModel, field: String, access: RelationshipAccess, owner: any PersistentModel)] = []
    var all = Set<ObjectIdentifier>()
}

/// How to put the context's objects back as they were when a save fails.
struct SaveUndo {
    private var steps: [() -> Void] = []

    mutating func add(_ step: @escaping () -> Void) { steps.append(step) }

    func revert() { for step in steps.reversed() { step() } }
}
