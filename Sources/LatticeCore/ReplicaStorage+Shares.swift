extension ReplicaStorage {
    /// The share of a shared zone as held here, or nil (none yet, or another database).
    public func share(of zone: ZoneKey) throws -> Share? {
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
    public func setSharePermission(_ permission: SharePermission, of account: String, in zone: ZoneKey) throws -> Bool {
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
            if permission != .readWrite, let vouching = try vouchingField(for: next, in: zone) { changes.append(vouching) }
        }
        let state = LocalWrite.save(
            previous: previous, recordName: Share.recordName, recordType: Share.recordType,
            changes: changes, replacement: .changedKeys, stamp: stamp)
        try store(state, previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: Share.recordName, stamp: stamp, in: zone)
        return true
    }

    /// Vouches for the participants' writes held here that `share` (as just
    /// taken from a peer) requires vouching for and no owner device vouched
    /// for yet: what a device of the owner's account took before it learned
    /// of a revocation another made (`VouchedWrites`). A local write of the
    /// share; nothing when there is nothing to add or this is not an owner device.
    func vouchForHeldWrites(in zone: ZoneKey) throws {
        guard enforcesWriteRights, zone.scope == .shared, let previous = try record(named: Share.recordName, in: zone),
              let share = Share.held(previous, in: zone), let vouching = try vouchingField(for: share, in: zone) else { return }
        let sync = try liveSyncState(of: zone)
        let stamp = nextStamp()
        let state = LocalWrite.save(
            previous: previous, recordName: Share.recordName, recordType: Share.recordType,
            changes: [vouching], replacement: .changedKeys, stamp: stamp)
        try store(state, previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: Share.recordName, stamp: stamp, in: zone)
    }

    /// This device's vouching field once it adds the writes its records show
    /// that `share` requires vouching for and does not vouch for yet; nil when
    /// there are none, or this device is not of the owner's account.
    private func vouchingField(for share: Share, in zone: ZoneKey) throws -> (String, FieldValue?)? {
        let revoked = share.revokedAccounts
        guard !revoked.isEmpty, accounts(of: replica).contains(zone.zoneID.ownerName) else { return nil }
        var missing = VouchedWrites()
        try forEachRecord(in: zone) { state in
            guard state.recordName != Share.recordName else { return }
            for stamp in state.liveStamps {
                let writable = accounts(of: stamp.replica).filter { revoked.contains($0) && share.permission(of: $0, at: stamp.time) == .readWrite }
                guard !writable.isEmpty, writable.allSatisfy({ share.requiresVouching($0, at: stamp.time) }) else { continue }
                let digest = WriteDigest.record(state, stamp: stamp, in: zone)
                if !share.vouched.vouches(for: stamp, digest: digest) { missing.insert(stamp, digest: digest) }
            }
        }
        guard !missing.isEmpty else { return nil }
        let field = VouchedWrites.field(of: replica)
        var mine = VouchedWrites()
        if case .bytes(let bytes)? = try record(named: Share.recordName, in: zone)?.register(named: field)?.value {
            mine = (try? VouchedWrites(decoding: bytes)) ?? VouchedWrites()
        }
        mine.formUnion(missing)
        // A revocation always goes through: past the bound, the latest writes are the ones vouched for
        // (older ones elsewhere already, most likely), and those left out are refused where they are not held.
        mine.keepLatest(VouchedWrites.maximumWrites)
        return (field, .bytes(mine.encoded))
    }
}
