/// Who may write what, where write rights differ between devices: decided
/// from the states alone, so every replica decides alike whichever peer
/// relayed a change (DESIGN §3).
///
/// The public database (CloudKit's rule): anyone may create a record; only
/// its creator may change or delete it. A state belongs to the writer of its
/// creation stamp, and every write it shows must be that writer's. Two
/// devices that create one name without seeing each other do not share it:
/// the state created first keeps the name whole and the other is dropped, on
/// every replica, in any order. For that order to stay fixed, a name's
/// creation stamp never changes: a deleted public record is not created
/// again (its tombstone keeps the name), so no one takes a name over by
/// deleting and re-creating it, and replicas that saw the delete and those
/// that did not decide alike. That rule now holds only for names stored
/// plain by earlier builds: a name carries its creator
/// (`PublicRecordName`), so two creations of one name are two records, and
/// no stamp lets one device take over another's.
package enum WriteRights {
    /// What the public database's rules make of an incoming state.
    package enum PublicMerge: Equatable {
        /// One creation: the usual merge.
        case merge
        /// Another creation, after the local one: the local state stays.
        case keepLocal
        /// Another creation, before the local one: it replaces the local state.
        case takeIncoming
    }

    /// How `incoming` merges with `local` in the public database: states of
    /// one creation merge; of two, the earlier keeps the name whole (two
    /// creations by one device too, as a store restored from a copy makes).
    package static func publicMerge(local: RecordState, incoming: RecordState) -> PublicMerge {
        guard local.created != incoming.created else { return .merge }
        return incoming.created < local.created ? .takeIncoming : .keepLocal
    }

    /// Why `state` shows a write its writer had no right to make in the
    /// public database (one not by its creator), or nil. Its vector too
    /// names its creator's writes alone: a state's vector says which writes
    /// it holds, and one that named another creator's would keep that
    /// creator's state from being sent where it should win.
    package static func publicRefusal(_ state: RecordState, sameAccount: (ReplicaID, ReplicaID) -> Bool) -> String? {
        let owner = state.created.replica
        if let named = PublicRecordName.parts(of: state.recordName).creator, named != owner {
            return "record \"\(PublicRecordName.plain(state.recordName))\" of the public database is named for replica \(named.short), which created it; a creation by replica \(owner.short) cannot hold that name"
        }
        guard state.causalLength <= 2 else {
            return "record \"\(state.recordName)\" of the public database was created again after its deletion (incarnation \(state.causalLength)); a public record's name is not reused"
        }
        for stamp in state.liveStamps where !sameAccount(stamp.replica, owner) {
            return "record \"\(state.recordName)\" of the public database was created by replica \(owner.short); replica \(stamp.replica.short) may not change it"
        }
        for entry in state.vector.entries where !sameAccount(entry.replica, owner) {
            return "record \"\(state.recordName)\" of the public database was created by replica \(owner.short); its state claims writes of replica \(entry.replica.short)"
        }
        return nil
    }

    /// Why a local write by `writer` to `previous` is refused, or nil: a
    /// public record is its creator's, and a deleted one's name is not reused.
    package static func localRefusal(writing previous: RecordState?, in zone: ZoneKey, by writer: ReplicaID, sameAccount: (ReplicaID, ReplicaID) -> Bool) -> String? {
        guard zone.scope == .public, let previous else { return nil }
        guard previous.isAlive else {
            return "record \"\(previous.recordName)\" of the public database was deleted; a public record's name is not reused (choose another name)"
        }
        guard !sameAccount(previous.created.replica, writer) else { return nil }
        return "record \"\(previous.recordName)\" of the public database was created by another device (replica \(previous.created.replica.short)); only its creator can change or delete it"
    }

    /// Why a change set may not move `zone` to `zoneState`, or nil. A shared
    /// zone is made and deleted by its owner's account alone.
    package static func zoneRefusal(_ zoneState: ZoneState, of zone: ZoneKey, share: Share? = nil, accounts: (ReplicaID) -> Set<String> = { _ in [] }) -> String? {
        if zone.scope == .shared {
            let writer = zoneState.stamp
            if let share, share.accountsLeft(by: writer.replica, at: writer.time, of: accounts(writer.replica)).contains(zone.zoneID.ownerName) {
                return "replica \(writer.replica.short) was removed from account \(zone.zoneID.ownerName), the owner of shared zone \(zone.zoneID); it may not delete or re-create the zone any more"
            }
            guard !accounts(writer.replica).contains(zone.zoneID.ownerName) else { return nil }
            return "shared zone \(zone.zoneID) is made and deleted by its owner's account; replica \(zoneState.stamp.replica.short) is not of it"
        }
        guard zone.scope == .public else { return nil }
        guard zone.zoneID.isDefault else { return "the public database has only the default zone; the peer sent zone \(zone.zoneID)" }
        guard zoneState.causalLength == 1 else { return "the public database's default zone cannot be deleted" }
        return nil
    }
}

