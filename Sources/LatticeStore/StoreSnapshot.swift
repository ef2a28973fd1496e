import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// Read access to the store inside `RecordStore.read` or `write`.
package class StoreSnapshot {
    let db: GRDB.Database
    let store: RecordStore
    private var replicaIDs: [ReplicaID]?
    /// The account's members by replica, read once per snapshot (`ownMembers`).
    var ownMembersCache: [ReplicaID: AccountMembership]? {
        didSet { accountsCache = [:] }
    }
    /// The accounts each writer belongs to, as `accounts(of:)` read them in this snapshot.
    var accountsCache: [ReplicaID: Set<String>] = [:]
    /// Memberships a change set brought in this transaction, kept only for
    /// the writers whose changes the transaction stores (`takeMemberships`).
    var pendingMemberships: [ReplicaID: [AccountMembership]] = [:]
    var keptMembershipWriters = Set<ReplicaID>()

    init(db: GRDB.Database, store: RecordStore) {
        self.db = db
        self.store = store
    }

    // MARK: Meta

    func metaInteger(_ key: String) throws -> UInt64 {
        UInt64(try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: [key]) ?? 0)
    }

    /// The last committed change sequence.
    package func sequence() throws -> UInt64 { try metaInteger("sequence") }

    /// Change tokens before this sequence have expired (a compaction dropped their history).
    package func horizon() throws -> UInt64 { try metaInteger("horizon") }

    // MARK: Replicas

    var replicas: [ReplicaID] {
        get throws {
            if let replicaIDs { return replicaIDs }
            let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT idx, id FROM replicas ORDER BY idx"))
            var ids: [ReplicaID] = []
            for row in rows {
                let index: Int = row[0]
                let id: Data = row[1]
                guard index == ids.count, id.count == 16 else { throw StoreError.corrupt(path: store.directory.path, reason: "replica table out of order") }
                ids.append(ReplicaID(bytes: [UInt8](id)))
            }
            replicaIDs = ids
            return ids
        }
    }

    func invalidateReplicas() { replicaIDs = nil }

    func decode(_ blob: Data) throws -> RecordState {
        try decoding { try RecordBlob.decode([UInt8](blob), replicas: try replicas) }
    }

    func decodeVersion(_ blob: Data) throws -> RecordVersion {
        try decoding { try RecordBlob.decodeVersion([UInt8](blob), replicas: try replicas) }
    }

    /// A stored record that does not decode means a damaged store, not bad input.
    func decoding<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as LatticeCore.BinaryDecodingError {
            throw StoreError.corrupt(path: store.directory.path, reason: "a stored record cannot be decoded (\(error))")
        }
    }

    // MARK: Zones

    struct ZoneRow {
        var id: Int64
        var key: ZoneKey
        var sync: ZoneSyncState
    }

    func zoneRow(_ key: ZoneKey) throws -> ZoneRow? {
        // Cached per connection, as are the schema's reads: almost every
        // operation starts here, and preparing the statement anew (with GRDB's
        // authorizer walking it) cost more than running it.
        let statement = try db.cachedStatement(sql: """
            SELECT id, causal_length, stamp, vector, knowledge FROM zones WHERE scope = ? AND name = ? AND owner = ?
            """)
        let row = try Row.fetchOne(statement, arguments: [Int(key.scope.rawValue), key.zoneID.zoneName, key.zoneID.ownerName])
        return try row.map { try zoneRow(from: $0, key: key) }
    }

    private func zoneRow(from row: Row, key: ZoneKey) throws -> ZoneRow {
        let causalLength: Int64 = row["causal_length"]
        let state = ZoneState(causalLength: UInt64(causalLength), stamp: try RecordBlob.decodeStamp([UInt8](row["stamp"] as Data)))
        let sync = ZoneSyncState(
            zoneState: state,
            vector: try RecordBlob.decodeVector([UInt8](row["vector"] as Data)),
            knowledge: try RecordBlob.decodeVector([UInt8](row["knowledge"] as Data)))
        return ZoneRow(id: row["id"], key: key, sync: sync)
    }

    /// The zone's state and vectors, nil if this store never heard of it.
    package func syncState(of key: ZoneKey) throws -> ZoneSyncState? { try zoneRow(key)?.sync }

    /// Every zone this store knows in `scope`, deleted ones included.
    package func zones(in scope: DatabaseScope) throws -> [(key: ZoneKey, sync: ZoneSyncState)] {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, name, owner, causal_length, stamp, vector, knowledge FROM zones WHERE scope = ? ORDER BY name, owner
            """), arguments: [Int(scope.rawValue)])
        return try rows.map { row in
            let key = ZoneKey(scope: scope, zoneID: ZoneID(zoneName: row["name"], ownerName: row["owner"]))
            return (key, try zoneRow(from: row, key: key).sync)
        }
    }

    // MARK: Records

    /// The record's state, tombstones included; nil if never seen.
    package func record(_ name: String, in key: ZoneKey) throws -> RecordState? {
        guard let zone = try zoneRow(key) else { return nil }
        return try record(name, zoneID: zone.id)
    }

    // Held for the snapshot's life: looking a cached statement up by its SQL
    // text costs a hash of the text per call, which shows on a 100,000-record merge.
    private var recordStatement: RecordRowStatement?

    func record(_ name: String, zoneID: Int64) throws -> RecordState? {
        try recordBlob(name, zoneID: zoneID).map(decode)
    }

    /// The row id of the record `recordBlob` found last: a write that
    /// follows the read of the same record needs no second lookup.
    var lastRecordRow: (zone: Int64, name: String, id: Int64)?

    func recordBlob(_ name: String, zoneID: Int64) throws -> Data? {
        if recordStatement == nil { recordStatement = try RecordRowStatement(db, sql: "SELECT id, state FROM records WHERE zone = ? AND name = ?") }
        let found = try recordStatement!.step([.integer(zoneID), .text(name)]) {
            (RecordRowStatement.integer($0, column: 0), RecordRowStatement.blob($0, column: 1))
        }
        guard let (id, state) = found else { return nil }
        lastRecordRow = (zoneID, name, id)
        return state
    }

    /// The stored states (tombstones included) of those of `names` the zone
    /// holds, read with one statement per 500 names rather than one each.
    package func records(named names: [String], in key: ZoneKey) throws -> [String: RecordState] {
        guard let zone = try zoneRow(key), !names.isEmpty else { return [:] }
        var found: [String: RecordState] = [:]
        var start = 0
        while start < names.count {
            let chunk = names[start..<min(start + 500, names.count)]
            start += chunk.count
            let rows = try Row.fetchCursor(db, sql: """
                SELECT name, state FROM records WHERE zone = ? AND name IN (\(Array(repeating: "?", count: chunk.count).joined(separator: ",")))
                """, arguments: StatementArguments([zone.id] + chunk.map { $0 as DatabaseValueConvertible }))
            while let row = try rows.next() { found[row[0]] = try decode(row[1]) }
        }
        return found
    }

    package func liveRecordCount(in key: ZoneKey) throws -> Int {
        guard let zone = try zoneRow(key) else { return 0 }
        return try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM records WHERE zone = ? AND alive = 1"), arguments: [zone.id]) ?? 0
    }

    /// A text setting of the store (such as the device's name).
    package func setting(_ key: String) throws -> String? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?"), arguments: ["setting." + key]).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Live records of one type, for queries.
    package func records(ofType type: String, in key: ZoneKey) throws -> [RecordState] {
        guard let zone = try zoneRow(key) else { return [] }
        let blobs = try Data.fetchAll(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND type = ? AND alive = 1"), arguments: [zone.id, type])
        return try blobs.map(decode)
    }

    /// Records (live and deleted) changed after `sequence`, in change order.
    package func records(changedAfter sequence: UInt64, in key: ZoneKey, limit: Int = Int.max) throws -> [(state: RecordState, sequence: UInt64)] {
        guard let zone = try zoneRow(key) else { return [] }
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT state, change_seq FROM records WHERE zone = ? AND change_seq > ? ORDER BY change_seq, id LIMIT ?
            """), arguments: [zone.id, Int64(sequence), Int64(min(limit, Int(Int64.max)))])
        return try rows.map { row in (try decode(row[0]), UInt64(row[1] as Int64)) }
    }

    /// The records one commit changed.
    package func records(committedAt sequence: UInt64, in key: ZoneKey) throws -> [(state: RecordState, sequence: UInt64)] {
        guard let zone = try zoneRow(key) else { return [] }
        let blobs = try Data.fetchAll(db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND change_seq = ? ORDER BY id"), arguments: [zone.id, Int64(sequence)])
        return try blobs.map { (try decode($0), sequence) }
    }

    /// Calls `body` with each record changed after `sequence` without loading them all.
    func forEachRecord(changedAfter sequence: UInt64, zoneID: Int64, _ body: (RecordState) throws -> Void) throws {
        let cursor = try Data.fetchCursor(db, sql: "SELECT state FROM records WHERE zone = ? AND change_seq > ? ORDER BY change_seq, id", arguments: [zoneID, Int64(sequence)])
        while let blob = try cursor.next() { try body(try decode(blob)) }
    }

    /// Live records that reference `target` with `deleteSelf`.
    func cascadeSources(of target: String, zoneID: Int64) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT source FROM cascades WHERE zone = ? AND target = ?"), arguments: [zoneID, target])
    }

    // MARK: Conflicts and schema

    /// The unresolved conflicts of `name`'s fields (replicated with the record).
    package func conflicts(of name: String, in key: ZoneKey) throws -> [FieldConflict] {
        try record(name, in: key)?.conflicts ?? []
    }

    package func schema() throws -> Schema { try StoreSchema.read(db) }

    /// Whether an asset's content is in the store.
    package func hasAsset(_ hash: [UInt8]) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM assets WHERE hash = ?"), arguments: [Data(hash)]) ?? false
    }

    // MARK: Anti-entropy

    /// The sequence after which a peer at `vector` may lack records of the
    /// zone: the last checkpoint whose knowledge `vector` covers. Knowledge
    /// only grows along the checkpoints, so a binary search over sequence
    /// numbers finds it, each probe one index seek.
    func deltaStart(zoneID: Int64, for vector: VersionVector) throws -> UInt64 {
        let firstFrom = try db.cachedStatement(sql: "SELECT change_seq, knowledge FROM checkpoints WHERE zone = ? AND change_seq >= ? AND change_seq < ? ORDER BY change_seq LIMIT 1")
        let last = try db.cachedStatement(sql: "SELECT MAX(change_seq) FROM checkpoints WHERE zone = ?")
        guard let highest = try Int64.fetchOne(last, arguments: [zoneID]) else { return 0 }
        var low: Int64 = 0
        var high = highest + 1
        var best: UInt64 = 0
        while low < high {
            let middle = low + (high - low) / 2
            guard let row = try Row.fetchOne(firstFrom, arguments: [zoneID, middle, high]) else {
                high = middle
                continue
            }
            let sequence: Int64 = row[0]
            if vector.dominates(try RecordBlob.decodeVector([UInt8](row[1] as Data))) {
                best = UInt64(sequence)
                low = sequence + 1
            } else {
                high = middle
            }
        }
        return best
    }
}
