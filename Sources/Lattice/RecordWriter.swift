import LatticeCore
import LatticeStore

/// Carries out one `modifyRecords` inside its transaction: checks every item
/// first, then turns saves and deletes into local writes.
struct RecordWriter {
    let database: Database
    let transaction: StoreTransaction
    let savePolicy: SavePolicy
    var schema: Schema
    /// What `check` read of each record, for `write`: a batch reads each record once.
    private var checked: [Record.ID: RecordState?] = [:]

    init(database: Database, transaction: StoreTransaction, savePolicy: SavePolicy) throws {
        self.database = database
        self.transaction = transaction
        self.savePolicy = savePolicy
        schema = try transaction.schema()
    }

    private func requireZone(_ zoneID: Zone.ID) throws(LatticeError) {
        let exists = try LatticeError.wrap { try database.zoneExists(zoneID, in: transaction) }
        guard exists else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist; create it first") }
    }

    private func current(_ id: Record.ID) throws(LatticeError) -> RecordState? {
        try LatticeError.wrap { try transaction.record(id.recordName, in: database.key(id.zoneID)) }
    }

    mutating func check(_ record: Record) throws(LatticeError) {
        try requireZone(record.recordID.zoneID)
        try RecordValidation.check(record, schema: schema)
        let existing = try current(record.recordID)
        checked[record.recordID] = .some(existing)
        if let existing, existing.isAlive, existing.recordType != record.recordType {
            throw LatticeError(.invalidArguments, "record \(record.recordID) is a \(existing.recordType); cannot save it as a \(record.recordType)")
        }
        guard savePolicy == .ifServerRecordUnchanged else { return }
        let alive = existing?.isAlive == true
        switch (record.recordChangeTag, alive) {
        case (nil, false):
            return
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
        }
    }

    mutating func checkDelete(_ id: Record.ID) throws(LatticeError) {
        try requireZone(id.zoneID)
        guard let existing = try current(id), existing.isAlive else {
            throw LatticeError(.unknownItem, "record \(id) does not exist")
        }
    }

    mutating func write(_ record: Record) throws -> Record {
        let key = database.key(record.recordID.zoneID)
        if record.recordID.zoneID.isDefault { try transaction.createZone(key) }
        var keys = record.changedKeys()
        if savePolicy == .allKeys || record.recordChangeTag == nil {
            // Both lists are sorted: merge them, once each.
            let all = record.allKeys()
            var merged: [String] = []
            merged.reserveCapacity(all.count + keys.count)
            var (i, j) = (0, 0)
            while i < all.count || j < keys.count {
                if j == keys.count || (i < all.count && all[i] < keys[j]) { merged.append(all[i]); i += 1 }
                else if i == all.count || keys[j] < all[i] { merged.append(keys[j]); j += 1 }
                else { merged.append(all[i]); i += 1; j += 1 }
            }
            keys = merged
        }
        let changes = keys.map { (name: $0, value: record[$0]) }
        let outcome = try transaction.save(
            record.recordID.recordName, type: record.recordType, in: key, changes: changes,
            replacement: savePolicy == .allKeys ? .allKeys : .changedKeys, knownPrevious: checked.removeValue(forKey: record.recordID))
        if outcome.changed { try schema.merge(transaction.schema()) }
        return Record(state: outcome.state, zoneID: record.recordID.zoneID)
    }

    mutating func delete(_ id: Record.ID) throws {
        try transaction.delete([id.recordName], in: database.key(id.zoneID))
    }
}
