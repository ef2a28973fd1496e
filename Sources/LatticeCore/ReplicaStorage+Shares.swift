extension ReplicaStorage {
    /// The share of a shared zone as held here, or nil (none yet, or another database).
    package func share(of zone: ZoneKey) throws -> Share? {
        guard zone.scope == .shared else { return nil }
        return Share.held(try record(named: Share.recordName, in: zone), in: zone)
    }

    /// Why this replica may not write record `name` (now `previous`) of
    /// `zone`, or nil: the public database's creator rule, a shared zone's
    /// permissions (`WriteRights`).
    func localWriteRefusal(writing previous: RecordState?, named name: String, in zone: ZoneKey) throws -> String? {
        guard enforcesWriteRights else { return nil }
        switch zone.scope {
        case .private:
            return nil
        case .public:
            return WriteRights.localRefusal(writing: previous, in: zone, by: replica, sameAccount: sameAccount)
        case .shared:
            // The write's stamp comes next, at or after this.
            let now = max(clock.last, HLCTimestamp(milliseconds: wallClockNow(), counter: 0))
            return WriteRights.sharedLocalRefusal(named: name, in: zone, share: try share(of: zone), accounts: accounts(of: replica), at: now)
        }
    }

    /// Sets `account`'s permission in the share of `zone` (a zone of this
    /// replica's account): a local write of the share record, as the owner's.
    /// A participant may set its own account's to `.removed` (it leaves),
    /// which writes its leave field. Returns false when the account already
    /// has that permission.
    @discardableResult
    package func setSharePermission(_ permission: SharePermission, of account: String, in zone: ZoneKey) throws -> Bool {
        let sync = try liveSyncState(of: zone)
        let previous = try record(named: Share.recordName, in: zone)
        let current = previous.flatMap { Share.held($0, in: zone) }?.currentPermission(of: account)
        // A participant may leave: the one change to the share that is not its owner's.
        let ownsZone = accounts(of: replica).contains(zone.zoneID.ownerName)
        let leaving = permission == .removed && !ownsZone && accounts(of: replica).contains(account) && previous?.isAlive == true
        if !leaving, let refusal = try localWriteRefusal(writing: previous, named: Share.recordName, in: zone) { throw ReplicaError.permission(refusal) }
        if current == permission || (current == nil && permission == .removed) { return false }
        let stamp = nextStamp()
        var changes: [(String, FieldValue?)] = []
        if leaving {
            changes.append((Share.leftField(of: account), .string(Share.leftValue)))
        } else {
            let field = Share.field(of: account)
            var text: String?
            if let previous, previous.isAlive, case .string(let held)? = previous.register(named: field)?.value { text = held }
            changes.append((field, .string(Share.appending(permission, at: stamp.time, to: text))))
            // A downgrade or removal names, in the same signed write, the participant's writes held here.
            var next = previous.flatMap { Share.held($0, in: zone) } ?? Share(owner: zone.zoneID.ownerName)
            next.participants[account, default: []].append(Share.Change(permission: permission, time: stamp.time))
            if permission != .readWrite, let vouching = try vouchingField(for: next, in: zone) {
                guard let vouching = vouching.field else {
                    throw ReplicaError.permission("the participants whose read-write time ended in zone \(zone.zoneID) wrote \(vouching.count) writes this device holds, more than one share can vouch for (\(VouchedWrites.maximumWrites)); nothing was changed. Copy the zone's records to a new zone and share that instead")
                }
                changes.append(vouching)
            }
        }
        try writeShare(changes, previous: previous, stamp: stamp, sync: sync, in: zone)
        return true
    }

    /// Writes into the share of `zone` (a zone this replica's account owns
    /// or takes part in) the devices its account removed, each with its
    /// removal's mark, where the share lacks one or holds another: other
    /// accounts never hold this account's roster, and judge the removed
    /// device's later writes by this (`Share.removedDevices`). Returns
    /// whether it wrote.
    @discardableResult
    package func recordAccountRemovals(_ removals: [ReplicaID: HLCTimestamp], of account: String, in zone: ZoneKey) throws -> Bool {
        guard enforcesWriteRights, zone.scope == .shared,
              let previous = try record(named: Share.recordName, in: zone), let share = Share.held(previous, in: zone) else { return false }
        let changes: [(String, FieldValue?)] = removals.filter { $0.key != replica && share.removedDevices[$0.key]?[account] != $0.value }
            .sorted { $0.key.description < $1.key.description }
            .map { (Share.removedField(of: $0.key, from: account), .string(String($0.value.rawValue))) }
        guard !changes.isEmpty else { return false }
        try writeShare(changes, previous: previous, stamp: nextStamp(), sync: try liveSyncState(of: zone), in: zone)
        return true
    }

    /// A local write of the share record: `changes` under `stamp`.
    private func writeShare(_ changes: [(String, FieldValue?)], previous: RecordState?, stamp: Stamp, sync: ZoneSyncState, in zone: ZoneKey) throws {
        let state = LocalWrite.save(
            previous: previous, recordName: Share.recordName, recordType: Share.recordType,
            changes: changes, replacement: .changedKeys, stamp: stamp)
        try store(state, previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: Share.recordName, stamp: stamp, in: zone)
    }

    /// What a replica does on learning of a share change from a peer (and a
    /// node once at its start, for shares revoked under an earlier build): a
    /// device of the owner's account vouches for the writes it took before it
    /// learned of a revocation, then, like any other device, drops what the
    /// revocation voids (`stripRevokedWrites`). Returns how many records it changed.
    ///
    /// `notVouching`: records that came in the same change set as the share
    /// change, ahead of it: a modified client's order, not what this device
    /// held before it learned of the revocation.
    package func settleRevocations(in zone: ZoneKey, notVouching: Set<String> = []) throws -> Int {
        guard enforcesWriteRights, zone.scope == .shared, let previous = try record(named: Share.recordName, in: zone),
              let share = Share.held(previous, in: zone), !share.revokedAccounts.isEmpty || !share.removedDevices.isEmpty else { return 0 }
        guard accounts(of: replica).contains(zone.zoneID.ownerName) else { return try stripRevokedWrites(in: zone, share: share) }
        if try vouchForHeldWrites(in: zone, share: share, previous: previous, notVouching: notVouching) == false {
            // Past what one share can vouch for: this device keeps what it holds, and drops nothing it could not vouch for.
            return try stripRevokedWrites(in: zone, share: share, keepingUnvouched: true)
        }
        // What no vouching saves: writes stamped after the revocation, which this device took before it learned of it.
        return try stripRevokedWrites(in: zone, share: try self.share(of: zone) ?? share)
    }

    /// Vouches for the participants' writes held here that `share` requires
    /// vouching for and no owner device vouched for yet: what a device of the
    /// owner's account took before it learned of a revocation another made
    /// (`VouchedWrites`). A local write of the share; nothing when there is nothing to add.
    /// Returns false when the writes to vouch for are more than a share holds.
    private func vouchForHeldWrites(in zone: ZoneKey, share: Share, previous: RecordState, notVouching: Set<String>) throws -> Bool {
        guard let vouching = try vouchingField(for: share, in: zone, notVouching: notVouching) else { return true }
        guard let vouching = vouching.field else { return false }
        let sync = try liveSyncState(of: zone)
        try writeShare([vouching], previous: previous, stamp: nextStamp(), sync: sync, in: zone)
        return true
    }

    /// This device's vouching field once it adds the writes its records show
    /// that `share` requires vouching for and does not vouch for yet; nil when
    /// there are none, or this device is not of the owner's account; a nil
    /// field, with how many writes it would vouch for, past the bound.
    private func vouchingField(for share: Share, in zone: ZoneKey, notVouching: Set<String> = []) throws -> (field: (String, FieldValue?)?, count: Int)? {
        guard accounts(of: replica).contains(zone.zoneID.ownerName) else { return nil }
        var missing = VouchedWrites()
        try forEachRecord(in: zone) { state in
            guard !notVouching.contains(state.recordName) else { return }
            let voided = WriteRights.revokedWrites(of: state, in: zone, share: share, accounts: accounts(of:))
            for stamp in voided.unvouched {
                missing.insert(stamp, digest: WriteDigest.record(state, stamp: stamp, in: zone))
            }
            // How far this device saw each revoked participant's writes (inside its read-write time).
            for (replica, time) in voided.unvouchedHeads { missing.noteHead(replica, at: time) }
        }
        guard !missing.isEmpty else { return nil }
        let field = VouchedWrites.field(of: replica)
        var mine = VouchedWrites()
        if case .bytes(let bytes)? = try record(named: Share.recordName, in: zone)?.register(named: field)?.value {
            mine = (try? VouchedWrites(decoding: bytes)) ?? VouchedWrites()
        }
        mine.formUnion(missing)
        // Never cut short: a write left out would be void everywhere it is not held.
        guard mine.count <= VouchedWrites.maximumWrites else { return (nil, mine.count) }
        return ((field, .bytes(mine.encoded)), mine.count)
    }

    /// A device that learns of a revocation drops the revoked participant's
    /// writes it took before that the revocation voids — made after it, or
    /// inside the read-write time it ended and vouched for by no owner device
    /// — which every other replica refuses (Keyhive's rule: a write
    /// not in a revocation's past is void everywhere, its writer's devices
    /// too): a record one created goes whole, otherwise the field versions
    /// they wrote go. What they had overwritten comes back from the peers:
    /// the zone's vector is lowered below what those records showed (this
    /// replica's own writes aside) and its resume points go, so that peers
    /// stream their versions of the records again. Returns how many records changed.
    func stripRevokedWrites(in zone: ZoneKey, share: Share, keepingUnvouched: Bool = false) throws -> Int {
        var found: [(state: RecordState, revoked: WriteRights.RevokedWrites)] = []
        try forEachRecord(in: zone) { state in
            var revoked = WriteRights.revokedWrites(of: state, in: zone, share: share, accounts: accounts(of:))
            if keepingUnvouched { revoked.unvouched = [] }
            if !revoked.isEmpty { found.append((state, revoked)) }
        }
        guard !found.isEmpty, var sync = try syncState(of: zone) else { return 0 }
        var ownToRefetch = Set<String>()
        var ownEarliest: HLCTimestamp?
        for (state, revoked) in found {
            let refused = revoked.unvouched.union(revoked.afterRevocation)
            // Peers' versions of the record come again, from its writers' first writes it shows on (the
            // dropped writes too: an owner device that took them before it learned may vouch for them yet).
            var earliest: [ReplicaID: HLCTimestamp] = [:]
            for entry in state.vector.entries { earliest[entry.replica] = entry.time }
            state.forEachPart { stamp, _, _ in earliest[stamp.replica] = min(earliest[stamp.replica] ?? stamp.time, stamp.time) }
            for ghost in state.ghosts { earliest[ghost.stamp.replica] = min(earliest[ghost.stamp.replica] ?? ghost.stamp.time, ghost.stamp.time) }
            // A void writer's valid writes on the record, which the void state replaced, are stamped since its
            // first read-write grant: from there its writes stream again.
            for writer in Set(refused.map(\.replica)).union(revoked.vectorLimits.keys) {
                let grants = accounts(of: writer).compactMap { share.participants[$0]?.first { $0.permission == .readWrite }?.time }
                if let granted = grants.min() { earliest[writer] = min(earliest[writer] ?? granted, granted) }
            }
            // This device's own entry too when its own writes were void: it writes nothing more here now
            // (read-only or removed), so nothing raises the entry again before its valid writes come back.
            let ownVoid = refused.contains { $0.replica == replica } || revoked.vectorLimits[replica] != nil
            for (writer, time) in earliest where writer != replica || ownVoid { sync.vector.lower(writer, below: time) }
            var stripped = state.removingWrites(refused)
            // A field whose every version was void lost what they overwrote, which no peer resends over a
            // vector covering it: the record goes whole and comes back whole from the peers (with this device's
            // own writes to it that they hold: one not sent yet goes with it).
            let lostField = stripped.fields.count < state.fields.count
            // A void version that overwrote a valid one here leaves only that one's ghost: its value, a
            // loser where the void write was never seen, comes back whole from the peers alone.
            let voidFields = Set(state.fields.filter { register in ([register.winner] + register.losers).contains { refused.contains($0.stamp) } }.map(\.name))
            let overwroteValid = state.ghosts.contains { voidFields.contains($0.key) && !refused.contains($0.stamp) }
            if lostField || overwroteValid || refused.contains(state.created) || refused.contains(state.typeStamp) || state.deleted.map(refused.contains) == true {
                // No residue stays: the delete that ended an earlier incarnation may be void too. The peers'
                // versions come again (the vector is lowered above), and a tombstone among them wins as it should.
                // Valid writes of this replica's own in it come again only if it tells peers it lacks them.
                var own: [HLCTimestamp] = state.ghosts.filter { $0.stamp.replica == replica && !refused.contains($0.stamp) }.map(\.stamp.time)
                state.forEachPart { stamp, _, _ in if stamp.replica == replica, !refused.contains(stamp) { own.append(stamp.time) } }
                if let first = own.min() {
                    ownToRefetch.insert(state.recordName)
                    ownEarliest = min(ownEarliest ?? first, first)
                }
                try forget(state, in: zone)
                continue
            }
            for (writer, limit) in revoked.vectorLimits {
                stripped.vector.lower(writer, below: HLCTimestamp(rawValue: limit.rawValue + 1))
            }
            try store(stripped, previous: state, in: zone)
        }
        try setSyncState(sync, of: zone)
        try forgetResumePoints(in: zone)
        if let ownEarliest { try noteOwnWritesToRefetch(ownToRefetch, from: ownEarliest, in: zone) }
        return found.count
    }
}

extension RecordState {
    /// The state without the field versions and ghosts `stamps` wrote, its
    /// vector naming each of their writers only below its first of them.
    func removingWrites(_ stamps: Set<Stamp>) -> RecordState {
        var state = self
        state.fields = fields.compactMap { register in
            let versions = ([register.winner] + register.losers).filter { !stamps.contains($0.stamp) }.sorted { Merge.wins($0, over: $1) }
            guard let winner = versions.first else { return nil }
            return FieldRegister(name: register.name, winner: winner, losers: Array(versions.dropFirst()))
        }
        state.ghosts = ghosts.filter { !stamps.contains($0.stamp) }
        // Below the first void write of each writer: its earlier writes, overwritten or not, stay seen.
        for writer in Set(stamps.map(\.replica)) {
            state.vector.lower(writer, below: stamps.filter { $0.replica == writer }.map(\.time).min()!)
        }
        return state
    }
}
