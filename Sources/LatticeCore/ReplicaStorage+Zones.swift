extension ReplicaStorage {
    /// Creates the zone, or re-creates it after a delete. Returns false if it exists.
    @discardableResult
    package func createZone(_ zone: ZoneKey) throws -> Bool {
        let existing = try syncState(of: zone)
        if existing?.zoneState.exists == true { return false }
        if let existing { keepClockPastOwnWrites(in: existing) }
        let stamp = nextStamp()
        let zoneState = ZoneState(causalLength: (existing?.zoneState.causalLength ?? 0) + 1, stamp: stamp)
        var sync = existing ?? ZoneSyncState(zoneState: zoneState)
        sync.zoneState = zoneState
        sync.recordLocalWrite(stamp)
        noteLocalWrite(record: nil, stamp: stamp, in: zone)
        try setSyncState(sync, of: zone)
        return true
    }

    /// Ends the zone's incarnation and removes its records, on every replica it reaches.
    package func deleteZone(_ zone: ZoneKey) throws {
        var sync = try liveSyncState(of: zone)
        let stamp = nextStamp()
        sync.zoneState = ZoneState(causalLength: sync.zoneState.causalLength + 1, stamp: stamp)
        sync.recordLocalWrite(stamp)
        noteLocalWrite(record: nil, stamp: stamp, in: zone)
        try removeAllRecords(in: zone, by: stamp)
        try setSyncState(sync, of: zone)
    }

    /// Moves the schema to production. Returns false if it already is.
    @discardableResult
    package func deploySchema() throws -> Bool {
        guard try !schema().isProduction else { return false }
        var deployment = Schema()
        deployment.merge(deployed: nextStamp())
        try mergeSchema(deployment)
        return true
    }

    /// Declares record types and their fields before any record is written (a
    /// typed model's schema), as the first writes would. A field the schema
    /// holds with another type, or anything new once the schema is deployed,
    /// is refused. Returns whether the schema changed (nothing new: no write).
    @discardableResult
    package func declare(recordTypes: [String], fields: [(recordType: String, field: String, type: FieldType)]) throws -> Bool {
        let current = try schema()
        var declaration = Schema()
        for recordType in recordTypes where !current.recordTypes.contains(recordType) {
            if current.isProduction { throw ReplicaError.schema(.unknownRecordType(recordType)) }
            _ = declaration.addRecordType(recordType)
        }
        var stamp: Stamp?
        for (recordType, field, type) in fields {
            if let defined = current.field(field, of: recordType) {
                guard defined.type == type else { throw ReplicaError.schema(.typeMismatch(recordType: recordType, field: field, defined: defined.type, written: type)) }
                continue
            }
            if current.isProduction { throw ReplicaError.schema(.unknownField(recordType: recordType, field: field)) }
            if stamp == nil { stamp = nextStamp() }
            _ = declaration.merge(SchemaField(recordType: recordType, field: field, type: type, stamp: stamp!))
        }
        guard !declaration.isEmpty else { return false }
        return try !mergeSchema(declaration).isEmpty
    }

    /// Adds index kinds to a field the schema has; returns the kinds that were
    /// new (empty when the field had them all). Indexes sync with the schema.
    @discardableResult
    package func addIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws -> IndexKinds {
        guard !kinds.isEmpty else { throw ReplicaError.index("name at least one index kind: queryable, sortable or searchable") }
        let current = try schema()
        guard let definition = current.field(field, of: recordType) else {
            let known = current.recordTypes.contains(recordType)
            throw ReplicaError.indexTargetMissing(known
                ? "\(recordType) has no field \(field); save a record with it first"
                : "there is no record type \(recordType); save a record of it first")
        }
        if let refusal = kinds.refusal(for: definition.type) {
            throw ReplicaError.index("cannot index \(recordType).\(field) (\(definition.type)): \(refusal)")
        }
        let indexed = current.indexedFields(of: recordType)
        if !indexed.contains(where: { $0.field == field }), indexed.count >= Limits.maximumIndexedFieldsPerType {
            throw ReplicaError.index("\(recordType) already has \(indexed.count) indexed fields, the most a record type may have")
        }
        // Adding kinds removed here takes them off the removed ones first.
        let removed = current.removedIndexes[Schema.Key(recordType: recordType, field: field)] ?? []
        if !removed.isDisjoint(with: kinds) { try persistIndexRemovals(removed.subtracting(kinds), field: field, of: recordType) }
        var index = Schema()
        index.merge(index: kinds, field: field, of: recordType)
        try mergeSchema(index)
        return try schema().indexKinds(field, of: recordType).subtracting(current.indexKinds(field, of: recordType))
    }

    /// Removes index kinds from a field here, and keeps them off: a peer's
    /// schema that carries them does not bring them back, adding them here
    /// does. Indexes only make queries faster, so which a device keeps is
    /// its own choice and removals are not sent. Returns the kinds the field
    /// had and no longer has.
    @discardableResult
    package func removeIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws -> IndexKinds {
        guard !kinds.isEmpty else { throw ReplicaError.index("name at least one index kind: queryable, sortable or searchable") }
        let current = try schema()
        let key = Schema.Key(recordType: recordType, field: field)
        guard current.field(field, of: recordType) != nil || current.indexes[key] != nil || current.removedIndexes[key] != nil else {
            throw ReplicaError.indexTargetMissing(current.recordTypes.contains(recordType)
                ? "\(recordType) has no field \(field)" : "there is no record type \(recordType)")
        }
        let had = current.indexKinds(field, of: recordType)
        // Only kinds the field could have are kept off: a kind its type refuses could never be added back to clear it.
        let possible = current.field(field, of: recordType).map { IndexKinds.possible(for: $0.type) } ?? .all
        let removed = (current.removedIndexes[key] ?? []).union(kinds.intersection(possible.union(had)))
        if removed != current.removedIndexes[key] ?? [] { try persistIndexRemovals(removed, field: field, of: recordType) }
        return had.intersection(kinds)
    }
}
