/// A whole replica in memory: the merge engine without storage.
///
/// It runs the same rules as the store (`LocalWrite`, `Merge`,
/// `ChangeSetApplier`), which lets property tests and benchmarks exercise the
/// engine without SQLite, and lets the store be compared against it.
public final class MemoryReplica {
    public enum Failure: Error, Equatable {
        case zoneNotFound(ZoneKey)
        case unknownRecord(String)
        case typeMismatch(expected: String, got: String)
    }

    struct Zone {
        var sync: ZoneSyncState
        var records: [String: (state: RecordState, sequence: UInt64)] = [:]
        var checkpoints: [Checkpoint] = []
    }

    public let replica: ReplicaID
    public private(set) var clock: HybridLogicalClock
    public var wallClock: () -> UInt64
    public private(set) var schema = Schema()
    public private(set) var conflicts: [FieldConflict] = []
    var zones: [ZoneKey: Zone] = [:]
    private var sequence: UInt64 = 0

    public init(replica: ReplicaID, maximumSkewMilliseconds: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds, wallClock: @escaping () -> UInt64) {
        self.replica = replica
        self.wallClock = wallClock
        clock = HybridLogicalClock(maximumSkewMilliseconds: maximumSkewMilliseconds)
    }

    private func nextStamp() -> Stamp {
        Stamp(time: clock.tick(wallClock: wallClock()), replica: replica)
    }

    // MARK: Zones

    public func createZone(_ key: ZoneKey) {
        let stamp = nextStamp()
        if var zone = zones[key] {
            guard !zone.sync.zoneState.exists else { return }
            zone.sync.zoneState = ZoneState(causalLength: zone.sync.zoneState.causalLength + 1, stamp: stamp)
            zone.sync.recordLocalWrite(stamp)
            commit(&zone)
            zones[key] = zone
        } else {
            var zone = Zone(sync: ZoneSyncState(zoneState: ZoneState(causalLength: 1, stamp: stamp)))
            zone.sync.recordLocalWrite(stamp)
            commit(&zone)
            zones[key] = zone
        }
    }

    public func deleteZone(_ key: ZoneKey) throws {
        try withLiveZone(key) { zone in
            let stamp = nextStamp()
            zone.sync.zoneState = ZoneState(causalLength: zone.sync.zoneState.causalLength + 1, stamp: stamp)
            zone.sync.recordLocalWrite(stamp)
            zone.records.removeAll()
            commit(&zone)
        }
    }

    public func zoneExists(_ key: ZoneKey) -> Bool { zones[key]?.sync.zoneState.exists ?? false }

    public var zoneKeys: [ZoneKey] { Array(zones.keys) }

    public func syncState(of key: ZoneKey) -> ZoneSyncState? { zones[key]?.sync }

    // MARK: Records

    public func record(_ name: String, in key: ZoneKey) -> RecordState? { zones[key]?.records[name]?.state }

    /// Every record of a zone, tombstones included, by name.
    public func records(in key: ZoneKey) -> [RecordState] {
        (zones[key]?.records.values.map(\.state) ?? []).sorted { $0.recordName < $1.recordName }
    }

    /// Mutates a live zone in place (a copy would copy every record).
    private func withLiveZone<T>(_ key: ZoneKey, _ body: (inout Zone) throws -> T) throws -> T {
        guard zones[key]?.sync.zoneState.exists == true else { throw Failure.zoneNotFound(key) }
        return try body(&zones[key]!)
    }

    @discardableResult
    public func save(
        _ name: String, type: String, in key: ZoneKey, changes: [(name: String, value: FieldValue?)],
        replacement: FieldReplacement = .changedKeys
    ) throws -> RecordState {
        try withLiveZone(key) { zone in
            let previous = zone.records[name]?.state
            if let previous, previous.isAlive, previous.recordType != type {
                throw Failure.typeMismatch(expected: previous.recordType, got: type)
            }
            let stamp = nextStamp()
            for change in changes {
                if let value = change.value, schema.field(change.name, of: type) == nil {
                    schema.merge(SchemaField(recordType: type, field: change.name, type: value.type, stamp: stamp))
                }
            }
            schema.addRecordType(type)
            let state = LocalWrite.save(previous: previous, recordName: name, recordType: type, changes: changes, replacement: replacement, stamp: stamp)
            zone.sync.recordLocalWrite(stamp)
            sequence += 1
            zone.records[name] = (state, sequence)
            commit(&zone, sequence: sequence)
            return state
        }
    }

    public func delete(_ name: String, in key: ZoneKey) throws {
        try withLiveZone(key) { zone in
            guard let previous = zone.records[name]?.state, previous.isAlive else { throw Failure.unknownRecord(name) }
            let stamp = nextStamp()
            zone.sync.recordLocalWrite(stamp)
            sequence += 1
            zone.records[name] = (LocalWrite.delete(previous: previous, stamp: stamp), sequence)
            commit(&zone, sequence: sequence)
        }
    }

    private func commit(_ zone: inout Zone, sequence explicit: UInt64? = nil) {
        if explicit == nil { sequence += 1 }
        zone.checkpoints.append(Checkpoint(sequence: explicit ?? sequence, knowledge: zone.sync.knowledge))
    }

    // MARK: Change sets

