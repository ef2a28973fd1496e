import Foundation
import LatticeCore

extension RecordStore {
    /// Streams the change set of what this store has in `key` that `vector`
    /// lacks to `sink`, a frame at a time, from one consistent snapshot.
    @discardableResult
    public func writeChangeSet(for key: ZoneKey, since vector: VersionVector, to sink: @escaping ([UInt8]) throws -> Void) throws -> (records: Int, bytes: Int) {
        try read { snapshot in
            guard let zone = try snapshot.zoneRow(key) else { throw StoreError.zoneNotFound(key.description) }
            let schema = try snapshot.schema()
            var replicas = Set(try snapshot.replicas)
            replicas.formUnion(vector.entries.map(\.replica))
            replicas.formUnion(zone.sync.knowledge.entries.map(\.replica))
            replicas.insert(zone.sync.zoneState.stamp.replica)
            let header = ChangeSetHeader(
                zone: key, zoneState: zone.sync.zoneState, base: vector, top: zone.sync.vector,
                claimsTop: true, replicas: replicas.sorted(), schema: schema)
            var writer = try ChangeSetWriter(header: header, sink: sink)
            let start = try snapshot.deltaStart(zoneID: zone.id, for: vector)
            try snapshot.forEachRecord(changedAfter: start, zoneID: zone.id) { try writer.append($0) }
            try writer.finish()
            return (writer.recordCount, writer.byteCount)
        }
    }

    /// The change set as bytes in memory (small zones, tests).
    public func changeSet(for key: ZoneKey, since vector: VersionVector) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try writeChangeSet(for: key, since: vector) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Applies every change set `source` holds (one per zone, as in a bundle)
    /// in one transaction: if any turns out truncated or corrupt, nothing of
    /// any of them is applied.
    @discardableResult
    public func apply<Source: ByteSource>(from source: Source) throws -> ApplySummary {
        var reader = ChangeSetReader(source: source)
        return try write { transaction in
            var total = ApplySummary()
            while try reader.readHeader() != nil {
                var target = StoreApplyTarget(transaction: transaction)
                var clock = transaction.clockState
                var summary = try ChangeSetApplier.apply(&reader, into: &target, clock: &clock, wallClock: RecordStore.wallClock())
                transaction.observe(clock.last)
                if let zone = summary.zone {
                    summary.recordsChanged += try transaction.cascadeAfterMerge(died: target.died, references: target.references, in: zone)
                }
                total.add(summary)
                reader = ChangeSetReader(source: reader.source)
            }
            return total
        }
    }

    public func apply(_ bytes: [UInt8]) throws -> ApplySummary {
        try apply(from: ArrayByteSource(bytes))
    }
}

/// The applier's view of a store transaction.
struct StoreApplyTarget: ChangeSetTarget {
    let transaction: StoreTransaction
    var zoneIDs: [ZoneKey: Int64] = [:]
    var died: [String] = []
    var references: [(source: String, targets: [String])] = []

    init(transaction: StoreTransaction) { self.transaction = transaction }

    mutating func zoneID(_ key: ZoneKey, initial: ZoneSyncState) throws -> Int64 {
        if let id = zoneIDs[key] { return id }
        let id = try transaction.ensureZone(key, initial: initial).id
        zoneIDs[key] = id
        return id
    }

    mutating func syncState(of zone: ZoneKey) throws -> ZoneSyncState? {
        guard let row = try transaction.zoneRow(zone) else { return nil }
        zoneIDs[zone] = row.id
        return row.sync
    }

    mutating func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) throws {
        try transaction.setSync(state, zoneID: try zoneID(zone, initial: state))
    }

    mutating func removeAllRecords(in zone: ZoneKey) throws {
        guard let id = zoneIDs[zone] else { return }
        try transaction.removeAllRecords(zoneID: id)
    }

    mutating func record(named name: String, in zone: ZoneKey) throws -> RecordState? {
        guard let id = zoneIDs[zone] else { return nil }
        return try transaction.record(name, zoneID: id)
    }

    mutating func store(_ outcome: MergeOutcome, previous: RecordState?, in zone: ZoneKey) throws {
        let placeholder = ZoneSyncState(zoneState: ZoneState(causalLength: 1, stamp: outcome.state.created))
        let id = try zoneID(zone, initial: placeholder)
        try transaction.put(outcome.state, previous: previous, zoneID: id)
        try transaction.logConflicts(outcome.conflicts, zoneID: id)
        if previous?.isAlive == true, !outcome.state.isAlive { died.append(outcome.state.recordName) }
        if outcome.state.isAlive {
            let targets = outcome.state.cascadeTargets
            if !targets.isEmpty { references.append((outcome.state.recordName, targets)) }
        }
    }

    mutating func mergeSchema(_ schema: Schema) throws {
        try transaction.mergeSchema(schema)
    }
}