extension WriteRights {
    /// Why `state`, of the shared zone `zone`, shows a write its writer had
    /// no right to make, or nil (DESIGN §3, CKShare's permissions): the
    /// owner's account writes anything; a participant writes records, not
    /// the share, while its permission is read-write at the write's stamp.
    /// Writers' accounts come from the memberships the zone's change sets
    /// carry (`AccountMembership`); `share` is the zone's share as held here.
    package static func sharedRefusal(_ state: RecordState, in zone: ZoneKey, share: Share?, accounts: (ReplicaID) -> Set<String>) -> String? {
        let owner = zone.zoneID.ownerName
        let isShare = state.recordName == Share.recordName
        // In the share, a participant writes two things: its own leave field, and the removals of its
        // own account's devices. The owner's history of it (its permissions) is the owner's alone,
        // however the participant's version would read. Each such stamp is excused for those fields alone.
        var excused: [Stamp: Set<String>] = [:]
        var listed = Set<String>()
        var removals: [String: Int] = [:]
        if isShare {
            for register in state.fields {
                if let removal = Share.removalField(register.name) {
                    // An account removes no more devices than its roster holds: a participant cannot fill the share.
                    let from = removal.account ?? owner
                    removals[from, default: 0] += 1
                    if removals[from]! > AccountRoster.maximumStoredEntries {
                        return "the share of zone \(zone.zoneID) records more than \(AccountRoster.maximumStoredEntries) removals from account \(from), more than its roster can hold"
                    }
                    for version in [register.winner] + register.losers {
                        // A removal's field is never its subject's to write: a removed device would undo its own removal.
                        if version.stamp.replica == removal.device {
                            return "replica \(removal.device.short) wrote the field that records its own removal from its account; a device cannot undo its removal"
                        }
                        if let account = removal.account, account != owner, accounts(version.stamp.replica).contains(account) {
                            excused[version.stamp, default: []].insert(register.name)
                        }
                    }
                    continue
                }
                guard let (account, isLeave) = Share.participantField(register.name) else { continue }
                listed.insert(account)
                guard isLeave else { continue }
                for version in [register.winner] + register.losers where accounts(version.stamp.replica).contains(account) {
                    guard case .string(Share.leftValue)? = version.value else {
                        return "replica \(version.stamp.replica.short) wrote its leave of zone \(zone.zoneID) with a value other than \"\(Share.leftValue)\""
                    }
                    excused[version.stamp, default: []].insert(register.name)
                }
            }
            // A stamp that also shows elsewhere (the owner's history, another field, the record's creation)
            // is judged as the owner's write it would be.
            state.forEachPart { stamp, key, _ in
                if excused[stamp]?.contains(key) == false { excused[stamp] = nil }
            }
        }
        func refusal(_ replica: ReplicaID, _ time: HLCTimestamp, leaving: Bool = false, digest: ((Stamp) -> [UInt8])? = nil) -> String? {
            var of = accounts(replica)
            if let share, case let left = share.accountsLeft(by: replica, at: time, of: of), let account = left.sorted().first {
                // Removed from its account (the owner's or a participant's) since: after its mark, it is that account's no more.
                of.subtract(left)
                if of.isEmpty {
                    let whose = account == owner ? "the owner of" : "a participant of"
                    return "replica \(replica.short) was removed from account \(account), \(whose) shared zone \(zone.zoneID); its writes after \(share.removedDevices[replica]![account]!) are refused"
                }
            }
            if of.contains(owner) || leaving { return nil }
            if of.isEmpty {
                return "replica \(replica.short) wrote record \"\(state.recordName)\" of shared zone \(zone.zoneID), and no account it belongs to is known here"
            }
            if isShare { return "the share of zone \(zone.zoneID) is its owner's to change; replica \(replica.short) (account \(of.sorted()[0])) may not" }
            let standing = share?.standing(of: of, at: time) ?? .notReadWrite
            guard let share, standing != .notReadWrite else {
                return "replica \(replica.short) (account \(of.sorted()[0])) may not write record \"\(state.recordName)\" of shared zone \(zone.zoneID): its account was not a read-write participant then"
            }
            // Inside a read-write time the owner has since ended, the stamp is the writer's word alone:
            // the write counts only if a device of the owner's account vouches for it.
            guard standing == .readWriteSinceEnded else { return nil }
            let stamp = Stamp(time: time, replica: replica)
            guard let digest else {
                // A vector entry: a state may say it saw that writer's writes up to what the owner's devices saw.
                if time <= share.vouched.heads[replica] ?? .zero { return nil }
                return "a state of record \"\(state.recordName)\" of shared zone \(zone.zoneID) says it saw writes of replica \(replica.short) up to \(time), inside a read-write time its owner has ended and beyond what any device of the owner's account vouches for"
            }
            if share.vouched.vouches(for: stamp, digest: digest(stamp)) { return nil }
            return "replica \(replica.short) (account \(of.sorted()[0])) wrote record \"\(state.recordName)\" of shared zone \(zone.zoneID) stamped inside a read-write time its owner has ended, and no device of the owner's account vouches for that write: it was made after the revocation, with its stamp set back"
        }
        for stamp in state.liveStamps {
            let digest = { (stamp: Stamp) in WriteDigest.record(state, stamp: stamp, in: zone) }
            if let refusal = refusal(stamp.replica, stamp.time, leaving: excused[stamp] != nil, digest: digest) { return refusal }
        }
        for entry in state.vector.entries {
            // A participant's entry in the share's vector stays once its leave was overwritten.
            if let refusal = refusal(entry.replica, entry.time, leaving: isShare && !listed.isDisjoint(with: accounts(entry.replica))) { return refusal }
        }
        return nil
    }