    /// A change set of what this replica has in `key` that `vector` lacks.
    public func makeChangeSet(for key: ZoneKey, since vector: VersionVector) throws -> [UInt8] {
        guard let zone = zones[key] else { throw Failure.zoneNotFound(key) }
        let start = Checkpoint.deltaStart(in: zone.checkpoints, for: vector)
        let changed = zone.records.values.filter { $0.sequence > start }.sorted { $0.sequence < $1.sequence }.map(\.state)
        return try Self.encode(header: header(for: key, zone: zone, base: vector, claims: true), records: changed)
    }

    /// The header this replica would send for `key`.
    func header(for key: ZoneKey, zone: Zone, base: VersionVector, claims: Bool) -> ChangeSetHeader {
        var replicas = Set(zone.sync.knowledge.entries.map(\.replica))
        replicas.insert(zone.sync.zoneState.stamp.replica)
        for field in schema.fields.values { replicas.insert(field.stamp.replica) }
        if let deployed = schema.deployed { replicas.insert(deployed.replica) }
        for entry in base.entries { replicas.insert(entry.replica) }
        return ChangeSetHeader(
            zone: key, zoneState: zone.sync.zoneState, base: base, top: zone.sync.vector,
            claimsTop: claims, replicas: replicas.sorted(), schema: schema)
    }

    public static func encode(header: ChangeSetHeader, records: [RecordState]) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var writer = try ChangeSetWriter(header: header) { bytes.append(contentsOf: $0) }
        for record in records { try writer.append(record) }
        try writer.finish()
        return bytes
    }

    /// Applies every change set in `bytes`, each atomically: a change set that
    /// fails to decode leaves the replica as it was before it.
    @discardableResult
    public func apply(_ bytes: [UInt8]) throws -> ApplySummary {
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        var total = ApplySummary()
        while try reader.readHeader() != nil {
            var target = Target(replica: self)
            var clock = self.clock
            do {
                let summary = try ChangeSetApplier.apply(&reader, into: &target, clock: &clock, wallClock: wallClock())
                target.commit()
                self.clock = clock
                total.add(summary)
            } catch {
                target.rollback()
                throw error
            }
            reader = ChangeSetReader(source: reader.source)
        }
        return total
    }

    /// Applies straight into the replica, keeping what it overwrote to undo a
    /// change set that turns out truncated or corrupt.
    private struct Target: ChangeSetTarget {
        typealias Entry = (state: RecordState, sequence: UInt64)
        let replica: MemoryReplica
        var touchedZones: [ZoneKey: ZoneSyncState?] = [:]
        var purgedRecords: [ZoneKey: [String: Entry]] = [:]
        var undoRecords: [(ZoneKey, String, Entry?)] = []
        var undoSchema: Schema?
        var newConflicts: [FieldConflict] = []
        let sequence: UInt64

        init(replica: MemoryReplica) {
            self.replica = replica
            sequence = replica.sequence + 1
        }

        mutating func syncState(of zone: ZoneKey) throws -> ZoneSyncState? {
            let state = replica.zones[zone]?.sync
            if touchedZones[zone] == nil { touchedZones[zone] = .some(state) }
            return state
        }

        mutating func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) throws {
            if replica.zones[zone] == nil { replica.zones[zone] = Zone(sync: state) }
            replica.zones[zone]!.sync = state
        }

        mutating func removeAllRecords(in zone: ZoneKey) throws {
            guard let records = replica.zones[zone]?.records, !records.isEmpty else { return }
            if purgedRecords[zone] == nil { purgedRecords[zone] = records }
            replica.zones[zone]!.records.removeAll()
        }

        mutating func record(named name: String, in zone: ZoneKey) throws -> RecordState? {
            replica.zones[zone]?.records[name]?.state
        }

        mutating func store(_ outcome: MergeOutcome, previous: RecordState?, in zone: ZoneKey) throws {
            if replica.zones[zone] == nil {
                replica.zones[zone] = Zone(sync: ZoneSyncState(zoneState: ZoneState(causalLength: 1, stamp: outcome.state.created)))
            }
            let name = outcome.state.recordName
            undoRecords.append((zone, name, replica.zones[zone]!.records.updateValue((outcome.state, sequence), forKey: name)))
            newConflicts.append(contentsOf: outcome.conflicts)
        }

        mutating func mergeSchema(_ schema: Schema) throws {
            if undoSchema == nil { undoSchema = replica.schema }
            replica.schema.merge(schema)
        }

        func commit() {
            replica.sequence = sequence
            replica.conflicts.append(contentsOf: newConflicts)
            for key in touchedZones.keys where replica.zones[key] != nil {
                replica.zones[key]!.checkpoints.append(Checkpoint(sequence: sequence, knowledge: replica.zones[key]!.sync.knowledge))
            }
        }

        func rollback() {
            for (zone, name, entry) in undoRecords.reversed() { replica.zones[zone]?.records[name] = entry }
            for (zone, records) in purgedRecords { replica.zones[zone]?.records = records }
            for (zone, saved) in touchedZones {
                if let saved { replica.zones[zone]?.sync = saved } else { replica.zones[zone] = nil }
            }
            if let undoSchema { replica.schema = undoSchema }
        }
    }
}
