import LatticeCore

extension ModelContext {
    /// Writes every insert, change and delete in one atomic `modifyRecords`:
    /// all of it is durable when the call returns, or none of it is written.
    ///
    /// An insert writes all its properties; a change writes only the fields
    /// set since the object was read, so concurrent edits of other fields on
    /// other devices are kept. Deletes apply their relationships' rules first.
    public func save() throws(LatticeError) {
        let deletions = try applyDeleteRules()
        let store = valueStore
        var saving: [Record] = []
        var savedIndex: [Record.ID: Int] = [:]
        var keyed: [(model: any PersistentModel, id: PersistentIdentifier)] = []
        for model in inserted {
            let schema = ModelSchema.of(type(of: model))
            try schema.check()
            if !schema.key.isEmpty {
                let name = try schema.recordName(forKeyOf: model, store: store)
                let id = PersistentIdentifier(recordType: schema.recordType, recordID: Record.ID(recordName: name, zoneID: zoneID))
                keyed.append((model, id))
                model._$backing.id = id
            }
        }
        for model in inserted {
            let schema = ModelSchema.of(type(of: model))
            let record = try self.record(of: model, schema: schema, fields: nil, store: store)
            // Two new objects with one key: one record, the later insert's values.
            if let index = savedIndex[record.recordID] { saving[index] = record } else {
                savedIndex[record.recordID] = saving.count
                saving.append(record)
            }
        }
        for model in changedObjects.values where !model._$backing.isDeleted && !model._$backing.changed.isEmpty {
            let schema = ModelSchema.of(type(of: model))
            guard let id = model._$backing.id, savedIndex[id.recordID] == nil else { continue }
            if !schema.key.isEmpty, try schema.recordName(forKeyOf: model, store: store) != id.recordID.recordName {
                throw LatticeError(.invalidArguments, "the key of \(id) changed: a key names its record, so delete the object and insert a new one")
            }
            let record = try self.record(of: model, schema: schema, fields: model._$backing.changed, store: store)
            guard !record.changedKeys().isEmpty else { continue }
            savedIndex[record.recordID] = saving.count
            saving.append(record)
        }
        let links = try linkChanges(of: inserted.map { ($0, true) } + changedObjects.values.map { ($0, false) })
        for record in links.saving where savedIndex[record.recordID] == nil {
            savedIndex[record.recordID] = saving.count
            saving.append(record)
        }
        let linkDeletes = links.deleting.filter { savedIndex[$0] == nil }
        let deleting = linkDeletes + deletions.compactMap { $0._$backing.id?.recordID }.filter { savedIndex[$0] == nil }
        if !saving.isEmpty || !deleting.isEmpty {
            _ = try database.modifyRecords(saving: saving, deleting: deleting, savePolicy: .changedKeys, atomically: true)
        }
        for (model, id) in keyed {
            if let other = registered(id), other !== model { other._$backing.changed = [] }
            register(model, as: id)
        }
        for model in inserted {
            model._$backing.isPersisted = true
            model._$backing.changed = []
        }
        for model in changedObjects.values { model._$backing.changed = [] }
        for model in deletions {
            model._$backing.isDeleted = true
            if let id = model._$backing.id { registry[id] = nil }
        }
        // Saved objects now have records: relationships hold them by name, weakly.
        for model in inserted + Array(changedObjects.values) { model._$backing.releaseSavedRelations() }
        inserted = []
        changedObjects = [:]
        deleted = [:]
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
        for object in access.get(model).compactMap({ $0 as? any PersistentModel }) where !object._$backing.isDeleted {
            guard let name = object._$backing.id?.recordID.recordName else {
                throw LatticeError(.invalidArguments, "\(schema.recordType).\(property.name) holds an object that is not inserted: insert it in this context")
            }
            names.append(name)
        }
        return names
    }

    /// The link records to add and remove so that each changed to-many stored
    /// as links holds what its objects hold now (both sides of a pair name the same link).
    private func linkChanges(of models: [(model: any PersistentModel, isNew: Bool)]) throws(LatticeError) -> (saving: [Record], deleting: [Record.ID]) {
        var saving: [Record.ID: Record] = [:]
        var deleting = Set<Record.ID>()
        for (model, isNew) in models where !model._$backing.isDeleted {
            let schema = ModelSchema.of(type(of: model))
            guard let own = model._$backing.id?.recordID.recordName else { continue }
            for link in schema.relationships {
                guard case .links(let links) = link.storage, isNew || model._$backing.changed.contains(link.property.name) else { continue }
                var wanted = Set(try relatedNames(model, property: link.property, access: link.access, schema: schema))
                wanted.formUnion(model._$backing.unresolvedNames(link.property.name))
                let present = isNew ? [] : Set(try linkedNames(links, of: own))
                for other in wanted.subtracting(present) {
                    let record = links.record(own: own, other: other, zoneID: zoneID)
                    saving[record.recordID] = record
                }
                for other in present.subtracting(wanted) { deleting.insert(links.recordID(own: own, other: other, zoneID: zoneID)) }
            }
        }
        return (saving.values.sorted { $0.recordID.recordName < $1.recordID.recordName }, deleting.sorted { $0.recordName < $1.recordName })
    }

    /// The objects a save deletes: the deleted ones and what cascades from
    /// them, the related objects last-found first; nullifies inverses and
    /// refuses a delete a `.deny` relationship holds back.
    private func applyDeleteRules() throws(LatticeError) -> [any PersistentModel] {
        var deletions = Array(deleted.values)
        var seen = Set(deletions.map(ObjectIdentifier.init))
        isMirroring = true
        defer { isMirroring = false }
        var index = 0
        while index < deletions.count {
            let model = deletions[index]
            index += 1
            let schema = ModelSchema.of(type(of: model))
            for link in schema.relationships {
                let related = link.access.get(model).compactMap { $0 as? any PersistentModel }.filter { !$0._$backing.isDeleted || deleted[ObjectIdentifier($0)] != nil }
                switch link.deleteRule {
                case .cascade:
                    for object in related where seen.insert(ObjectIdentifier(object)).inserted {
                        object._$backing.isDeleted = true
                        if object._$backing.isPersisted { deletions.append(object) } else { inserted.removeAll { $0 === object } }
                    }
                case .deny:
                    if related.contains(where: { !seen.contains(ObjectIdentifier($0)) }) {
                        throw LatticeError(.invalidArguments, "\(model._$backing.id.map(\.description) ?? schema.recordType) cannot be deleted: its \(link.property.name) still holds objects and its delete rule is deny")
                    }
                case .nullify:
                    // Links reference both ends with deleteSelf: the store removes them. A
                    // to-one on the other side is written nil.
                    guard let inverse = link.inverse, let inverseAccess = inverse.relationship,
                          link.target.link(inverse)?.isStored == true else { continue }
                    for object in related where !seen.contains(ObjectIdentifier(object)) {
                        inverseAccess.set(object, inverseAccess.get(object).filter { $0 !== model })
                    }
                case .noAction:
                    break
                }
            }
        }
        // Children before parents: a cascade's deleteSelf then finds nothing left to delete twice.
        return deletions.reversed()
    }
}