    /// What a revocation in its share voids in `state`.
    package struct RevokedWrites: Equatable, Sendable {
        /// Participants' writes stamped inside a read-write time the owner
        /// ended since, which no owner device vouches for (`VouchedWrites`).
        package var unvouched = Set<Stamp>()
        /// Participants' writes stamped after the owner ended their read-write time.
        package var afterRevocation = Set<Stamp>()
        /// Vector entries of participants beyond their read-write time: how
        /// far each may go (zero: not at all).
        package var vectorLimits: [ReplicaID: HLCTimestamp] = [:]
        /// Of those, the ones inside the read-write time the owner ended: how
        /// far the state saw the participant's writes (what an owner device vouches for as its head).
        package var unvouchedHeads: [ReplicaID: HLCTimestamp] = [:]

        package var isEmpty: Bool { unvouched.isEmpty && afterRevocation.isEmpty && vectorLimits.isEmpty }
    }

    /// What a revocation in `share` voids in `state`: what an honest replica
    /// took before it learned of the revocation (its writer had not learned
    /// of it either), and drops then, as every other replica refuses it.
    package static func revokedWrites(of state: RecordState, in zone: ZoneKey, share: Share, accounts: (ReplicaID) -> Set<String>) -> RevokedWrites {
        var result = RevokedWrites()
        // Writes of devices removed from their account (every account they are of), after their marks: the share's too.
        // (Of a device removed from several, the last of their marks: past it, it is none of them.)
        func removedDevice(_ replica: ReplicaID) -> HLCTimestamp? {
            guard let marks = share.removedDevices[replica] else { return nil }
            let of = accounts(replica)
            guard !of.isEmpty, of.allSatisfy({ marks[$0] != nil }) else { return nil }
            return of.compactMap { marks[$0] }.max()
        }
        for stamp in state.liveStamps {
            if let mark = removedDevice(stamp.replica), stamp.time > mark { result.afterRevocation.insert(stamp) }
        }
        for entry in state.vector.entries {
            if let mark = removedDevice(entry.replica), entry.time > mark { result.vectorLimits[entry.replica] = mark }
        }
        guard state.recordName != Share.recordName else { return result }
        let revoked = share.revokedAccounts
        func revokedParticipant(_ replica: ReplicaID) -> Set<String>? {
            let of = accounts(replica)
            return of.contains(zone.zoneID.ownerName) || of.isDisjoint(with: revoked) ? nil : of
        }
        for stamp in state.liveStamps {
            guard let of = revokedParticipant(stamp.replica) else { continue }
            switch share.standing(of: of, at: stamp.time) {
            case .notReadWrite: result.afterRevocation.insert(stamp)
            case .readWrite: break
            case .readWriteSinceEnded:
                if !share.vouched.vouches(for: stamp, digest: WriteDigest.record(state, stamp: stamp, in: zone)) { result.unvouched.insert(stamp) }
            }
        }
        for entry in state.vector.entries {
            guard let of = revokedParticipant(entry.replica) else { continue }
            switch share.standing(of: of, at: entry.time) {
            case .readWrite: continue
            case .readWriteSinceEnded:
                // Inside the read-write time: no further than what the owner's devices saw.
                let head = share.vouched.heads[entry.replica] ?? .zero
                if entry.time > head {
                    result.vectorLimits[entry.replica] = head
                    result.unvouchedHeads[entry.replica] = entry.time
                }
                continue
            case .notReadWrite: break
            }
            // The end of its last read-write time before the entry, and within it what the owner's devices saw.
            var limit = HLCTimestamp.zero
            for account in of {
                guard let history = share.participants[account] else { continue }
                for (change, next) in zip(history, history.dropFirst()) where change.permission == .readWrite && next.time <= entry.time && next.time > .zero {
                    var end = HLCTimestamp(rawValue: next.time.rawValue - 1)
                    if share.requiresVouching(account, at: end) { end = min(end, share.vouched.heads[entry.replica] ?? .zero) }
                    limit = max(limit, end)
                }
            }
            result.vectorLimits[entry.replica] = limit
        }
        return result
    }

