@_spi(Tools) import LatticeCore
import LatticeStore

/// Carries out one `modifyRecords` inside its transaction: checks every item
/// first, then turns saves and deletes into local writes.
struct RecordWriter {
    let database: Database
    let transaction: StoreTransaction
    var savePolicy: SavePolicy
    var schema: Schema
    /// Whether this batch has made sure the default zone exists.
    private var defaultZoneReady = false

    init(database: Database, transaction: StoreTransaction, savePolicy: SavePolicy) throws {
        self.database = database
        self.transaction = transaction
        transaction.historyAuthor = database.historyAuthor
        self.savePolicy = savePolicy
        schema = try transaction.schema()
    }

    private mutating func requireZone(_ zoneID: Zone.ID) throws(LatticeError) {
        let zone = try key(zoneID)
        let exists = try LatticeError.wrap { try Database.zoneExists(at: zone, in: transaction) }
        guard exists else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist; create it first") }
    }

    /// Where each zone of the batch is stored, looked up once per zone.
    private var keys: [Zone.ID: ZoneKey] = [:]

    mutating func key(_ zoneID: Zone.ID) throws(LatticeError) -> ZoneKey {
        if let key = keys[zoneID] { return key }
        let key = try LatticeError.wrap { try database.key(zoneID, in: transaction) }
        keys[zoneID] = key
        return key
    }

    /// States read ahead for a batch, by zone then name: a name of a zone
    /// read ahead and not found here is not stored.
    private var readAhead: [Zone.ID: [String: RecordState]] = [:]

    /// Reads the stored states of a batch's records with a few statements
    /// instead of one per record.
    mutating func readAhead(_ ids: [Record.ID]) throws(LatticeError) {
        let byZone = Dictionary(grouping: ids, by: \.zoneID)
        for (zoneID, ids) in byZone {
            let zone = try key(zoneID)
            // A public record's stored name is found one by one (`storedName`).
            guard zone.scope != .public else { continue }
            let states = try LatticeError.wrap { try transaction.records(named: ids.map(\.recordName), in: zone) }
            readAhead[zoneID] = states
        }
    }

    private mutating func current(_ id: Record.ID) throws(LatticeError) -> RecordState? {
        if let states = readAhead[id.zoneID] { return states[id.recordName] }
        let zone = try key(id.zoneID)
        let reached = try LatticeError.wrap { try transaction.record(reaching: id.recordName, in: zone, writing: true) }
        storedNames[id] = reached.name
        return reached.state
    }

    /// The stored names of this batch's records where they differ from the
    /// name the app gives (the public database's), found as `current` reads them.
    private var storedNames: [Record.ID: String] = [:]

    /// The name a write of `id` takes in the store: its own outside the
    /// public database; there, the one `PublicRecordName.resolve` picks.
    private mutating func storedName(_ id: Record.ID) throws(LatticeError) -> String {
        if let name = storedNames[id] { return name }
        let zone = try key(id.zoneID)
        guard zone.scope == .public else { return id.recordName }
        let name = try LatticeError.wrap { try transaction.storedRecordName(id.recordName, in: zone, writing: true) }
        storedNames[id] = name
        return name
    }

    /// Checks a save before anything is written; returns the record's stored
    /// state, which `write` takes so that a batch reads each record once.
    mutating func check(_ record: Record) throws(LatticeError) -> RecordState? {
        try requireZone(record.recordID.zoneID)
        try RecordValidation.check(record, schema: schema)
        let existing = try current(record.recordID)
        if let existing, existing.isAlive, existing.recordType != record.recordType {
            throw LatticeError(.invalidArguments, "record \(record.recordID) is a \(existing.recordType); cannot save it as a \(record.recordType)")
        }
        guard savePolicy == .ifServerRecordUnchanged else { return existing }
        let alive = existing?.isAlive == true
        switch (record.recordChangeTag, alive) {
        case (nil, false):
            return existing
        case (nil, true):
            throw LatticeError(.serverRecordChanged, "record \(record.recordID) already exists; fetch it and save your changes onto it, or save with the changedKeys or allKeys policy",
                               serverRecord: Record(state: existing!, zoneID: record.recordID.zoneID))
        case (_?, false):
            throw LatticeError(.unknownItem, "record \(record.recordID) was deleted since it was fetched")
        case (let tag?, true):
            guard tag == existing!.changeTag else {
                throw LatticeError(.serverRecordChanged, "record \(record.recordID) changed since it was fetched (tag \(tag), now \(existing!.changeTag)); merge with the server record and retry",
                                   serverRecord: Record(state: existing!, zoneID: record.recordID.zoneID))
            }
            return existing
        }
    }

    mutating func checkDelete(_ id: Record.ID) throws(LatticeError) {
        try requireZone(id.zoneID)
        guard let existing = try current(id), existing.isAlive else {
            throw LatticeError(.unknownItem, "record \(id) does not exist")
        }
    }

    /// Saves a checked record; `previous` is what `check` returned for it.
    mutating func write(_ record: Record, previous: RecordState?) throws -> Record {
        let key = try key(record.recordID.zoneID)
        if record.recordID.zoneID.isDefault, !defaultZoneReady {
            try transaction.createZone(key)
            defaultZoneReady = true
        }
        let outcome = try transaction.save(
            try storedName(record.recordID), type: record.recordType, in: key, changes: changes(of: record),
            replacement: savePolicy == .allKeys ? .allKeys : .changedKeys, knownPrevious: .some(previous))
        return Record(state: outcome.state, zoneID: record.recordID.zoneID)
    }

    /// The fields a save writes, by name: every field (and every removed
    /// one) under allKeys or for a new record, else the changed ones.
    private func changes(of record: Record) -> [(name: String, value: FieldValue?)] {
        let changed = record.changedKeys()
        guard savePolicy == .allKeys || record.recordChangeTag == nil else { return changed.map { ($0, record[$0]) } }
        let present = record.fields.sorted { $0.key < $1.key }
        // Both lists are sorted: merge them; a changed key without a value is a removal.
        var merged: [(name: String, value: FieldValue?)] = []
        merged.reserveCapacity(present.count + changed.count)
        var (i, j) = (0, 0)
        while i < present.count || j < changed.count {
            if j == changed.count || (i < present.count && present[i].key < changed[j]) {
                merged.append((present[i].key, present[i].value))
                i += 1
            } else if i == present.count || changed[j] < present[i].key {
                merged.append((changed[j], nil))
                j += 1
            } else {
                merged.append((present[i].key, present[i].value))
                i += 1
                j += 1
            }
        }
        return merged
    }

    mutating func delete(_ id: Record.ID) throws {
        try transaction.delete([try storedName(id)], in: try key(id.zoneID))
    }
}
