/// How a local save treats the fields the app did not set.
@_spi(Tools) public enum FieldReplacement: Sendable {
    /// Write only the given fields (CloudKit's changedKeys and ifServerRecordUnchanged).
    case changedKeys
    /// The given fields become the record's whole field set (CloudKit's allKeys).
    case allKeys
}

/// Local writes, expressed as states to merge: a save or delete stamped `stamp`
/// produces the state its writer intends.
package enum LocalWrite {
    /// The state after saving `changes` (nil values remove fields) onto `previous`.
    /// A written field's conflicts are resolved: its writer saw them.
    /// `targetIncarnation` gives, for a `deleteSelf` target, the causal length
    /// the reference is written against (see `RecordState.cascadeReferences`).
    package static func save(
        previous: RecordState?, recordName: String, recordType: String,
        changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement, stamp: Stamp,
        targetIncarnation: (String) -> UInt64 = { _ in 1 }
    ) -> RecordState {
        var vector = previous?.vector ?? VersionVector()
        vector.advance(stamp.replica, to: stamp.time)
        let sortedChanges = changes.sorted { $0.name < $1.name }
        func written(_ name: String, _ value: FieldValue?) -> FieldRegister {
            FieldRegister(name: name, value: value, stamp: stamp, targetIncarnations: value.cascadeTargets.map(targetIncarnation))
        }
        guard let previous, previous.isAlive else {
            // A new incarnation: empty but for what this write sets.
            let fields = sortedChanges.compactMap { change in change.value.map { written(change.name, $0) } }
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
                fields.append(replacement == .allKeys && old[i].holdsAnything ? written(old[i].name, nil) : old[i])
                i += 1
            } else {
                fields.append(written(sortedChanges[j].name, sortedChanges[j].value))
                if i < old.count, old[i].name == sortedChanges[j].name { i += 1 }
                j += 1
            }
        }
        next.fields = fields
        next.reconcileGhosts(with: [previous])
        return next
    }

    /// Whether saving `changes` onto `previous` would change nothing a reader
    /// can see: same type, same values, no conflict to resolve.
    package static func changesNothing(
        previous: RecordState?, recordType: String, changes: [(name: String, value: FieldValue?)],
        replacement: FieldReplacement, targetIncarnation: (String) -> UInt64 = { _ in 1 }
    ) -> Bool {
        guard let previous, previous.isAlive, previous.recordType == recordType else { return false }
        for (name, value) in changes {
            guard let register = previous.register(named: name) else {
                if value == nil { continue } else { return false }
            }
            guard register.value == value, register.losers.isEmpty,
                  register.targetIncarnations == value.cascadeTargets.map(targetIncarnation) else { return false }
        }
        if replacement == .allKeys {
            let named = Set(changes.map(\.name))
            if previous.fields.contains(where: { !named.contains($0.name) && $0.holdsAnything }) { return false }
        }
        return true
    }

    /// The state after deleting the incarnation `previous` holds.
    package static func delete(previous: RecordState, stamp: Stamp) -> RecordState {
        precondition(previous.isAlive, "only a live record can be deleted")
        var next = previous
        next.causalLength += 1
        next.fields = []
        next.deleted = stamp
        next.vector.advance(stamp.replica, to: stamp.time)
        next.reconcileGhosts(with: [previous])
        return next
    }

    /// The state after resolving every conflict of `previous` as it stands:
    /// the losing writes are dropped, and the stamp makes that a write peers receive.
    package static func clearConflicts(previous: RecordState, stamp: Stamp) -> RecordState {
        var next = previous
        for index in next.fields.indices { next.fields[index].losers = [] }
        next.vector.advance(stamp.replica, to: stamp.time)
        next.reconcileGhosts(with: [previous])
        return next
    }
}

extension FieldRegister {
    /// A value or a conflict: something an allKeys save must overwrite.
    var holdsAnything: Bool { value != nil || hasLosers }
}