    /// Why this replica, of `accounts`, may not write record `name` of the
    /// shared zone `zone` now, or nil.
    package static func sharedLocalRefusal(named name: String, in zone: ZoneKey, share: Share?, accounts: Set<String>, at time: HLCTimestamp) -> String? {
        if accounts.contains(zone.zoneID.ownerName) { return nil }
        if name == Share.recordName { return "the share of zone \(zone.zoneID) is its owner's to change" }
        let permission = accounts.lazy.compactMap { share?.permission(of: $0, at: time) }.first
        switch permission {
        case .readWrite:
            // A clock behind the owner's revocation stamps inside the read-write time it ended: no owner
            // device vouches for such a write, and every replica would refuse it.
            guard share?.standing(of: accounts, at: time) == .readWriteSinceEnded else { return nil }
            return "this account's read-write time in shared zone \(zone.zoneID) has ended (downgraded or removed by its owner); this device's clock is behind that change, so check the system clock"
        case .readOnly: return "zone \(zone.zoneID) is shared with this account read-only; its owner can make it read-write (`lattice share ZONE --with ACCOUNT`)"
        case .removed, nil: return "this account is not a participant of shared zone \(zone.zoneID) (any more)"
        }
    }
}

extension ReplicaID {
    /// The first 8 hex digits, as messages show a replica.
    var short: String { String(description.prefix(8)) }
}
