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
        let change: (String, FieldValue?)
        if leaving {
            change = (Share.leftField(of: account), .string(Share.leftValue))
        } else {
            let field = Share.field(of: account)
            var text: String?
            if let previous, previous.isAlive, case .string(let held)? = previous.register(named: field)?.value { text = held }
            change = (field, .string(Share.appending(permission, at: stamp.time, to: text)))
        }
        let state = LocalWrite.save(
            previous: previous, recordName: Share.recordName, recordType: Share.recordType,
            changes: [change], replacement: .changedKeys, stamp: stamp)
        try store(state, previous: previous, in: zone)
        try recordLocalWrite(stamp, in: zone, sync: sync)
        noteLocalWrite(record: Share.recordName, stamp: stamp, in: zone)
        return true
    }
}
