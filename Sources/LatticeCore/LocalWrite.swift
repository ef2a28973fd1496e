/// How a local save treats the fields the app did not set.
public enum FieldReplacement: Sendable {
    /// Write only the given fields (CloudKit's changedKeys and ifServerRecordUnchanged).
    case changedKeys
    /// The given fields become the record's whole field set (CloudKit's allKeys).
    case allKeys
}

/// Local writes, expressed as states to merge: a save or delete stamped `stamp`
/// produces the state its writer intends, and `Merge` folds it in like a remote one.
public enum LocalWrite {
    /// The state after saving `changes` (nil values remove fields) onto `previous`.
    ///
    /// Returns nil with `typeMismatch` when the record exists with another type.
    public static func save(
        previous: RecordState?, recordName: String, recordType: String,
        changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement, stamp: Stamp
    ) -> RecordState {
        var vector = previous?.vector ?? VersionVector()
        vector.advance(stamp.replica, to: stamp.time)
        let sortedChanges = changes.sorted { $0.name < $1.name }
        guard let previous, previous.isAlive else {
            // A new incarnation: empty but for what this write sets.
            let fields = sortedChanges.compactMap { change in
                change.value.map { FieldRegister(name: change.name, value: $0, stamp: stamp) }
            }
            return RecordState(
                recordName: recordName, causalLength: (previous?.causalLength ?? 0) + 1,
                recordType: recordType, typeStamp: stamp, created: stamp, fields: fields, vector: vector)
        }
        var next = previous
        next.vector = vector
        var fields: [FieldRegister] = []
        fields.reserveCapacity(previous.fields.count + changes.count)
        var i = 0
        var j = 0
        let old = previous.fields
        while i < old.count || j < sortedChanges.count {
            if j == sortedChanges.count || (i < old.count && old[i].name < sortedChanges[j].name) {
                if replacement == .allKeys, old[i].value != nil {
                    fields.append(FieldRegister(name: old[i].name, value: nil, stamp: stamp))
                } else {
                    fields.append(old[i])
                }
                i += 1
            } else {
                fields.append(FieldRegister(name: sortedChanges[j].name, value: sortedChanges[j].value, stamp: stamp))
                if i < old.count, old[i].name == sortedChanges[j].name { i += 1 }
                j += 1
            }
        }
        next.fields = fields
        return next
    }

    /// The state after deleting the incarnation `previous` holds.
    public static func delete(previous: RecordState, stamp: Stamp) -> RecordState {
        precondition(previous.isAlive, "only a live record can be deleted")
        var next = previous
        next.causalLength += 1
        next.fields = []
        next.deleted = stamp
        next.vector.advance(stamp.replica, to: stamp.time)
        return next
    }
}
