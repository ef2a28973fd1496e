/// A losing value of a concurrent write to one field, kept for the app to resolve.
public struct FieldConflict: Hashable, Sendable {
    public var recordName: String
    public var field: String
    /// The losing value; nil when the loser was a removal.
    public var losingValue: FieldValue?
    public var losingStamp: Stamp
    public var winningValue: FieldValue?
    public var winningStamp: Stamp

    public init(recordName: String, field: String, losingValue: FieldValue?, losingStamp: Stamp, winningValue: FieldValue?, winningStamp: Stamp) {
        self.recordName = recordName
        self.field = field
        self.losingValue = losingValue
        self.losingStamp = losingStamp
        self.winningValue = winningValue
        self.winningStamp = winningStamp
    }
}

/// The outcome of merging one incoming record state into the local one.
public struct MergeOutcome: Sendable {
    public var state: RecordState
    /// Whether `state` differs from the local state (nothing to persist otherwise).
    public var changed: Bool
    /// Concurrent field writes whose losers this merge observed.
    public var conflicts: [FieldConflict]
}

/// The merge rule of the contract (DESIGN §2), written once and used for every
/// write: local saves are merged as if they arrived from the local replica.
///
/// `merge` is commutative, associative and idempotent on states: that is what
/// makes replicas converge whatever the order, batching or duplication of
/// delivery. The conflict list is a by-product observed locally, not state.
public enum Merge {
    public static func merge(local: RecordState?, incoming: RecordState) -> MergeOutcome {
        guard let local else { return MergeOutcome(state: incoming, changed: true, conflicts: []) }
        if local.causalLength != incoming.causalLength {
            var winner = local.causalLength > incoming.causalLength ? local : incoming
            winner.vector = local.vector.joined(with: incoming.vector)
            return MergeOutcome(state: winner, changed: winner != local, conflicts: [])
        }
        var merged = local
        var conflicts: [FieldConflict] = []
        if incoming.typeStamp > local.typeStamp || (incoming.typeStamp == local.typeStamp && incoming.recordType > local.recordType) {
            merged.recordType = incoming.recordType
            merged.typeStamp = incoming.typeStamp
        }
        merged.created = min(local.created, incoming.created)
        if let incomingDeleted = incoming.deleted {
            merged.deleted = local.deleted.map { max($0, incomingDeleted) } ?? incomingDeleted
        }
        if local.fields != incoming.fields {
            merged.fields = mergeFields(local: local, incoming: incoming, conflicts: &conflicts)
        }
        merged.vector = local.vector.joined(with: incoming.vector)
        return MergeOutcome(state: merged, changed: merged != local, conflicts: conflicts)
    }

    /// Merges two sorted register lists by name; per name the larger stamp wins.
    private static func mergeFields(local: RecordState, incoming: RecordState, conflicts: inout [FieldConflict]) -> [FieldRegister] {
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
                j += 1
            } else {
                let a = mine[i]
                let b = theirs[j]
                let incomingWins = wins(b, over: a)
                let winner = incomingWins ? b : a
                let loser = incomingWins ? a : b
                result.append(winner)
                // Concurrent: the side holding the winner never saw the loser's write.
                let winnerSide = incomingWins ? incoming.vector : local.vector
                if a != b, !winnerSide.covers(loser.stamp) {
                    conflicts.append(FieldConflict(
                        recordName: local.recordName, field: a.name,
                        losingValue: loser.value, losingStamp: loser.stamp,
                        winningValue: winner.value, winningStamp: winner.stamp))
                }
                i += 1
                j += 1
            }
        }
        return result
    }

    /// Larger stamp wins; equal stamps (only a buggy or lying peer makes them
    /// with different values) fall back to a total order on values so every
    /// replica still picks the same one.
    static func wins(_ candidate: FieldRegister, over current: FieldRegister) -> Bool {
        if candidate.stamp != current.stamp { return candidate.stamp > current.stamp }
        if candidate.value == current.value { return false }
        return ValueOrder.canonicalBytes(candidate.value).lexicographicallyPrecedes(ValueOrder.canonicalBytes(current.value)) == false
    }

    public static func merge(_ states: [RecordState]) -> RecordState? {
        guard var result = states.first else { return nil }
        for state in states.dropFirst() { result = merge(local: result, incoming: state).state }
        return result
    }
}

/// A total order on values used only to break exact stamp ties deterministically.
enum ValueOrder {
    static func canonicalBytes(_ value: FieldValue?) -> [UInt8] {
        var writer = BinaryWriter()
        ValueCodec.encode(value, into: &writer)
        return writer.bytes
    }
}
