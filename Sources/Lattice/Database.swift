@_spi(Tools) import LatticeCore
import LatticeStore

/// How a save treats the record already stored, as `CKModifyRecordsOperation.RecordSavePolicy`.
public enum SavePolicy: Sendable {
    /// Fail with serverRecordChanged unless the record's change tag is current; write changed keys.
    case ifServerRecordUnchanged
    /// Write the changed keys whatever the stored record is.
    case changedKeys
    /// Make the record's field set exactly this record's fields.
    case allKeys
}

/// One of a container's databases, as `CKDatabase`.
///
/// Calls are synchronous and thread-safe; every write is one SQLite
/// transaction, durable when the call returns.
public struct Database: Sendable {
    public let container: Container
    public let databaseScope: DatabaseScope
    /// The author string this database's local writes carry in history
    /// (SwiftData's `ModelContext.author`); nil for none. See `withHistoryAuthor(_:)`.
    public internal(set) var historyAuthor: String?

    init(container: Container, scope: DatabaseScope) {
        self.container = container
        databaseScope = scope
    }

    var store: RecordStore { container.store }

    /// Where the store keeps a zone of this database. A zone this account
    /// shares is kept once, in the shared database as `NAME:ACCOUNT` (the
    /// identity every participant knows it by), yet its owner sees it in its
    /// private database under its own name, as CloudKit's owner does: a
    /// private zone ID naming no private zone resolves to it.
    func key(_ zoneID: Zone.ID, in snapshot: StoreSnapshot) throws -> ZoneKey {
        // SQLite would take such a name up to its NUL: another zone's (found by a hostile HTTP client).
        guard !zoneID.zoneName.utf8.contains(0), !zoneID.ownerName.utf8.contains(0) else {
            throw LatticeError(.invalidArguments, "a zone's name or owner cannot hold a NUL character")
        }
        let resolved = try storedKey(zoneID, in: snapshot)
        try requireReplicated(resolved, in: snapshot)
        return resolved
    }

