/// What a local save did.
package struct SaveOutcome: Sendable {
    /// The record as stored after the save.
    package var state: RecordState
    /// False when the save would have changed nothing and was not written.
    package var changed: Bool
}

extension ReplicaStorage {
    /// Saves fields of a record (nil values remove fields): the local write of
    /// DESIGN §2, checked against the schema, which grows just in time.
    /// A save that changes nothing a reader can see is not written.
    /// `knownPrevious`: the record's state as the caller just read it in this
    /// transaction (`.some(nil)` when absent), so it is not read again.
    @discardableResult
    package func save(
        _ name: String, type: String, in zone: ZoneKey, changes: [(name: String, value: FieldValue?)],
        replacement: FieldReplacement = .changedKeys, knownPrevious: RecordState?? = .none
    ) throws -> SaveOutcome {
        let sync = try liveSyncState(of: zone)
        let previous = try knownPrevious ?? record(named: name, in: zone)
        if zone.scope == .shared, name == Share.recordName { throw ReplicaError.permission("record \(name) is the zone's share; it changes through sharing (`lattice share`)") }
        if let refusal = try localWriteRefusal(writing: previous, named: name, in: zone) { throw ReplicaError.permission(refusal) }
        if let previous, previous.isAlive, previous.recordType != type {
            throw ReplicaError.recordTypeMismatch(record: name, stored: previous.recordType, requested: type)
        }
        let schema = try self.schema()
        let undefined: [(name: String, type: FieldType)]
        do { undefined = try schema.check(recordType: type, values: changes) } catch { throw ReplicaError.schema(error) }
        let incarnations = try targetIncarnations(of: changes, from: name, in: zone)
        let incarnation = { (target: String) in incarnations[target] ?? 1 }
        if LocalWrite.changesNothing(previous: previous, recordType: type, changes: changes, replacement: replacement, targetIncarnation: incarnation) {
            return SaveOutcome(state: previous!, changed: false)
        }
        let stamp = nextStamp()
        if !undefined.isEmpty || !schema.recordTypes.contains(type) {
            var definitions = Schema()
            definitions.addRecordType(type)
            for (field, fieldType) in undefined { definitions.merge(SchemaField(recordType: type, field: field, type: fieldType, stamp: stamp)) }
            try mergeSchema(definitions)
        }
        // A record created again after its tombstone was collected starts the incarnation after it.
        let residue = previous == nil ? try self.residue(named: name, in: zone) : nil
        let state = LocalWrite.save(
            previous: previous ?? residue?.tombstone(named: name, type: type), recordName: name, recordType: type, changes: changes,
            replacement: replacement, stamp: stamp, targetIncarnation: incarnation)
        try store(state, previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: name, stamp: stamp, in: zone)
        return SaveOutcome(state: state, changed: true)
    }

    /// For each `deleteSelf` target the changes name: the incarnation a reference
    /// to it is written against — the live one, else the next one to be created.
    private func targetIncarnations(of changes: [(name: String, value: FieldValue?)], from source: String, in zone: ZoneKey) throws -> [String: UInt64] {
        var incarnations: [String: UInt64] = [:]
        for change in changes {
            for target in change.value.cascadeTargets where incarnations[target] == nil {
                let length = try causalLength(of: PublicRecordName.target(of: target, fromSource: source, in: zone), in: zone)
                incarnations[target] = length % 2 == 1 ? length : length + 1
            }
        }
        return incarnations
    }

    /// Deletes the live records among `names`, in order, then every record the
    /// deletes cascade to. Returns the names deleted, the requested ones first.
    @discardableResult
    package func delete(_ names: [String], in zone: ZoneKey) throws -> [String] {
        var sync = try liveSyncState(of: zone)
        var deleted: [String] = []
        var candidates = Set<String>()
        for name in names {
            guard let previous = try record(named: name, in: zone), previous.isAlive else { continue }
            if zone.scope == .shared, name == Share.recordName { throw ReplicaError.permission("record \(name) is the zone's share; it changes through sharing (`lattice share`)") }
            if let refusal = try localWriteRefusal(writing: previous, named: name, in: zone) { throw ReplicaError.permission(refusal) }
            candidates.formUnion(try delete(previous, in: zone, sync: &sync))
            deleted.append(name)
        }
        if !deleted.isEmpty { try setSyncState(sync, of: zone) }
        return deleted + (try cascade(from: candidates, in: zone))
    }

    /// Ends a live record's incarnation as a local write; returns the records
    /// referencing it with deleteSelf, which the cascade looks at next.
    private func delete(_ previous: RecordState, in zone: ZoneKey, sync: inout ZoneSyncState) throws -> [String] {
        let stamp = nextStamp()
        try store(LocalWrite.delete(previous: previous, stamp: stamp), previous: previous, in: zone)
        sync.recordLocalWrite(stamp)
        noteLocalWrite(record: previous.recordName, stamp: stamp, in: zone)
        return try cascadeSources(of: PublicRecordName.referenced(previous.recordName, in: zone), in: zone)
    }

    /// Resolves the record's conflicts as they stand (a write that syncs).
    /// Returns false when it has none.
    @discardableResult
    package func clearConflicts(of name: String, in zone: ZoneKey) throws -> Bool {
        let sync = try liveSyncState(of: zone)
        guard let previous = try record(named: name, in: zone), previous.isAlive, previous.hasConflicts else { return false }
        if let refusal = try localWriteRefusal(writing: previous, named: name, in: zone) { throw ReplicaError.permission(refusal) }
        let stamp = nextStamp()
        try store(LocalWrite.clearConflicts(previous: previous, stamp: stamp), previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: name, stamp: stamp, in: zone)
        return true
    }

    /// Deletes, level by level, the live candidates whose `deleteSelf` target
    /// lost the incarnation they referenced, then what references those.
    /// Each level goes in name order, so the stamps a cascade takes are a
    /// function of the state alone. Returns the names deleted.
    func cascade(from candidates: Set<String>, in zone: ZoneKey) throws -> [String] {
        var deleted: [String] = []
        var level = candidates
        while !level.isEmpty {
            var victims: [RecordState] = []
            for name in level.sorted() {
                guard let state = try record(named: name, in: zone), state.isAlive else { continue }
                // Another account's public record is its creator's to delete: its cascade comes from there.
                if zone.scope == .public, enforcesWriteRights, !sameAccount(state.created.replica, replica) { continue }
                // A participant without the right to write leaves a shared zone's cascades to those with it.
                if zone.scope == .shared, try localWriteRefusal(writing: state, named: name, in: zone) != nil { continue }
                for (target, incarnation) in state.cascadeReferences
                where try causalLength(of: PublicRecordName.target(of: target, fromSource: state.recordName, in: zone), in: zone) > incarnation {
                    victims.append(state)
                    break
                }
            }
            guard !victims.isEmpty else { break }
            var sync = try liveSyncState(of: zone)
            var next = Set<String>()
            for victim in victims {
                next.formUnion(try delete(victim, in: zone, sync: &sync))
                deleted.append(victim.recordName)
            }
            try setSyncState(sync, of: zone)
            level = next
        }
        return deleted
    }
}
