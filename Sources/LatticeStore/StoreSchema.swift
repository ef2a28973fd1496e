import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// The store's tables, as named forward-only migrations. Constraints live in
/// the schema so SQLite guards them even against our own bugs.
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) WITHOUT ROWID;
                -- Replica IDs by the small index record blobs use.
                CREATE TABLE replicas (idx INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE);
                CREATE TABLE zones (
                    id INTEGER PRIMARY KEY,
                    scope INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    owner TEXT NOT NULL,
                    causal_length INTEGER NOT NULL CHECK (causal_length > 0),
                    stamp BLOB NOT NULL,
                    vector BLOB NOT NULL,
                    knowledge BLOB NOT NULL,
                    UNIQUE (scope, name, owner)
                );
                CREATE TABLE records (
                    id INTEGER PRIMARY KEY,
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    type TEXT NOT NULL,
                    alive INTEGER NOT NULL CHECK (alive IN (0, 1)),
                    change_seq INTEGER NOT NULL,
                    state BLOB NOT NULL,
                    UNIQUE (zone, name)
                );
                CREATE INDEX records_by_change ON records (zone, change_seq);
                CREATE INDEX records_by_type ON records (zone, type) WHERE alive = 1;
                -- Per commit and zone: the knowledge the zone had (anti-entropy).
                CREATE TABLE checkpoints (
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    change_seq INTEGER NOT NULL,
                    knowledge BLOB NOT NULL,
                    PRIMARY KEY (zone, change_seq)
                ) WITHOUT ROWID;
                -- deleteSelf references, to find what a delete cascades to.
                CREATE TABLE cascades (
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    target TEXT NOT NULL,
                    source TEXT NOT NULL,
                    PRIMARY KEY (zone, target, source)
                ) WITHOUT ROWID;
                -- One row per merge that observed concurrent writes to a record:
                -- the losing and winning registers of each field, encoded together.
                CREATE TABLE conflicts (
                    id INTEGER PRIMARY KEY,
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    record TEXT NOT NULL,
                    entries BLOB NOT NULL
                );
                CREATE INDEX conflicts_by_record ON conflicts (zone, record);
                CREATE TABLE schema_fields (
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    type INTEGER NOT NULL,
                    stamp BLOB NOT NULL,
                    PRIMARY KEY (record_type, field)
                ) WITHOUT ROWID;
                CREATE TABLE schema_types (record_type TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                CREATE TABLE assets (hash BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2: conflicts replicated in record states") { db in
            try foldConflictLog(db)
            try db.execute(sql: "DROP TABLE conflicts")
        }
        migrator.registerMigration("v3: peers and resume points") { db in
            try db.execute(sql: """
                -- Devices this one has heard of: trusted ones form the account.
                CREATE TABLE peers (
                    device_id TEXT PRIMARY KEY NOT NULL,
                    name TEXT,
                    trusted INTEGER NOT NULL DEFAULT 0 CHECK (trusted IN (0, 1)),
                    address TEXT,
                    last_seen INTEGER
                ) WITHOUT ROWID;
                -- Per peer and zone: how far that peer's stream was applied here,
                -- committed with each batch, so a cut sync resumes.
                CREATE TABLE resume_points (
                    peer TEXT NOT NULL,
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    change_seq INTEGER NOT NULL,
                    row INTEGER NOT NULL,
                    PRIMARY KEY (peer, zone)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v4: field indexes") { db in
            try db.execute(sql: """
                -- The index kinds asked for per field (IndexKinds bits); the
                -- indexed values live in one table per record type (TypeIndex).
                CREATE TABLE schema_indexes (
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    kinds INTEGER NOT NULL CHECK (kinds BETWEEN 1 AND 7),
                    PRIMARY KEY (record_type, field)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v5: signed write blocks") { db in
            try db.execute(sql: """
                -- What each replica signed per zone (WriteBlock): entries is
                -- NULL for a head (a signature over the entries' hash alone).
                CREATE TABLE write_blocks (
                    scope INTEGER NOT NULL,
                    zone_name TEXT NOT NULL,
                    owner_name TEXT NOT NULL,
                    replica BLOB NOT NULL,
                    last INTEGER NOT NULL,
                    entry_count INTEGER NOT NULL,
                    entries_hash BLOB NOT NULL,
                    signature BLOB NOT NULL,
                    public_key BLOB NOT NULL,
                    entries BLOB,
                    PRIMARY KEY (scope, zone_name, owner_name, replica, last)
                ) WITHOUT ROWID;
                -- Batches of a peer refused because their writes were not
                -- what their writers signed: how many, and the last reason.
                ALTER TABLE peers ADD COLUMN refused_writes INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE peers ADD COLUMN last_refused_write TEXT;
                """)
        }
        migrator.registerMigration("v6: the account's roster") { db in
            try db.execute(sql: """
                -- Signed roster entries (RosterEntry) of the account in meta 'account'.
                CREATE TABLE roster_entries (hash BLOB PRIMARY KEY NOT NULL, bytes BLOB NOT NULL) WITHOUT ROWID;
                -- The roster's state, kept in step with the entries: members
                -- are trusted, removed devices refused, their later writes too.
                ALTER TABLE peers ADD COLUMN member INTEGER NOT NULL DEFAULT 0 CHECK (member IN (0, 1));
                ALTER TABLE peers ADD COLUMN removed INTEGER NOT NULL DEFAULT 0 CHECK (removed IN (0, 1));
                CREATE TABLE refused_writers (
                    replica BLOB PRIMARY KEY NOT NULL,
                    device_id TEXT NOT NULL,
                    writes_up_to INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v7: shares") { db in
            try db.execute(sql: """
                -- Who belongs to which account, as shared zones' change sets proved it
                -- (AccountMembership, checked on the way in): other accounts' writers.
                CREATE TABLE memberships (
                    replica BLOB NOT NULL,
                    account TEXT NOT NULL,
                    proof BLOB NOT NULL,
                    PRIMARY KEY (replica, account)
                ) WITHOUT ROWID;
                -- Shared zones other accounts' devices offered this account, not accepted yet.
                CREATE TABLE share_invitations (
                    zone_name TEXT NOT NULL,
                    owner TEXT NOT NULL,
                    offered_by TEXT NOT NULL,
                    received_at INTEGER NOT NULL,
                    -- Accepted: its zone is taken from the devices that offer it, until it is held.
                    accepted INTEGER NOT NULL DEFAULT 0 CHECK (accepted IN (0, 1)),
                    PRIMARY KEY (zone_name, owner)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v8: asset references") { db in
            try db.execute(sql: """
                -- Which records reference which asset content (fields and their
                -- conflicts, of live records): what a peer may fetch, and what is missing.
                CREATE TABLE asset_refs (
                    hash BLOB NOT NULL,
                    size INTEGER NOT NULL,
                    zone INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    PRIMARY KEY (hash, zone, source)
                ) WITHOUT ROWID;
                CREATE INDEX asset_refs_by_record ON asset_refs (zone, source);
                -- Assets a person or an app asked for (`lattice asset fetch`), until their content is here.
                CREATE TABLE asset_wants (hash BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL, asked_at INTEGER NOT NULL) WITHOUT ROWID;
                """)
            try indexAssetReferences(db)
        }
        migrator.registerMigration("v9: unreferenced assets") { db in
            try db.execute(sql: """
                -- Content here that no live record references any more: the zone of its last
                -- reference, and a vector holding every change that dropped a reference to it.
                -- Removed once every device that holds the zone holds that vector (no reference
                -- can come back from one that has not seen those changes).
                CREATE TABLE asset_orphans (hash BLOB PRIMARY KEY NOT NULL, zone INTEGER NOT NULL, dropped BLOB NOT NULL) WITHOUT ROWID;
                -- What each device of the account said it holds of each zone (a vector), as a
                -- running node last saved it: a restarted node need not meet each device again.
                CREATE TABLE peer_holds (peer TEXT NOT NULL, zone INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (peer, zone)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v10: digests") { db in
            try db.execute(sql: """
                -- Each record's digest item (its name's bytes, the hash of its whole state), in
                -- key order for range reconciliation, and each zone's sum of them. Kept up to
                -- date lazily, when a digest is asked for, from `digest_dirty`: triggers note
                -- every record row written or removed, by Lattice or by anything else that
                -- edits the file, so a digest always reflects the rows as they are.
                CREATE TABLE record_digests (
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    key BLOB NOT NULL,
                    hash BLOB NOT NULL,
                    PRIMARY KEY (zone, key)
                ) WITHOUT ROWID;
                CREATE TABLE zone_digests (
                    zone INTEGER PRIMARY KEY REFERENCES zones(id) ON DELETE CASCADE,
                    sum BLOB NOT NULL,
                    count INTEGER NOT NULL
                );
                CREATE TABLE digest_dirty (zone INTEGER NOT NULL, key BLOB NOT NULL, PRIMARY KEY (zone, key)) WITHOUT ROWID;
                CREATE TRIGGER records_digest_insert AFTER INSERT ON records BEGIN
                    INSERT OR IGNORE INTO digest_dirty (zone, key) VALUES (NEW.zone, CAST(NEW.name AS BLOB));
                END;
                CREATE TRIGGER records_digest_update AFTER UPDATE OF zone, name, state ON records BEGIN
                    INSERT OR IGNORE INTO digest_dirty (zone, key) VALUES (OLD.zone, CAST(OLD.name AS BLOB));
                    INSERT OR IGNORE INTO digest_dirty (zone, key) VALUES (NEW.zone, CAST(NEW.name AS BLOB));
                END;
                CREATE TRIGGER records_digest_delete AFTER DELETE ON records BEGIN
                    INSERT OR IGNORE INTO digest_dirty (zone, key) VALUES (OLD.zone, CAST(OLD.name AS BLOB));
                END;
                INSERT INTO digest_dirty (zone, key) SELECT zone, CAST(name AS BLOB) FROM records;
                """)
        }
        migrator.registerMigration("v11: node requests") { db in
            try db.execute(sql: """
                -- Requests another process makes of the node running on the store (`lattice diff
                -- DEVICE-ID`): posted, answered by the node, read and removed by the poster.
                CREATE TABLE node_requests (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    body BLOB NOT NULL,
                    answer BLOB,
                    posted INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v12: commit sources") { db in
            try db.execute(sql: """
                -- The peer whose batch each recent commit applied (the last 1,024): a node
                -- does not relay a commit to devices that peer streams to itself.
                CREATE TABLE commit_sources (sequence INTEGER PRIMARY KEY, peer TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("v13: collected tombstones") { db in
            try db.execute(sql: """
                -- What is left of each collected tombstone (RecordResidue): its incarnation
                -- and vector, so no older copy of the record can bring it back.
                CREATE TABLE residues (
                    zone INTEGER NOT NULL REFERENCES zones(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    causal_length INTEGER NOT NULL CHECK (causal_length > 0 AND causal_length % 2 = 0),
                    vector BLOB NOT NULL,
                    PRIMARY KEY (zone, name)
                ) WITHOUT ROWID;
                CREATE INDEX records_deleted ON records (zone) WHERE alive = 0;
                -- Per zone, the join of the collected tombstones' vectors (a device whose
                -- vector does not cover it may hold records collected here: `collected`), and
                -- the last change sequence of any of them: the zone's change tokens before it expire.
                CREATE TABLE collected_through (
                    zone INTEGER PRIMARY KEY REFERENCES zones(id) ON DELETE CASCADE,
                    vector BLOB NOT NULL,
                    horizon INTEGER NOT NULL
                );
                """)
        }
        migrator.registerMigration("v14: index removals") { db in
            try db.execute(sql: """
                -- Index kinds removed on this device (Schema.removedIndexes): local,
                -- never sent, and kept off when a peer's schema carries them.
                CREATE TABLE index_removals (
                    record_type TEXT NOT NULL,
                    field TEXT NOT NULL,
                    kinds INTEGER NOT NULL CHECK (kinds BETWEEN 1 AND 7),
                    PRIMARY KEY (record_type, field)
                ) WITHOUT ROWID;
                """)
            try rebuildListAndLocationIndexes(db)
        }
        migrator.registerMigration("v15: asset scopes") { db in
            try db.execute(sql: """
                -- The scopes (AssetScope) in which this store serves an asset's content: where
                -- this device itself referenced it, or where it was referenced when it arrived.
                -- A reference alone (a stranger's public record naming a private file's hash)
                -- gets no content.
                CREATE TABLE asset_scopes (hash BLOB NOT NULL, scope TEXT NOT NULL, PRIMARY KEY (hash, scope)) WITHOUT ROWID;
                """)
            // Content an earlier build took: in the scopes of the zones referencing it, its
            // private or shared ones alone where it has any (as content arriving now is).
            for hash in try Data.fetchAll(db, sql: "SELECT hash FROM assets") {
                try AssetScope.grantFromReferences([UInt8](hash), in: db)
            }
        }
        migrator.registerMigration("v16: signed residues") { db in
            try db.execute(sql: """
                -- The stamp of the delete each residue stands for: its signed block is kept with
                -- the residue, so a device back after the tombstone horizon deletes a record on a
                -- delete its writer signed (takeCollected), never on the teller's word. NULL in
                -- residues kept by an earlier build: those prove nothing to another device.
                ALTER TABLE residues ADD COLUMN deletion BLOB;
                """)
        }
        migrator.registerMigration("v17: history") { db in
            try db.execute(sql: """
                -- What each commit did to each record, by writer commit (StoreTransaction+History):
                -- id is the history token (the order this device stored them), seq the commit that
                -- stored it, at the wall-clock millisecond it did; author is a replicas.idx, commit
                -- the writer commit's identity (the time of its first stamp, signed in its blocks),
                -- context the app's author string of a local write; changes the fields' writes with
                -- the values they replaced (HistoryChangeCodec).
                CREATE TABLE history (
                    id INTEGER PRIMARY KEY,
                    seq INTEGER NOT NULL,
                    at INTEGER NOT NULL,
                    zone INTEGER NOT NULL,
                    record TEXT NOT NULL,
                    type TEXT NOT NULL,
                    author INTEGER NOT NULL,
                    commit_time INTEGER NOT NULL,
                    kind INTEGER NOT NULL,
                    context TEXT,
                    changes BLOB NOT NULL
                );
                CREATE INDEX history_by_record ON history (zone, record, seq);
                -- The field names history's changes give by number (HistoryChangeCodec).
                CREATE TABLE history_names (idx INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                -- Selective sync: the zones each peer said in its hello it does not replicate.
                CREATE TABLE peer_exclusions (
                    peer TEXT NOT NULL, scope INTEGER NOT NULL, zone_name TEXT NOT NULL, owner_name TEXT NOT NULL,
                    PRIMARY KEY (peer, scope, zone_name, owner_name)
                ) WITHOUT ROWID;
                -- A store kept before history has none of its earlier commits: none is read back past them.
                INSERT INTO meta (key, value) SELECT 'history_floor', value FROM meta WHERE key = 'sequence';
                INSERT INTO meta (key, value) SELECT 'history_floor_at', CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM meta WHERE key = 'sequence';
                """)
        }
        return migrator
    }

    /// The container's schema as stored: definitions, types, the index kinds
    /// asked for less those removed here, deployment.
    static func read(_ db: GRDB.Database) throws -> Schema {
        var schema = Schema()
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT record_type, field, type, stamp FROM schema_fields")) {
            let code: Int = row[2]
            guard let type = FieldType(code: UInt8(truncatingIfNeeded: code)) else { continue }
            schema.merge(SchemaField(recordType: row[0], field: row[1], type: type, stamp: try RecordBlob.decodeStamp([UInt8](row[3] as Data))))
        }
        for type in try String.fetchAll(db.cachedStatement(sql: "SELECT record_type FROM schema_types")) { schema.addRecordType(type) }
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT record_type, field, kinds FROM index_removals")) {
            let bits: Int = row[2]
            schema.setRemoved(index: IndexKinds(rawValue: UInt8(truncatingIfNeeded: bits)).intersection(.all), field: row[1], of: row[0])
        }
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT record_type, field, kinds FROM schema_indexes")) {
            let bits: Int = row[2]
            schema.merge(index: IndexKinds(rawValue: UInt8(truncatingIfNeeded: bits)).intersection(.all), field: row[1], of: row[0])
        }
        if let deployed = try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'deployed'")) {
            schema.merge(deployed: try RecordBlob.decodeStamp([UInt8](deployed)))
        }
        return schema
    }

    /// Earlier builds kept a list or location field's index kinds (a peer's
    /// schema could carry them) in a column that holds nothing: such types
    /// get their member tables and R*Trees now.
    private static func rebuildListAndLocationIndexes(_ db: GRDB.Database) throws {
        let schema = try read(db)
        let replicas = try Data.fetchAll(db, sql: "SELECT id FROM replicas ORDER BY idx").map { ReplicaID(bytes: [UInt8]($0)) }
        for recordType in Set(schema.indexes.keys.map(\.recordType)).sorted() {
            let structures = schema.indexedFields(of: recordType).map { schema.indexStructure($0.field, of: recordType) }
            guard structures.contains(.members) || structures.contains(.location) else { continue }
            try TypeIndex.build(recordType, schema: schema, in: db) { try RecordBlob.decode([UInt8]($0), replicas: replicas) }
        }
    }

    /// Fills `asset_refs` from the records an earlier build stored.
    private static func indexAssetReferences(_ db: GRDB.Database) throws {
        let replicas = try Data.fetchAll(db, sql: "SELECT id FROM replicas ORDER BY idx").map { ReplicaID(bytes: [UInt8]($0)) }
        let rows = try Row.fetchCursor(db, sql: "SELECT zone, state FROM records WHERE alive = 1")
        while let row = try rows.next() {
            let state = try RecordBlob.decode([UInt8](row[1] as Data), replicas: replicas)
            for asset in state.liveAssets {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO asset_refs (hash, size, zone, source) VALUES (?, ?, ?, ?)",
                    arguments: [Data(asset.hash), asset.size, row[0] as Int64, state.recordName])
            }
        }
    }

    /// Moves the per-replica conflict log of v1 into the records' registers,
    /// where conflicts now live: a logged loser is kept if the field still has
    /// the winner it lost to.
    private static func foldConflictLog(_ db: GRDB.Database) throws {
        var replicas = ReplicaTable(try Data.fetchAll(db, sql: "SELECT id FROM replicas ORDER BY idx").map { ReplicaID(bytes: [UInt8]($0)) })
        let logged = try Row.fetchAll(db, sql: """
            SELECT r.id, r.state, c.entries FROM conflicts c JOIN records r ON r.zone = c.zone AND r.name = c.record WHERE r.alive = 1 ORDER BY c.id
            """)
        var states: [Int64: RecordState] = [:]
        for row in logged {
            let id: Int64 = row[0]
            var state = try states[id] ?? RecordBlob.decode([UInt8](row[1] as Data), replicas: replicas.replicas)
            for conflict in try ConflictCodec.decode([UInt8](row[2] as Data), recordName: state.recordName) {
                guard let index = state.fields.firstIndex(where: { $0.name == conflict.field }) else { continue }
                var register = state.fields[index]
                guard register.stamp == conflict.winningStamp, conflict.losingStamp < register.stamp, state.vector.covers(conflict.losingStamp),
                      !register.losers.contains(where: { $0.stamp == conflict.losingStamp }) else { continue }
                register.losers.append(FieldVersion(value: conflict.losingValue, stamp: conflict.losingStamp))
                register.losers.sort { $0.stamp > $1.stamp }
                state.fields[index] = register
            }
            states[id] = state
        }
        for (id, state) in states {
            try db.execute(sql: "UPDATE records SET state = ? WHERE id = ?", arguments: [Data(RecordBlob.encode(state, replicas: &replicas)), id])
        }
    }
}
