extension ReplicaStorage {
    /// Creates the zone, or re-creates it after a delete. Returns false if it exists.
    @discardableResult
    public func createZone(_ zone: ZoneKey) throws -> Bool {
        let existing = try syncState(of: zone)
        if existing?.zoneState.exists == true { return false }
        let stamp = nextStamp()
        let zoneState = ZoneState(causalLength: (existing?.zoneState.causalLength ?? 0) + 1, stamp: stamp)
        var sync = existing ?? ZoneSyncState(zoneState: zoneState)
        sync.zoneState = zoneState
        sync.recordLocalWrite(stamp)
        try setSyncState(sync, of: zone)
        return true
    }

    /// Ends the zone's incarnation and removes its records, on every replica it reaches.
    public func deleteZone(_ zone: ZoneKey) throws {
        var sync = try liveSyncState(of: zone)
        let stamp = nextStamp()
        sync.zoneState = ZoneState(causalLength: sync.zoneState.causalLength + 1, stamp: stamp)
        sync.recordLocalWrite(stamp)
        try removeAllRecords(in: zone)
        try setSyncState(sync, of: zone)
    }

    /// Moves the schema to production. Returns false if it already is.
    @discardableResult
    public func deploySchema() throws -> Bool {
        guard try !schema().isProduction else { return false }
        var deployment = Schema()
        deployment.merge(deployed: nextStamp())
        try mergeSchema(deployment)
        return true
    }
}
