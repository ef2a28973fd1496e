/// Who may write what, where write rights differ between devices: decided
/// from the states alone, so every replica decides alike whichever peer
/// relayed a change (DESIGN §3).
///
/// The public database (CloudKit's rule): anyone may create a record; only
/// its creator's account may change or delete it. A record's incarnation
/// belongs to the writer of its creation stamp. Two accounts that create one
/// name concurrently do not share it: the earlier creation keeps the name
/// and the other is dropped whole, on every replica, in any order.
public enum WriteRights {
    /// What the public database's rules make of an incoming state.
    public enum PublicMerge: Equatable {
        /// Same creator's account: the usual merge.
        case merge
        /// Another account's concurrent creation of this incarnation, and the
        /// local one was first: only the vector grows.
        case keepLocal
        /// Another account's concurrent creation that was first: it replaces the local one.
        case takeIncoming
    }

    /// How `incoming` merges with `local` (same causal length) in the public database.
    public static func publicMerge(local: RecordState, incoming: RecordState, sameAccount: (ReplicaID, ReplicaID) -> Bool) -> PublicMerge {
        guard local.causalLength == incoming.causalLength, !sameAccount(local.created.replica, incoming.created.replica) else { return .merge }
        return incoming.created < local.created ? .takeIncoming : .keepLocal
    }

    /// Why `merged` (what a change set makes of `previous`) holds a write its
    /// writer had no right to in the public database, or nil.
    /// `cascadeEnded`: whether `previous` lost the target of a deleteSelf
    /// reference (its deletion is then any replica's to make).
    public static func publicRefusal(
        merged: RecordState, previous: RecordState?, cascadeEnded: Bool, sameAccount: (ReplicaID, ReplicaID) -> Bool
    ) -> String? {
        let owner = merged.created.replica
        if let previous, previous.isAlive, merged.causalLength > previous.causalLength, !cascadeEnded {
            // Whoever ended the live incarnation: its deleter, or the creator of one after it.
            let ender = !merged.isAlive && merged.causalLength == previous.causalLength + 1 ? merged.deleted ?? merged.created : merged.created
            guard sameAccount(ender.replica, previous.created.replica) else {
                return "record \"\(merged.recordName)\" of the public database was created by replica \(previous.created.replica.short); replica \(ender.replica.short) may not delete or replace it"
            }
        }
        let before = previous?.liveStamps ?? []
        for stamp in merged.liveStamps where !before.contains(stamp) && !sameAccount(stamp.replica, owner) {
            if cascadeEnded, stamp == merged.deleted { continue }
            return "record \"\(merged.recordName)\" of the public database was created by replica \(owner.short); replica \(stamp.replica.short) may not change it"
        }
        return nil
    }

    /// Why a local write by `writer` to `previous` is refused, or nil.
    public static func localRefusal(writing previous: RecordState?, in zone: ZoneKey, by writer: ReplicaID, sameAccount: (ReplicaID, ReplicaID) -> Bool) -> String? {
        guard zone.scope == .public, let previous, previous.isAlive, !sameAccount(previous.created.replica, writer) else { return nil }
        return "record \"\(previous.recordName)\" of the public database was created by another device (replica \(previous.created.replica.short)); only its creator can change or delete it"
    }

    /// Why a change set may not move `zone` to `zoneState`, or nil.
    public static func zoneRefusal(_ zoneState: ZoneState, of zone: ZoneKey) -> String? {
        guard zone.scope == .public else { return nil }
        guard zone.zoneID.isDefault else { return "the public database has only the default zone; the peer sent zone \(zone.zoneID)" }
        guard zoneState.causalLength == 1 else { return "the public database's default zone cannot be deleted" }
        return nil
    }
}

extension ReplicaID {
    /// The first 8 hex digits, as messages show a replica.
    var short: String { String(description.prefix(8)) }
}
