import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// Write access inside `RecordStore.write`: the `ReplicaStorage` the replica's
/// logic (in LatticeCore) runs on, persisted in SQLite.
///
/// It only persists what the core decides. A transaction that changed
/// nothing is rolled back: it takes no commit sequence and no checkpoint.
package final class StoreTransaction: StoreSnapshot, ReplicaStorage {
    private var hybridClock: HybridLogicalClock
    private var replicaTable: ReplicaTable
    /// Zones whose state or records changed, with their state, written at commit with a checkpoint.
    private var touchedZones: [Int64: ZoneSyncState] = [:]
    private var zoneCache: [ZoneKey: ZoneRow] = [:]
    /// A merge asks for one zone several times per record: its id is kept rather than the key hashed again.
    private var lastZoneID: (key: ZoneKey, id: Int64)?
    private var hasCascades: [Int64: Bool] = [:]
    /// Zones that held no record when this transaction first merged into
    /// them, with every name merged into them since (`recordToMerge`).
    private var namesWrittenToEmptyZones: [Int64: Set<String>] = [:]
    /// Zones that held records when this transaction first merged into them: asked once, not per record.
    private var zonesHoldingRecords = Set<Int64>()
    /// Per zone: whether it holds residues of collected tombstones (most hold none: a lookup is spared).
    private var hasResidues: [Int64: Bool] = [:]
    private var cachedSchema: Schema?
    private var cachedSequence: UInt64?
    private var clockMoved = false
    private var insertStatement: RecordRowStatement?
    private var updateStatement: RecordRowStatement?
    /// Per record type: its index writer, or nil when the type has no index.
    private var indexWriters: [String: TypeIndex.Writer?] = [:]
    /// Whether anything was written: a transaction without changes is not a commit.
    package private(set) var hasChanges = false
    /// References this transaction added (zone row, record, hash): those of
    /// its local writes vouch for their content in the zone's scope at commit.
    private var addedAssetReferences: [(zone: Int64, record: String, hash: [UInt8])] = []
    package var pendingLocalWrites: [PendingLocalWrite] = []
    /// The current state of records this transaction stored with a write of
    /// this replica's own latest (a local write's): what sealing signs
    /// (`stateToSeal`), kept so that it need not read each record again. At
    /// most `maximumStatesToSeal`; a record removed since has none, and one
    /// left out is read from the table.
    private var statesToSeal: [ZoneKey: [String: RecordState]] = [:]
    private var statesToSealCount = 0
    private static let maximumStatesToSeal = 16_384
    /// What this transaction's stores changed, written to `history` at commit (`recordHistory`).
    var pendingHistory: [PendingHistoryEntry] = []
    /// Whether history is kept (`history.off` unset), read once per transaction.
    var keepsHistory: Bool?
    /// The app's author string for this transaction's local writes (SwiftData's `ModelContext.author`).
    package var historyAuthor: String?
    /// `history_names` by name, read once per transaction that writes history.
    var historyNameIndexes: [String: Int]?
    /// Removed devices' replicas and the marks after which their writes are refused, read once per transaction.
    var refusedWritersCache: [ReplicaID: (device: String, upTo: HLCTimestamp)]?

    init(writing db: GRDB.Database, store: RecordStore) throws {
        let last = HLCTimestamp(rawValue: UInt64(bitPattern: try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'hlc'")) ?? 0))
        hybridClock = HybridLogicalClock(last: last, maximumSkewMilliseconds: store.maximumSkewMilliseconds)
        replicaTable = ReplicaTable()
        super.init(db: db, store: store)
        replicaTable = ReplicaTable(try replicas)
    }

    package var replica: ReplicaID { store.replica }

    package var signer: Identity? { store.identity }

    package var checksWrites: Bool { store.checksWrites }
    package var sealedBlockEntries: Int { store.sealedBlockEntries }

    package var enforcesWriteRights: Bool { !store.ignoresWriteRights }

    package var clock: HybridLogicalClock {
        get { hybridClock }
        set {
            if newValue.last != hybridClock.last { clockMoved = true }
            hybridClock = newValue
        }
    }

    package func wallClockNow() -> UInt64 { store.wallClock() }

    /// The sequence this commit's changes get.
    package var commitSequence: UInt64 {
        get throws {
            if let cachedSequence { return cachedSequence }
            let next = try sequence() + 1
            cachedSequence = next
            return next
        }
    }

    // MARK: Zones

    override func zoneRow(_ key: ZoneKey) throws -> ZoneRow? {
        if let cached = zoneCache[key] { return cached }
        guard var row = try super.zoneRow(key) else { return nil }
        if let pending = touchedZones[row.id] { row.sync = pending }
        zoneCache[key] = row
        return row
    }

    /// The zone's row id: what record access needs, without copying the zone's vectors.
    private func zoneID(_ key: ZoneKey) throws -> Int64? {
        if let lastZoneID, lastZoneID.key == key { return lastZoneID.id }
        guard let id = try zoneRow(key)?.id else { return nil }
        lastZoneID = (key, id) // a zone's row id never changes
        return id
    }

    package func setSyncState(_ state: ZoneSyncState, of key: ZoneKey) throws {
        if key.scope == .shared, !pendingMemberships.isEmpty { try keepMemberships(of: [state.zoneState.stamp.replica]) }
        if var row = try zoneRow(key) {
            guard row.sync != state else { return }
            row.sync = state
            zoneCache[key] = row
            touchedZones[row.id] = state
        } else {
            try db.cachedStatement(sql: """
                INSERT INTO zones (scope, name, owner, causal_length, stamp, vector, knowledge) VALUES (?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [
                    Int(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName, Int64(state.zoneState.causalLength),
                    Data(RecordBlob.encodeStamp(state.zoneState.stamp)), Data(RecordBlob.encodeVector(state.vector)),
                    Data(RecordBlob.encodeVector(state.knowledge)),
                ])
            let row = ZoneRow(id: db.lastInsertedRowID, key: key, sync: state)
            zoneCache[key] = row
            touchedZones[row.id] = state
            hasCascades[row.id] = false
        }
        hasChanges = true
    }

    package func removeAllRecords(in key: ZoneKey, by stamp: Stamp?) throws {
        guard let row = try zoneRow(key) else { return }
        if let stamp { try noteZoneReset(row.id, key: key, by: stamp) }
        let schema = try schema()
        for recordType in Set(schema.indexes.keys.map(\.recordType)) {
            try TypeIndex(recordType: recordType, schema: schema)?.removeAll(zone: row.id, in: db)
        }
        // Residues belong to the incarnation of the zone that ends: a record of the next one starts afresh.
        if try holdsResidues(row.id) {
            try db.cachedStatement(sql: "DELETE FROM residues WHERE zone = ?").execute(arguments: [row.id])
            try db.cachedStatement(sql: "DELETE FROM collected_through WHERE zone = ?").execute(arguments: [row.id])
            hasResidues[row.id] = false
            touch(row)
        }
        try db.cachedStatement(sql: "DELETE FROM records WHERE zone = ?").execute(arguments: [row.id])
        statesToSeal[key] = nil
        guard db.changesCount > 0 else { return }
        try forgetDigests(zone: row.id)
        try db.cachedStatement(sql: "DELETE FROM cascades WHERE zone = ?").execute(arguments: [row.id])
        let referenced = try Data.fetchAll(db.cachedStatement(sql: "SELECT DISTINCT hash FROM asset_refs WHERE zone = ?"), arguments: [row.id])
        try db.cachedStatement(sql: "DELETE FROM asset_refs WHERE zone = ?").execute(arguments: [row.id])
        for hash in referenced { try noteOrphanIfUnreferenced([UInt8](hash), zone: row.id, droppedBy: row.sync.knowledge) }
        hasCascades[row.id] = false
        touch(row)
    }

    /// Drops the zone's row (its records went first): a zone this device no longer replicates.
    func forgetZone(_ id: Int64, key: ZoneKey) throws {
        try db.cachedStatement(sql: "DELETE FROM zones WHERE id = ?").execute(arguments: [id])
        zoneCache[key] = nil
        touchedZones[id] = nil
        if lastZoneID?.key == key { lastZoneID = nil }
        hasChanges = true
    }

    private func touch(_ row: ZoneRow) {
        if touchedZones[row.id] == nil { touchedZones[row.id] = row.sync }
        hasChanges = true
    }

    private func touch(_ key: ZoneKey, _ zone: Int64) throws {
        if touchedZones[zone] == nil, let row = try zoneRow(key) { touch(row) }
        hasChanges = true
    }

    // MARK: Records

    package func record(named name: String, in key: ZoneKey) throws -> RecordState? {
        guard let zone = try zoneID(key) else { return nil }
        return try record(name, zoneID: zone)
    }

    package func recordVersion(named name: String, in key: ZoneKey) throws -> RecordVersion? {
        guard let zone = try zoneID(key), let blob = try recordBlob(name, zoneID: zone) else { return nil }
        return try decodeVersion(blob)
    }

    package func recordToMerge(named name: String, in key: ZoneKey, incoming: RecordState) throws -> RecordLookup {
        guard let zone = try zoneID(key) else { return .absent }
        if namesWrittenToEmptyZones[zone] != nil {
            // A zone that held no record when this transaction first merged into it (an initial sync):
            // only the names written since can be there, and no other needs a lookup.
            // (Inserted in place: a copy of the set per record would be quadratic.)
            if namesWrittenToEmptyZones[zone]!.insert(name).inserted { return .absent }
        } else if !zonesHoldingRecords.contains(zone) {
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM records WHERE zone = ?)"), arguments: [zone])! else {
                namesWrittenToEmptyZones[zone] = [name]
                return .absent
            }
            zonesHoldingRecords.insert(zone)
        }
        guard let blob = try recordBlob(name, zoneID: zone) else { return .absent }
        if try decodeVersion(blob).covers(incoming.version) { return .covers }
        return .state(try decode(blob))
    }

    package func store(_ state: RecordState, previous: RecordState?, in key: ZoneKey) throws {
        guard let zone = try zoneID(key) else { throw StoreError.zoneNotFound(key.description) }
        // A shared zone's writers: the memberships their change set proved them by are kept.
        if key.scope == .shared, !pendingMemberships.isEmpty {
            try keepMemberships(of: state.liveStamps.map(\.replica) + state.vector.entries.map(\.replica))
        }
        let blob = RecordBlob.encode(state, replicas: &replicaTable)
        try saveNewReplicas()
        let rid = try writeRecordRow(state, blob: blob, isNew: previous == nil, zone: zone)
        if previous == nil, try holdsResidues(zone) {
            try db.cachedStatement(sql: "DELETE FROM residues WHERE zone = ? AND name = ?").execute(arguments: [zone, state.recordName])
        }
        if let writer = try indexWriter(for: state.recordType) { try writer.put(state, previous: previous, rid: rid, zone: zone) }
        if let previous, previous.recordType != state.recordType, let former = try indexWriter(for: previous.recordType) {
            try former.remove(rid: rid)
        }
        let before = previous?.liveCascadeTargets ?? []
        let after = state.liveCascadeTargets
        if before != after {
            try db.cachedStatement(sql: "DELETE FROM cascades WHERE zone = ? AND source = ?").execute(arguments: [zone, state.recordName])
            for target in after {
                try db.cachedStatement(sql: "INSERT INTO cascades (zone, target, source) VALUES (?, ?, ?)").execute(arguments: [zone, target, state.recordName])
                hasCascades[zone] = true
            }
        }
        try updateAssetReferences(from: previous, to: state, zone: zone)
        try noteHistory(of: state, previous: previous, zone: zone, key: key)
        try touch(key, zone)
        if signer != nil {
            if statesToSeal[key]?[state.recordName] != nil {
                statesToSeal[key]![state.recordName] = state
            } else if state.lastModified.replica == replica, statesToSealCount < Self.maximumStatesToSeal {
                statesToSeal[key, default: [:]][state.recordName] = state
                statesToSealCount += 1
            }
        }
    }

    package func stateToSeal(named name: String, in key: ZoneKey) throws -> RecordState? {
        if let state = statesToSeal[key]?[name] { return state }
        return try record(named: name, in: key)
    }

    /// Keeps `asset_refs` as the record's live assets are.
    private func updateAssetReferences(from previous: RecordState?, to state: RecordState, zone: Int64) throws {
        let before = previous?.liveAssets ?? []
        let after = state.liveAssets
        guard before != after else { return }
        for asset in before.subtracting(after) {
            try db.cachedStatement(sql: "DELETE FROM asset_refs WHERE hash = ? AND zone = ? AND source = ?")
                .execute(arguments: [Data(asset.hash), zone, state.recordName])
            try noteOrphanIfUnreferenced(asset.hash, zone: zone, droppedBy: state.vector)
        }
        for asset in after.subtracting(before) {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO asset_refs (hash, size, zone, source) VALUES (?, ?, ?, ?)")
                .execute(arguments: [Data(asset.hash), asset.size, zone, state.recordName])
            addedAssetReferences.append((zone, state.recordName, asset.hash))
            try db.cachedStatement(sql: "DELETE FROM asset_orphans WHERE hash = ?").execute(arguments: [Data(asset.hash)])
        }
    }

    /// Content no live record references any more is noted (`asset_orphans`)
    /// with what a device must hold to have seen every reference go: the
    /// zone's knowledge (earlier drops) and the dropping state's vector.
    private func noteOrphanIfUnreferenced(_ hash: [UInt8], zone: Int64, droppedBy vector: VersionVector) throws {
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM asset_refs WHERE hash = ?"), arguments: [Data(hash)]) != true else { return }
        let knowledge = try Data.fetchOne(db.cachedStatement(sql: "SELECT knowledge FROM zones WHERE id = ?"), arguments: [zone])
            .map { try RecordBlob.decodeVector([UInt8]($0)) } ?? VersionVector()
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO asset_orphans (hash, zone, dropped) VALUES (?, ?, ?)")
            .execute(arguments: [Data(hash), zone, Data(RecordBlob.encodeVector(knowledge.joined(with: vector)))])
    }

    /// Forgets content collected as unreferenced, unless a reference came back
    /// meanwhile; returns whether its files may be removed.
    package func collectOrphanedAsset(_ hash: [UInt8]) throws -> Bool {
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM asset_refs WHERE hash = ?"), arguments: [Data(hash)]) != true,
              try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM asset_wants WHERE hash = ?"), arguments: [Data(hash)]) != true else {
            try db.cachedStatement(sql: "DELETE FROM asset_orphans WHERE hash = ?").execute(arguments: [Data(hash)])
            markChanged()
            return false
        }
        try db.cachedStatement(sql: "DELETE FROM asset_orphans WHERE hash = ?").execute(arguments: [Data(hash)])
        try db.cachedStatement(sql: "DELETE FROM assets WHERE hash = ?").execute(arguments: [Data(hash)])
        markChanged()
        return true
    }

    /// Inserts a new record's row or updates the existing one by row id (the
    /// merge or save just read it, so its id is at hand); returns the row id.
    private func writeRecordRow(_ state: RecordState, blob: [UInt8], isNew: Bool, zone: Int64) throws -> Int64 {
        let alive = state.isAlive ? 1 : 0
        let sequence = Int64(try commitSequence)
        if isNew {
            namesWrittenToEmptyZones[zone]?.insert(state.recordName)
            if insertStatement == nil {
                insertStatement = try RecordRowStatement(db, sql: "INSERT INTO records (zone, name, type, alive, change_seq, state) VALUES (?, ?, ?, ?, ?, ?)")
            }
            try insertStatement!.execute([.integer(zone), .text(state.recordName), .text(state.recordType), .integer(Int64(alive)), .integer(sequence), .blob(blob)])
            return db.lastInsertedRowID
        }
        let rid: Int64
        if let last = lastRecordRow, last.zone == zone, last.name == state.recordName {
            rid = last.id
        } else {
            guard let found = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM records WHERE zone = ? AND name = ?"), arguments: [zone, state.recordName]) else {
                throw StoreError.corrupt(path: store.directory.path, reason: "record \(state.recordName) vanished while it was written")
            }
            rid = found
        }
        if updateStatement == nil {
            updateStatement = try RecordRowStatement(db, sql: "UPDATE records SET type = ?, alive = ?, change_seq = ?, state = ? WHERE id = ?")
        }
        try updateStatement!.execute([.text(state.recordType), .integer(Int64(alive)), .integer(sequence), .blob(blob), .integer(rid)])
        return rid
    }

    private func indexWriter(for recordType: String) throws -> TypeIndex.Writer? {
        if let known = indexWriters[recordType] { return known }
        let writer = try TypeIndex(recordType: recordType, schema: try schema()).map { try TypeIndex.Writer($0, db: db) }
        indexWriters[recordType] = .some(writer)
        return writer
    }

    // MARK: Collected tombstones

    private func holdsResidues(_ zone: Int64) throws -> Bool {
        if let known = hasResidues[zone] { return known }
        let holds = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM residues WHERE zone = ?)"), arguments: [zone]) ?? false
        hasResidues[zone] = holds
        return holds
    }

    package func residue(named name: String, in key: ZoneKey) throws -> RecordResidue? {
        guard let zone = try zoneID(key), try holdsResidues(zone) else { return nil }
        return try collectedResidue(of: name, zoneID: zone)
    }

    /// Collecting takes no change sequence (no reader's view changes), but a
    /// change token older than the tombstone's last change can no longer
    /// report its deletion: the horizon moves past it (changeTokenExpired).
    package func collect(_ tombstone: RecordState, in key: ZoneKey) throws {
        guard let zone = try zoneID(key) else { throw StoreError.zoneNotFound(key.description) }
        let name = tombstone.recordName
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, change_seq FROM records WHERE zone = ? AND name = ? AND alive = 0"), arguments: [zone, name]) else { return }
        try db.cachedStatement(sql: "DELETE FROM records WHERE id = ?").execute(arguments: [row[0] as Int64])
        lastRecordRow = nil
        statesToSeal[key]?[name] = nil
        try writeResidue(RecordResidue(of: tombstone), named: name, zone: zone)
        // The zone's change tokens from before the tombstone's last change can no longer list its deletion.
        let horizon = max(try collectionHorizon(in: key), UInt64(row[1] as Int64))
        let through = try collectedThrough(in: key).joined(with: tombstone.vector)
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO collected_through (zone, vector, horizon) VALUES (?, ?, ?)")
            .execute(arguments: [zone, Data(RecordBlob.encodeVector(through)), Int64(horizon)])
        markChanged()
    }

    package func forget(_ state: RecordState, in key: ZoneKey) throws {
        guard let zone = try zoneID(key) else { throw StoreError.zoneNotFound(key.description) }
        // Its cascades and asset references go as its fields do; then the row and its index row.
        var bare = state
        bare.fields = []
        try store(bare, previous: state, in: key)
        guard let rid = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM records WHERE zone = ? AND name = ?"), arguments: [zone, state.recordName]) else { return }
        if let writer = try indexWriter(for: state.recordType) { try writer.remove(rid: rid) }
        try db.cachedStatement(sql: "DELETE FROM records WHERE id = ?").execute(arguments: [rid])
        lastRecordRow = nil
        statesToSeal[key]?[state.recordName] = nil
    }

    package func forgetResumePoints(in key: ZoneKey) throws {
        guard let zone = try zoneID(key) else { return }
        try db.cachedStatement(sql: "DELETE FROM resume_points WHERE zone = ?").execute(arguments: [zone])
    }

    package func storeResidue(_ residue: RecordResidue, named name: String, in key: ZoneKey) throws {
        guard let zone = try zoneID(key) else { throw StoreError.zoneNotFound(key.description) }
        try writeResidue(residue, named: name, zone: zone)
        try touch(key, zone)
    }

    private func writeResidue(_ residue: RecordResidue, named name: String, zone: Int64) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO residues (zone, name, causal_length, vector, deletion) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [zone, name, Int64(residue.causalLength), Data(RecordBlob.encodeVector(residue.vector)), residue.deletion.map { Data(RecordBlob.encodeStamp($0)) }])
        hasResidues[zone] = true
    }

    package func tombstones(in key: ZoneKey) throws -> [RecordState] {
        guard let zone = try zoneID(key) else { return [] }
        return try Row.fetchAll(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND alive = 0 ORDER BY name"), arguments: [zone])
            .map { try decode($0[0] as Data) }
    }

    package func cascadeSources(of target: String, in key: ZoneKey) throws -> [String] {
        guard let zone = try zoneID(key) else { return [] }
        if hasCascades[zone] == nil {
            hasCascades[zone] = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM cascades WHERE zone = ?)"), arguments: [zone]) ?? false
        }
        // Most zones hold no deleteSelf reference: spare every merged record a query.
        guard hasCascades[zone] == true else { return [] }
        return try cascadeSources(of: target, zoneID: zone)
    }

    /// The index `history.author` keeps for `replica`.
    func replicaIndex(of replica: ReplicaID) throws -> Int {
        let index = replicaTable.index(of: replica)
        try saveNewReplicas()
        return index
    }

    private func saveNewReplicas() throws {
        let known = try replicas.count
        guard replicaTable.replicas.count > known else { return }
        for index in known..<replicaTable.replicas.count {
            try db.cachedStatement(sql: "INSERT INTO replicas (idx, id) VALUES (?, ?)").execute(arguments: [index, Data(replicaTable.replicas[index].bytes)])
        }
        invalidateReplicas()
    }

    // MARK: Schema

    override package func schema() throws -> Schema {
        if let cachedSchema { return cachedSchema }
        let schema = try super.schema()
        cachedSchema = schema
        return schema
    }

    package func persistSchemaChanges(_ changes: Schema) throws {
        for field in changes.definitions {
            try db.cachedStatement(sql: """
                INSERT INTO schema_fields (record_type, field, type, stamp) VALUES (?, ?, ?, ?)
                ON CONFLICT (record_type, field) DO UPDATE SET type = excluded.type, stamp = excluded.stamp
                """).execute(arguments: [field.recordType, field.field, Int(field.type.code), Data(RecordBlob.encodeStamp(field.stamp))])
        }
        for type in changes.recordTypes {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO schema_types (record_type) VALUES (?)").execute(arguments: [type])
        }
        if let deployed = changes.deployed {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('deployed', ?)").execute(arguments: [Data(RecordBlob.encodeStamp(deployed))])
        }
        let before = try self.schema()
        var schema = before
        schema.merge(changes)
        cachedSchema = schema
        hasChanges = true
        for (key, kinds) in changes.indexes {
            try db.cachedStatement(sql: """
                INSERT INTO schema_indexes (record_type, field, kinds) VALUES (?, ?, ?)
                ON CONFLICT (record_type, field) DO UPDATE SET kinds = kinds | excluded.kinds
                """).execute(arguments: [key.recordType, key.field, Int(kinds.rawValue)])
        }
        // A new index holds every record of its type from the start: records
        // already stored (by this transaction too) are indexed now. A field's
        // type decides how its index is held, so a definition that a merge
        // settles otherwise rebuilds the index too.
        var rebuilt = Set<String>()
        for key in changes.indexes.keys where before.indexKinds(key.field, of: key.recordType) != schema.indexKinds(key.field, of: key.recordType) {
            rebuilt.insert(key.recordType)
        }
        for field in changes.definitions where before.indexStructure(field.field, of: field.recordType) != schema.indexStructure(field.field, of: field.recordType) {
            rebuilt.insert(field.recordType)
        }
        for recordType in rebuilt { try rebuildIndex(of: recordType, schema: schema) }
    }

    package func persistIndexRemovals(_ removed: IndexKinds, field: String, of recordType: String) throws {
        let before = try schema().indexKinds(field, of: recordType)
        if removed.isEmpty {
            try db.execute(sql: "DELETE FROM index_removals WHERE record_type = ? AND field = ?", arguments: [recordType, field])
        } else {
            try db.execute(sql: """
                INSERT INTO index_removals (record_type, field, kinds) VALUES (?, ?, ?)
                ON CONFLICT (record_type, field) DO UPDATE SET kinds = excluded.kinds
                """, arguments: [recordType, field, Int(removed.rawValue)])
        }
        // Read again: the kinds asked for here or by peers, less the removals now.
        cachedSchema = nil
        let schema = try self.schema()
        hasChanges = true
        if schema.indexKinds(field, of: recordType) != before { try rebuildIndex(of: recordType, schema: schema) }
    }

    /// Builds `recordType`'s index tables afresh for `schema`'s layout.
    private func rebuildIndex(of recordType: String, schema: Schema) throws {
        indexWriters[recordType] = nil
        try TypeIndex.build(recordType, schema: schema, in: db, decode: decode)
    }

    // MARK: Settings and assets

    /// Something outside the records changed (settings, peers): commit, without a new sequence.
    func markChanged() { hasChanges = true }

    /// Running nodes must hear of this commit though it takes no sequence (trust changed).
    var wakesWatchers = false

    /// The peer whose batch this transaction applies (a sync session's), noted
    /// with the commit's sequence (`StoreSnapshot.commitSources`), unless the
    /// transaction also wrote on this replica's behalf.
    package var commitSource: String?

    /// Commit sources kept: a session looks at those since its last wake-up.
    static let keptCommitSources: UInt64 = 1024

    /// Whether this commit takes a new change sequence (records or zones changed).
    var advancesSequence: Bool { !touchedZones.isEmpty }

    /// With `wakingNodes`, a node running on the store hears of the change (as of a commit).
    package func setSetting(_ key: String, to value: String, wakingNodes: Bool = false) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").execute(arguments: ["setting." + key, Data(value.utf8)])
        hasChanges = true
        if wakingNodes { wakesWatchers = true }
    }

    /// Notes that an asset's content is in the store (imported here, fetched,
    /// or from a bundle), served in the scopes of the zones referencing it
    /// here (`AssetScope.grantFromReferences`); a reference this device
    /// writes later vouches for it in that zone's scope.
    package func registerAsset(_ asset: AssetReference) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO assets (hash, size) VALUES (?, ?)").execute(arguments: [Data(asset.hash), asset.size])
        guard db.changesCount > 0 else { return }
        try AssetScope.grantFromReferences(asset.hash, in: db)
        hasChanges = true
        // Whoever waits for it (`lattice asset fetch` in another process) hears of it.
        try db.cachedStatement(sql: "DELETE FROM asset_wants WHERE hash = ?").execute(arguments: [Data(asset.hash)])
        wakesWatchers = true
    }

    /// Drops the anti-entropy history and expires older change tokens.
    /// Tombstones stay: without them a stale replica could resurrect deletes.
    package func compact() throws {
        try db.cachedStatement(sql: """
            DELETE FROM checkpoints WHERE change_seq < (SELECT MAX(c.change_seq) FROM checkpoints c WHERE c.zone = checkpoints.zone)
            """).execute()
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('horizon', ?)").execute(arguments: [Int64(try sequence())])
        hasChanges = true
    }

    /// Checkpoints of the last `denseCheckpoints` commits are all kept; older
    /// ones thin out by age, each band of ages twice as long as the one
    /// before and keeping every second, fourth, … sequence, so a store keeps
    /// a few thousand whatever its history. A peer whose vector is that old is
    /// served from the kept checkpoint before it: a few more records, never fewer.
    func thinCheckpoints(at sequence: UInt64) throws {
        var age = Self.denseCheckpoints
        var spacing: UInt64 = 2
        while age < sequence {
            let upper = sequence - age
            let lower = upper > age ? upper - age : 0
            // A quiet zone's newest checkpoint stays, however old: without it a peer would get the whole zone.
            try db.cachedStatement(sql: """
                DELETE FROM checkpoints WHERE change_seq >= ? AND change_seq < ? AND change_seq % ? != 0
                    AND change_seq < (SELECT MAX(c.change_seq) FROM checkpoints c WHERE c.zone = checkpoints.zone)
                """).execute(arguments: [Int64(lower), Int64(upper), Int64(spacing)])
            age *= 2
            spacing *= 2
        }
    }

    static let denseCheckpoints: UInt64 = 1024

    // MARK: Commit

    /// Writes the zones' states, their checkpoints, the sequence and the clock.
    /// Returns false when nothing changed: then the transaction rolls back.
    /// A reference a local write added vouches for its content in the zone's scope.
    private func grantScopesOfLocalReferences() throws {
        guard !addedAssetReferences.isEmpty, !pendingLocalWrites.isEmpty else { return }
        var local = Set<String>()
        var zones: [Int64: ZoneKey] = [:]
        for write in pendingLocalWrites {
            guard let record = write.record, let row = try zoneRow(write.zone) else { continue }
            zones[row.id] = write.zone
            local.insert("\(row.id)/\(record)")
        }
        for reference in addedAssetReferences where local.contains("\(reference.zone)/\(reference.record)") {
            guard let zone = zones[reference.zone] else { continue }
            try AssetScope.grant(reference.hash, zone, in: db)
        }
    }

    func finish() throws -> Bool {
        guard hasChanges else { return false }
        // A commit that also holds writes of this replica's own (a cascade the
        // batch set off) is not the peer's alone: it is streamed to every peer.
        if !pendingLocalWrites.isEmpty { commitSource = nil }
        try grantScopesOfLocalReferences()
        let localCommit = try sealLocalWrites()
        statesToSeal = [:]
        statesToSealCount = 0
        if !touchedZones.isEmpty {
            let sequence = try commitSequence
            try recordHistory(sequence: sequence, localCommit: localCommit)
            if sequence % 256 == 0 { try collectHistory() }
            for (zoneID, sync) in touchedZones {
                try db.cachedStatement(sql: "UPDATE zones SET causal_length = ?, stamp = ?, vector = ?, knowledge = ? WHERE id = ?").execute(arguments: [
                    Int64(sync.zoneState.causalLength), Data(RecordBlob.encodeStamp(sync.zoneState.stamp)),
                    Data(RecordBlob.encodeVector(sync.vector)), Data(RecordBlob.encodeVector(sync.knowledge)), zoneID,
                ])
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO checkpoints (zone, change_seq, knowledge) VALUES (?, ?, ?)").execute(arguments: [
                    zoneID, Int64(sequence), Data(RecordBlob.encodeVector(sync.knowledge)),
                ])
            }
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('sequence', ?)").execute(arguments: [Int64(sequence)])
            if let commitSource {
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO commit_sources (sequence, peer) VALUES (?, ?)").execute(arguments: [Int64(sequence), commitSource])
            }
            if sequence > Self.keptCommitSources, sequence % 64 == 0 {
                try db.cachedStatement(sql: "DELETE FROM commit_sources WHERE sequence <= ?").execute(arguments: [Int64(sequence - Self.keptCommitSources)])
            }
            if sequence % 256 == 0 { try thinCheckpoints(at: sequence) }
        }
        if clockMoved {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('hlc', ?)").execute(arguments: [Int64(bitPattern: hybridClock.last.rawValue)])
        }
        return true
    }
}