    /// `key(_:in:)` without the selective-sync check.
    func storedKey(_ zoneID: Zone.ID, in snapshot: StoreSnapshot) throws -> ZoneKey {
        let plain = ZoneKey(scope: databaseScope, zoneID: zoneID)
        guard databaseScope == .private, !zoneID.isDefault, zoneID.ownerName == Zone.ID.defaultOwnerName,
              try snapshot.syncState(of: plain)?.zoneState.exists != true else { return plain }
        let shared = ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: zoneID.zoneName, ownerName: try snapshot.accountID()))
        return try snapshot.syncState(of: shared)?.zoneState.exists == true ? shared : plain
    }

    /// Where the store keeps a zone of this database (see `key(_:in:)`).
    package func storedZoneKey(_ zoneID: Zone.ID) throws(LatticeError) -> ZoneKey {
        try LatticeError.wrap { try store.read { try key(zoneID, in: $0) } }
    }

    // MARK: Zones

    /// Creates a zone (or re-creates a deleted one); saving an existing zone is fine.
    @discardableResult
    public func save(_ zone: Zone) throws(LatticeError) -> Zone {
        try RecordValidation.checkZoneName(zone.zoneID.zoneName)
        guard databaseScope != .shared else {
            throw LatticeError(.invalidArguments, "zones cannot be created in the shared database: a shared zone comes from another account's share, as in CloudKit")
        }
        guard databaseScope != .public || zone.zoneID.isDefault else {
            throw LatticeError(.invalidArguments, "the public database has only the default zone (\(Zone.ID.defaultZoneName)), as in CloudKit: custom zones are for the private database")
        }
        try LatticeError.wrap { try store.write { _ = try $0.createZone(key(zone.zoneID, in: $0)) } }
        return zone
    }

    /// Deletes a zone and every record in it, on every replica.
    public func deleteZone(withID zoneID: Zone.ID) throws(LatticeError) {
        guard !zoneID.isDefault else {
            throw LatticeError(.invalidArguments, "the default zone cannot be deleted")
        }
        try LatticeError.wrap {
            try store.write { transaction in
                if databaseScope == .shared, zoneID.ownerName != (try transaction.accountID()) {
                    throw LatticeError(.permissionFailure, "zone \(zoneID) is another account's: only its owner deletes it (leave it with `lattice share leave \(zoneID.zoneName)`)")
                }
                try transaction.deleteZone(key(zoneID, in: transaction))
            }
        }
    }

    /// The zones that exist, the default zone first. The private database
    /// lists the zones this account shares too, under their own names.
    public func allRecordZones() throws(LatticeError) -> [Zone] {
        let known = try LatticeError.wrap { () throws -> [ZoneKey] in
            try store.read { snapshot in
                var keys = try snapshot.zones(in: databaseScope).filter { $0.sync.zoneState.exists }.map(\.key)
                if databaseScope == .private {
                    let own = try snapshot.accountID()
                    let shared = try snapshot.zones(in: .shared).filter { $0.sync.zoneState.exists && $0.key.zoneID.ownerName == own }
                    let names = Set(keys.map(\.zoneID.zoneName))
                    keys += shared.map(\.key).filter { !names.contains($0.zoneID.zoneName) }
                        .map { ZoneKey(scope: .private, zoneID: ZoneID(zoneName: $0.zoneID.zoneName)) }
                }
                return keys
            }
        }
        let others = known.filter { !$0.zoneID.isDefault }.map { Zone(zoneID: $0.zoneID) }.sorted { $0.zoneID.zoneName < $1.zoneID.zoneName }
        return databaseScope == .shared ? others : [Zone.default] + others
    }

    /// The zone a person means by `zoneID`: in the shared database, a zone
    /// ID without its owner (`Lists`), or with its owner's account ID or a
    /// prefix of it after a colon (`Lists:ABCDEFG`), names the shared zone
    /// held here that it matches alone; elsewhere, `zoneID` itself.
    public func resolveZoneID(_ zoneID: Zone.ID) throws(LatticeError) -> Zone.ID {
        guard databaseScope == .shared, zoneID.ownerName == Zone.ID.defaultOwnerName else { return zoneID }
        var name = zoneID.zoneName
        var owner = ""
        if let colon = name.lastIndex(of: ":") {
            owner = String(name[name.index(after: colon)...]).uppercased()
            name = String(name[..<colon])
        }
        let held = try LatticeError.wrap { try store.read { try $0.zones(in: .shared) } }.filter { $0.sync.zoneState.exists }.map(\.key.zoneID)
        let matches = held.filter { $0.zoneName == name && $0.ownerName.hasPrefix(owner) }
        guard matches.count == 1 else {
            if matches.isEmpty {
                throw LatticeError(.zoneNotFound, "no shared zone \(zoneID.zoneName) is held here; `lattice share list` shows the shared zones, `lattice share invitations` the offered ones")
            }
            throw LatticeError(.invalidArguments, "\(matches.count) shared zones are named \(name); name one as ZONE:OWNER (\(matches.map(\.description).sorted().joined(separator: ", ")))")
        }
        return matches[0]
    }

    /// Whether records can be written to the zone now.
    func zoneExists(_ zoneID: Zone.ID, in snapshot: StoreSnapshot) throws -> Bool {
        try Self.zoneExists(at: key(zoneID, in: snapshot), in: snapshot)
    }

    /// Whether records can be written to the zone stored at `key` now (the default zone always).
    static func zoneExists(at key: ZoneKey, in snapshot: StoreSnapshot) throws -> Bool {
        try key.zoneID.isDefault || snapshot.syncState(of: key)?.zoneState.exists == true
    }

    // MARK: Records

    /// Fetches a record; unknownItem if it does not exist.
    public func record(for recordID: Record.ID) throws(LatticeError) -> Record {
        let state = try LatticeError.wrap { () throws -> RecordState? in
            try store.read { snapshot in
                let zone = try key(recordID.zoneID, in: snapshot)
                guard try Self.zoneExists(at: zone, in: snapshot) else {
                    throw LatticeError(.zoneNotFound, "zone \(recordID.zoneID) does not exist")
                }
                return try snapshot.record(reaching: recordID.recordName, in: zone, writing: false).state
            }
        }
        guard let state, state.isAlive else { throw LatticeError(.unknownItem, "record \(recordID) does not exist") }
        return Record(state: state, zoneID: recordID.zoneID, recordName: recordID.recordName)
    }

    /// Saves one record with the ifServerRecordUnchanged policy, as `CKDatabase.save`.
    @discardableResult
    public func save(_ record: Record, savePolicy: SavePolicy = .ifServerRecordUnchanged) throws(LatticeError) -> Record {
        let results = try modifyRecords(saving: [record], deleting: [], savePolicy: savePolicy, atomically: true)
        return try results.saveResults[record.recordID]!.get()
    }

    /// Deletes one record only if its change tag is still `tag` (serverRecordChanged otherwise).
    @discardableResult
    public func deleteRecord(withID recordID: Record.ID, ifChangeTag tag: String) throws(LatticeError) -> Record.ID {
        try LatticeError.wrap {
            try store.write { transaction in
                var writer = try RecordWriter(database: self, transaction: transaction, savePolicy: .ifServerRecordUnchanged)
                try writer.checkDelete(recordID)
                let current = try transaction.record(reaching: recordID.recordName, in: key(recordID.zoneID, in: transaction), writing: true).state!
                guard current.changeTag == tag else {
                    throw LatticeError(.serverRecordChanged, "record \(recordID) changed since tag \(tag) (now \(current.changeTag)); fetch it and decide again",
                                       serverRecord: Record(state: current, zoneID: recordID.zoneID))
                }
                try writer.delete(recordID)
            }
        }
        return recordID
    }

    /// How many live records a zone holds.
    public func recordCount(inZoneWith zoneID: Zone.ID) throws(LatticeError) -> Int {
        try LatticeError.wrap { try store.read { try $0.liveRecordCount(in: key(zoneID, in: $0)) } }
    }

    /// Deletes one record (and what references it with deleteSelf).
    @discardableResult
    public func deleteRecord(withID recordID: Record.ID) throws(LatticeError) -> Record.ID {
        let results = try modifyRecords(saving: [], deleting: [recordID], atomically: true)
        try results.deleteResults[recordID]!.get()
        return recordID
    }

    /// The results of `modifyRecords`, per record.
    public struct ModifyResults: Sendable {
        public var saveResults: [Record.ID: Result<Record, LatticeError>]
        public var deleteResults: [Record.ID: Result<Void, LatticeError>]
    }

    /// Saves and deletes records in one transaction, as `CKDatabase.modifyRecords`.
    ///
    /// Every item is checked before anything is written. Atomically, one
    /// failure fails the whole call (the others get batchRequestFailed) and
    /// nothing is written; otherwise the items that pass are written and each
    /// result says how its item fared.
    public func modifyRecords(
        saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
        savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true
    ) throws(LatticeError) -> ModifyResults {
        var saveIDs = Set<Record.ID>(minimumCapacity: recordsToSave.count)
        for record in recordsToSave {
            guard saveIDs.insert(record.recordID).inserted, !recordIDsToDelete.contains(record.recordID) else {
                throw LatticeError(.invalidArguments, "record \(record.recordID) appears twice in one request")
            }
        }
        return try LatticeError.wrap {
            try store.write { transaction in
                var writer = try RecordWriter(database: self, transaction: transaction, savePolicy: savePolicy)
                if recordsToSave.count + recordIDsToDelete.count > 1 { try writer.readAhead(recordsToSave.map(\.recordID) + recordIDsToDelete) }
                let saves = recordsToSave.map { record in (record, Result { () throws(LatticeError) -> RecordState? in try writer.check(record) }) }
                let deletes = recordIDsToDelete.map { id in (id, Result { () throws(LatticeError) in try writer.checkDelete(id) }) }
                let failed = saves.contains { $0.1.failure != nil } || deletes.contains { $0.1.failure != nil }
                if atomically && failed {
                    var results = ModifyResults(saveResults: [:], deleteResults: [:])
                    var partial: [String: LatticeError] = [:]
                    for (record, check) in saves {
                        let error = check.failure ?? LatticeError(.batchRequestFailed, "not saved: another record of the atomic batch failed")
                        results.saveResults[record.recordID] = .failure(error)
                        partial[record.recordID.description] = error
                    }
                    for (id, check) in deletes {
                        let error = check.failure ?? LatticeError(.batchRequestFailed, "not deleted: another record of the atomic batch failed")
                        results.deleteResults[id] = .failure(error)
                        partial[id.description] = error
                    }
                    let culprit = partial.values.first { $0.code != .batchRequestFailed }
                    throw LatticeError(culprit?.code ?? .partialFailure, culprit?.message ?? "the atomic batch failed", serverRecord: culprit?.serverRecord, partialErrors: partial)
                }
                var results = ModifyResults(saveResults: .init(minimumCapacity: saves.count), deleteResults: .init(minimumCapacity: deletes.count))
                for (record, check) in saves {
                    switch check {
                    case .failure(let error): results.saveResults[record.recordID] = .failure(error)
                    case .success(let previous): results.saveResults[record.recordID] = .success(try writer.write(record, previous: previous))
                    }
                }
                for (id, check) in deletes {
                    if case .failure(let error) = check { results.deleteResults[id] = .failure(error); continue }
                    try writer.delete(id)
                    results.deleteResults[id] = .success(())
                }
                return results
            }
        }
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { return error } else { return nil } }
}

/// Who last wrote a field of a record, and when: the winning write of its register.
public struct FieldWrite: Sendable, Hashable {
    /// The field's name.
    public var field: String
    /// The writer's clock, milliseconds since 1970.
    public var milliseconds: Int64
    /// The writing replica (`Record.lastModifierReplica`'s kind of ID).
    public var replica: ReplicaID
    /// The write removed the field.
    public var removed: Bool
}

extension Database {
    /// The last write of each of a record's fields, removed ones included, by field name.
    public func fieldWrites(for recordID: Record.ID) throws(LatticeError) -> [FieldWrite] {
        let state = try LatticeError.wrap { () throws -> RecordState? in
            try store.read { snapshot in
                try snapshot.record(reaching: recordID.recordName, in: try key(recordID.zoneID, in: snapshot), writing: false).state
            }
        }
        guard let state, state.isAlive else { throw LatticeError(.unknownItem, "record \(recordID) does not exist") }
        return state.fields.map { FieldWrite(field: $0.name, milliseconds: Int64($0.stamp.time.milliseconds), replica: $0.stamp.replica, removed: $0.value == nil) }
    }
}
