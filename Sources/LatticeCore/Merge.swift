/// The outcome of merging one incoming record state into the local one.
package struct MergeOutcome: Sendable {
    package var state: RecordState
    /// Whether `state` differs from the local state (nothing to persist otherwise).
    package var changed: Bool
    /// How many losing writes the merge added to the record's conflicts.
    package var newConflicts: Int
}

/// The merge rule of the contract (DESIGN §2), written once and used for every
/// write: local saves are merged as if they arrived from the local replica.
///
/// `merge` is commutative, associative and idempotent on states: that is what
/// makes replicas converge whatever the order, batching or duplication of
/// delivery.
///
/// Per field it is a multi-value register read as last-writer-wins: a field
/// holds the writes no replica has overwritten yet; the one with the largest
/// stamp is the value, the others are its conflicts. A write that the other
/// side's vector covers but that side no longer holds was overwritten (or its
/// conflict cleared) there, so it is dropped. This needs every stamp of a
/// state to be covered by its vector, which `RecordCodec` checks on decode.
package enum Merge {
    package static func merge(local: RecordState?, incoming: RecordState) -> MergeOutcome {
        guard let local else { return MergeOutcome(state: incoming, changed: true, newConflicts: incoming.conflictCount) }
        if local.causalLength != incoming.causalLength {
            var winner = local.causalLength > incoming.causalLength ? local : incoming
            winner.vector = local.vector.joined(with: incoming.vector)
            let changed = winner != local
            return MergeOutcome(state: winner, changed: changed, newConflicts: changed && winner.causalLength != local.causalLength ? winner.conflictCount : 0)
        }
        var merged = local
        var newConflicts = 0
        if incoming.typeStamp > local.typeStamp || (incoming.typeStamp == local.typeStamp && incoming.recordType > local.recordType) {
            merged.recordType = incoming.recordType
            merged.typeStamp = incoming.typeStamp
        }
        merged.created = min(local.created, incoming.created)
        if let incomingDeleted = incoming.deleted {
            merged.deleted = local.deleted.map { max($0, incomingDeleted) } ?? incomingDeleted
        }
        if local.fields != incoming.fields {
            merged.fields = mergeFields(local: local, incoming: incoming, newConflicts: &newConflicts)
        }
        merged.vector = local.vector.joined(with: incoming.vector)
        merged.reconcileGhosts(with: [local, incoming])
        return MergeOutcome(state: merged, changed: merged != local, newConflicts: newConflicts)
    }

    /// Merges two sorted register lists by name.
    private static func mergeFields(local: RecordState, incoming: RecordState, newConflicts: inout Int) -> [FieldRegister] {
        let mine = local.fields
        let theirs = incoming.fields
        var result: [FieldRegister] = []
        result.reserveCapacity(max(mine.count, theirs.count))
        var i = 0
        var j = 0
        while i < mine.count || j < theirs.count {
            if j == theirs.count || (i < mine.count && mine[i].name < theirs[j].name) {
                result.append(mine[i])
                i += 1
            } else if i == mine.count || theirs[j].name < mine[i].name {
                result.append(theirs[j])
                newConflicts += theirs[j].losers.count
                j += 1
            } else {
                let register = mine[i] == theirs[j] ? mine[i]
                    : mergeRegister(mine[i], seen: local.vector, theirs[j], seen: incoming.vector, newConflicts: &newConflicts)
                result.append(register)
                i += 1
                j += 1
            }
        }
        return result
    }

    /// One field of two states whose vectors are `seenA` and `seenB`.
    static func mergeRegister(_ a: FieldRegister, seen seenA: VersionVector, _ b: FieldRegister, seen seenB: VersionVector, newConflicts: inout Int) -> FieldRegister {
        if !a.hasLosers, !b.hasLosers, a.stamp != b.stamp {
            // The common case, one write on each side: the rule below without building version lists.
            let keepA = !seenB.covers(a.stamp)
            let keepB = !seenA.covers(b.stamp)
            if keepA != keepB { return keepA ? a : b }
            let aWins = a.stamp > b.stamp
            let winner = aWins ? a : b
            guard keepA else { return winner } // both dropped: only a lying peer gets here
            var register = winner
            register.losers = [aWins ? b.winner : a.winner]
            newConflicts += 1
            return register
        }
        let versionsA = [a.winner] + a.losers
        let versionsB = [b.winner] + b.losers
        var kept: [FieldVersion] = []
        kept.reserveCapacity(versionsA.count + versionsB.count)
        for version in versionsA {
            if let twin = versionsB.first(where: { $0.stamp == version.stamp }) {
                // The same write on both sides; different values only from a lying peer.
                kept.append(wins(twin, over: version) ? twin : version)
            } else if !seenB.covers(version.stamp) {
                kept.append(version)
            }
        }
        for version in versionsB where !versionsA.contains(where: { $0.stamp == version.stamp }) && !seenA.covers(version.stamp) {
            kept.append(version)
        }
        // Both sides dropped each other's writes: impossible for honest states,
        // so settle it by the plain last-writer-wins rule, still deterministically.
        if kept.isEmpty { kept = [wins(b.winner, over: a.winner) ? b.winner : a.winner] }
        kept.sort { wins($0, over: $1) }
        newConflicts += kept.dropFirst().filter { loser in !a.losers.contains { $0.stamp == loser.stamp } }.count
        return FieldRegister(name: a.name, winner: kept[0], losers: Array(kept.dropFirst()))
    }

    /// Larger stamp wins; equal stamps (only a buggy or lying peer makes them
    /// with different values) fall back to a total order on values so every
    /// replica still picks the same one.
    static func wins(_ candidate: FieldVersion, over current: FieldVersion) -> Bool {
        if candidate.stamp != current.stamp { return candidate.stamp > current.stamp }
        return ValueOrder.canonicalBytes(current).lexicographicallyPrecedes(ValueOrder.canonicalBytes(candidate))
    }

    package static func merge(_ states: [RecordState]) -> RecordState? {
        guard var result = states.first else { return nil }
        for state in states.dropFirst() { result = merge(local: result, incoming: state).state }
        return result
    }
}

extension RecordState {
    var conflictCount: Int { fields.reduce(0) { $0 + $1.losers.count } }
}

/// A total order on values used only to break exact stamp ties deterministically.
enum ValueOrder {
    static func canonicalBytes(_ value: FieldValue?) -> [UInt8] {
        var writer = BinaryWriter()
        ValueCodec.encode(value, into: &writer)
        return writer.bytes
    }

    static func canonicalBytes(_ version: FieldVersion) -> [UInt8] {
        var writer = BinaryWriter()
        ValueCodec.encode(version.value, into: &writer)
        for incarnation in version.targetIncarnations { writer.varint(incarnation) }
        return writer.bytes
    }
}
