import Foundation
import GRDB
import LatticeCore

/// Write access inside `RecordStore.write`: the primitives the library's
/// CloudKit operations and the change-set applier are built from.
public final class StoreTransaction: StoreSnapshot {
    private var clock: HybridLogicalClock
    private var replicaTable: ReplicaTable
    private var touchedZones: [Int64: ZoneSyncState] = [:]
    private var cachedSequence: UInt64?
    private var clockMoved = false

    init(writing db: GRDB.Database, store: RecordStore) throws {
        let last = HLCTimestamp(rawValue: UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'hlc'") ?? 0))
        clock = HybridLogicalClock(last: last, maximumSkewMilliseconds: store.maximumSkewMilliseconds)
        replicaTable = ReplicaTable()
        super.init(db: db, store: store)
        replicaTable = ReplicaTable(try replicas)
    }

    /// The sequence this commit's changes get.
    public var commitSequence: UInt64 {
        get throws {
            if let cachedSequence { return cachedSequence }
            let next = try sequence() + 1
            cachedSequence = next
            return next
        }
    }

    /// A fresh stamp for a local write, later than every stamp this store has seen.
    public func nextStamp() -> Stamp {
        clockMoved = true
        return Stamp(time: clock.tick(wallClock: RecordStore.wallClock()), replica: store.replica)
    }

    // MARK: Zones

    /// The zone's row id, creating the zone's row (with `state`) if missing.
    func ensureZone(_ key: ZoneKey, initial sync: ZoneSyncState) throws -> ZoneRow {
        if let existing = try zoneRow(key) { return existing }
        try db.execute(sql: """
            INSERT INTO zones (scope, name, owner, causal_length, stamp, vector, knowledge) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [
                Int(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Int64(sync.zoneState.causalLength),
                Data(RecordBlob.encodeStamp(sync.zoneState.stamp)), Data(RecordBlob.encodeVector(sync.vector)),
                Data(RecordBlob.encodeVector(sync.knowledge)),
            ])
        let row = ZoneRow(id: db.lastInsertedRowID, key: key, sync: sync)
        touchedZones[row.id] = sync
        zoneCache[key] = row
        return row
    }

    /// Sets a zone's state and vectors; written with a checkpoint at commit,
    /// once however many records the transaction touched.
    func setSync(_ sync: ZoneSyncState, zoneID: Int64) throws {
        touchedZones[zoneID] = sync
        for (key, row) in zoneCache where row.id == zoneID { zoneCache[key]?.sync = sync }
    }

    private var zoneCache: [ZoneKey: ZoneRow] = [:]
    private var upsertStatement: Statement?
    private var conflictStatement: Statement?

    override func zoneRow(_ key: ZoneKey) throws -> ZoneRow? {
        if let cached = zoneCache[key] { return cached }
        guard var row = try super.zoneRow(key) else { return nil }
        if let pending = touchedZones[row.id] { row.sync = pending }
        zoneCache[key] = row
        return row
    }

    /// Creates the zone, or re-creates it after a delete; nothing if it exists.
    public func createZone(_ key: ZoneKey) throws {
        if let row = try zoneRow(key) {
            guard !row.sync.zoneState.exists else { return }
            var sync = row.sync
            let stamp = nextStamp()
            sync.zoneState = ZoneState(causalLength: sync.zoneState.causalLength + 1, stamp: stamp)
            sync.recordLocalWrite(stamp)
            try setSync(sync, zoneID: row.id)
        } else {
            let stamp = nextStamp()
            var sync = ZoneSyncState(zoneState: ZoneState(causalLength: 1, stamp: stamp))
            sync.recordLocalWrite(stamp)
            _ = try ensureZone(key, initial: sync)
        }
    }

    /// Ends the zone's incarnation and removes its records.
    public func deleteZone(_ key: ZoneKey) throws {
        guard let row = try zoneRow(key), row.sync.zoneState.exists else { throw StoreError.zoneNotFound(key.description) }
        var sync = row.sync
        let stamp = nextStamp()
        sync.zoneState = ZoneState(causalLength: sync.zoneState.causalLength + 1, stamp: stamp)
        sync.recordLocalWrite(stamp)
        try removeAllRecords(zoneID: row.id)
        try setSync(sync, zoneID: row.id)
    }

    func removeAllRecords(zoneID: Int64) throws {
        try db.execute(sql: "DELETE FROM records WHERE zone = ?", arguments: [zoneID])
        try db.execute(sql: "DELETE FROM cascades WHERE zone = ?", arguments: [zoneID])
        try db.execute(sql: "DELETE FROM conflicts WHERE zone = ?", arguments: [zoneID])
    }

    // MARK: Records

    /// Persists a record's new state as changed in this commit.
    func put(_ state: RecordState, previous: RecordState?, zoneID: Int64) throws {
        let blob = RecordBlob.encode(state, replicas: &replicaTable)
        try saveNewReplicas()
        if upsertStatement == nil {
            upsertStatement = try db.makeStatement(sql: """
                INSERT INTO records (zone, name, type, alive, change_seq, state) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (zone, name) DO UPDATE SET type = excluded.type, alive = excluded.alive,
                    change_seq = excluded.change_seq, state = excluded.state
                """)
        }
        try upsertStatement!.execute(arguments: [zoneID, state.recordName, state.recordType, state.isAlive ? 1 : 0, Int64(try commitSequence), Data(blob)])
        let before = previous?.isAlive == true ? previous!.cascadeTargets : []
        let after = state.isAlive ? state.cascadeTargets : []
        if before != after {
            try db.execute(sql: "DELETE FROM cascades WHERE zone = ? AND source = ?", arguments: [zoneID, state.recordName])
            for target in Set(after) {
                try db.execute(sql: "INSERT INTO cascades (zone, target, source) VALUES (?, ?, ?)", arguments: [zoneID, target, state.recordName])
            }
        }
    }

    private func saveNewReplicas() throws {
        let known = try replicas.count
        guard replicaTable.replicas.count > known else { return }
        for index in known..<replicaTable.replicas.count {
            try db.execute(sql: "INSERT INTO replicas (idx, id) VALUES (?, ?)", arguments: [index, Data(replicaTable.replicas[index].bytes)])
        }
        invalidateReplicas()
    }

    /// Merges a local write (already turned into a state) into the zone.
    public func commitLocal(_ state: RecordState, previous: RecordState?, stamp: Stamp, in key: ZoneKey) throws {
        guard let row = try zoneRow(key), row.sync.zoneState.exists else { throw StoreError.zoneNotFound(key.description) }
        var sync = row.sync
        sync.recordLocalWrite(stamp)
        try put(state, previous: previous, zoneID: row.id)
        try setSync(sync, zoneID: row.id)
    }

    /// Records referencing `name` with deleteSelf, to delete with it.
    public func cascadeSources(of name: String, in key: ZoneKey) throws -> [String] {
        guard let row = try zoneRow(key) else { return [] }
        return try cascadeSources(of: name, zoneID: row.id)
    }

    func logConflicts(_ conflicts: [FieldConflict], zoneID: Int64) throws {
        guard let first = conflicts.first else { return }
        if conflictStatement == nil { conflictStatement = try db.makeStatement(sql: "INSERT INTO conflicts (zone, record, entries) VALUES (?, ?, ?)") }
        try conflictStatement!.execute(arguments: [zoneID, first.recordName, Data(ConflictCodec.encode(conflicts))])
    }

    /// Forgets the conflicts logged for a record (the app resolved them).
    public func clearConflicts(of name: String, in key: ZoneKey) throws {
        guard let row = try zoneRow(key) else { return }
        try db.execute(sql: "DELETE FROM conflicts WHERE zone = ? AND record = ?", arguments: [row.id, name])
    }

    // MARK: Schema and assets

    public func mergeSchema(_ schema: Schema) throws {
        for field in schema.fields.values {
            try db.execute(sql: """
                INSERT INTO schema_fields (record_type, field, type, stamp) VALUES (?, ?, ?, ?)
                ON CONFLICT (record_type, field) DO NOTHING
                """, arguments: [field.recordType, field.field, Int(field.type.code), Data(RecordBlob.encodeStamp(field.stamp))])
            // The earliest definition wins a race (Schema.merge): replace a later one.
            if let existing = try Data.fetchOne(db, sql: "SELECT stamp FROM schema_fields WHERE record_type = ? AND field = ?", arguments: [field.recordType, field.field]),
               try RecordBlob.decodeStamp([UInt8](existing)) > field.stamp {
                try db.execute(sql: "UPDATE schema_fields SET type = ?, stamp = ? WHERE record_type = ? AND field = ?", arguments: [
                    Int(field.type.code), Data(RecordBlob.encodeStamp(field.stamp)), field.recordType, field.field,
                ])
            }
        }
        for type in schema.recordTypes {
            try db.execute(sql: "INSERT OR IGNORE INTO schema_types (record_type) VALUES (?)", arguments: [type])
        }
        if let deployed = schema.deployed {
            let current = try Data.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'deployed'").map { try RecordBlob.decodeStamp([UInt8]($0)) }
            if current == nil || current! > deployed {
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('deployed', ?)", arguments: [Data(RecordBlob.encodeStamp(deployed))])
            }
        }
    }

    public func setSetting(_ key: String, to value: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", arguments: ["setting." + key, Data(value.utf8)])
    }

    public func registerAsset(_ asset: AssetReference) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO assets (hash, size) VALUES (?, ?)", arguments: [Data(asset.hash), asset.size])
    }

    /// Drops the anti-entropy history and expires older change tokens.
    /// Tombstones stay: without them a stale replica could resurrect deletes.
    public func compact() throws {
        try db.execute(sql: """
            DELETE FROM checkpoints WHERE change_seq < (SELECT MAX(c.change_seq) FROM checkpoints c WHERE c.zone = checkpoints.zone)
            """)
        try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('horizon', ?)", arguments: [Int64(try sequence())])
    }

    // MARK: Commit

    func observe(_ time: HLCTimestamp) {
        clock.observe(time)
        clockMoved = true
    }

    var clockState: HybridLogicalClock { clock }

    func finish() throws {
        if let sequence = cachedSequence {
            for (zoneID, sync) in touchedZones {
                try db.execute(sql: "UPDATE zones SET causal_length = ?, stamp = ?, vector = ?, knowledge = ? WHERE id = ?", arguments: [
                    Int64(sync.zoneState.causalLength), Data(RecordBlob.encodeStamp(sync.zoneState.stamp)),
                    Data(RecordBlob.encodeVector(sync.vector)), Data(RecordBlob.encodeVector(sync.knowledge)), zoneID,
                ])
                try db.execute(sql: "INSERT OR REPLACE INTO checkpoints (zone, change_seq, knowledge) VALUES (?, ?, ?)", arguments: [
                    zoneID, Int64(sequence), Data(RecordBlob.encodeVector(sync.knowledge)),
                ])
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('sequence', ?)", arguments: [Int64(sequence)])
        } else if !touchedZones.isEmpty {
            cachedSequence = try commitSequence
            try finish()
            return
        }
        if clockMoved {
            try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('hlc', ?)", arguments: [Int64(bitPattern: clock.last.rawValue)])
        }
    }
}
