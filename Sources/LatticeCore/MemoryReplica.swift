/// A whole replica in memory: the replica's logic without SQLite.
///
/// It runs exactly the code the store runs (`ReplicaStorage`'s operations),
/// which lets property tests and benchmarks exercise the engine without
/// disk, and lets the store be compared against it. Every operation is a
/// transaction: it applies whole or not at all, and one that changes nothing
/// takes no commit sequence.
public final class MemoryReplica: ReplicaStorage {
    struct Zone {
        var sync: ZoneSyncState
        var records: [String: (state: RecordState, sequence: UInt64)] = [:]
        var checkpoints: [Checkpoint] = []
        /// deleteSelf targets → live records referencing them.
        var cascadeIndex: [String: Set<String>] = [:]
    }

    public let replica: ReplicaID
    public var clock: HybridLogicalClock
    public var wallClock: () -> UInt64
    public private(set) var currentSchema = Schema()
    var zones: [ZoneKey: Zone] = [:]
    /// The last committed sequence.
    public private(set) var sequence: UInt64 = 0
    private var touchedZones: Set<ZoneKey> = []
    private var changed = false
    /// How to take back each change of the running transaction, newest last.
    /// (A copy of the zones would be simpler, but writing to it copies every record.)
    private var undo: [() -> Void] = []

    public init(replica: ReplicaID, maximumSkewMilliseconds: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds, wallClock: @escaping () -> UInt64) {
        self.replica = replica
        self.wallClock = wallClock
        clock = HybridLogicalClock(maximumSkewMilliseconds: maximumSkewMilliseconds)
    }

    // MARK: Transactions

    /// Runs `body` as one commit: undone whole if it throws, no sequence taken
    /// if it changed no zone (as in the store).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        let savedClock = clock
        touchedZones = []
        changed = false
        undo = []
        defer { undo = [] }
        do {
            let result = try body()
            // Schema changes alone are kept but take no sequence: it counts zone commits.
            if !touchedZones.isEmpty {
                sequence += 1
                for key in touchedZones { zones[key]!.checkpoints.append(Checkpoint(sequence: sequence, knowledge: zones[key]!.sync.knowledge)) }
            }
            if !changed { clock = savedClock }
            return result
        } catch {
            for step in undo.reversed() { step() }
            clock = savedClock
            throw error
        }
    }

    // MARK: ReplicaStorage

    public func wallClockNow() -> UInt64 { wallClock() }

    public func syncState(of zone: ZoneKey) -> ZoneSyncState? { zones[zone]?.sync }

    public func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) {
        if let previous = zones[zone]?.sync {
            undo.append { [unowned self] in zones[zone]!.sync = previous }
            zones[zone]!.sync = state
        } else {
            undo.append { [unowned self] in zones[zone] = nil }
            zones[zone] = Zone(sync: state)
        }
        touch(zone)
    }

    public func removeAllRecords(in zone: ZoneKey) {
        guard zones[zone]?.records.isEmpty == false else { return }
        let records = zones[zone]!.records
        let cascadeIndex = zones[zone]!.cascadeIndex
        undo.append { [unowned self] in
            zones[zone]!.records = records
            zones[zone]!.cascadeIndex = cascadeIndex
        }
        zones[zone]!.records = [:]
        zones[zone]!.cascadeIndex = [:]
        touch(zone)
    }

    public func record(named name: String, in zone: ZoneKey) -> RecordState? { zones[zone]?.records[name]?.state }

    public func store(_ state: RecordState, previous: RecordState?, in zone: ZoneKey) {
        let name = state.recordName
        let replaced = zones[zone]!.records.updateValue((state, sequence + 1), forKey: name)
        undo.append { [unowned self] in zones[zone]!.records[name] = replaced }
        let before = previous?.isAlive == true ? Set(previous!.cascadeReferences.map(\.target)) : []
        let after = state.isAlive ? Set(state.cascadeReferences.map(\.target)) : []
        if before != after {
            for target in before.subtracting(after) {
                zones[zone]!.cascadeIndex[target]?.remove(name)
                undo.append { [unowned self] in zones[zone]!.cascadeIndex[target, default: []].insert(name) }
            }
            for target in after.subtracting(before) {
                zones[zone]!.cascadeIndex[target, default: []].insert(name)
                undo.append { [unowned self] in zones[zone]!.cascadeIndex[target]?.remove(name) }
            }
        }
        touch(zone)
    }

    public func cascadeSources(of target: String, in zone: ZoneKey) -> [String] {
        guard let sources = zones[zone]?.cascadeIndex[target] else { return [] }
        return Array(sources)
    }

    public func schema() -> Schema { currentSchema }

    public func persistSchemaChanges(_ changes: Schema) {
        let previous = currentSchema
        undo.append { [unowned self] in currentSchema = previous }
        currentSchema.merge(changes)
        changed = true
    }

    private func touch(_ zone: ZoneKey) {
        touchedZones.insert(zone)
        changed = true
    }

    // MARK: Reading

    public var schemaState: Schema { currentSchema }

    public func zoneExists(_ key: ZoneKey) -> Bool { zones[key]?.sync.zoneState.exists ?? false }

    public var zoneKeys: [ZoneKey] { Array(zones.keys) }

    public func record(_ name: String, in key: ZoneKey) -> RecordState? { record(named: name, in: key) }

    /// Every record of a zone, tombstones included, by name.
    public func records(in key: ZoneKey) -> [RecordState] {
        (zones[key]?.records.values.map(\.state) ?? []).sorted { $0.recordName < $1.recordName }
    }

    // MARK: Operations, each a transaction

    public func createZone(_ key: ZoneKey) {
        _ = try? transaction { try (self as any ReplicaStorage).createZone(key) }
    }

    public func deleteZone(_ key: ZoneKey) throws {
        try transaction { try (self as any ReplicaStorage).deleteZone(key) }
    }

    @discardableResult
    public func save(
        _ name: String, type: String, in key: ZoneKey, changes: [(name: String, value: FieldValue?)],
        replacement: FieldReplacement = .changedKeys
    ) throws -> RecordState {
        try transaction { try (self as any ReplicaStorage).save(name, type: type, in: key, changes: changes, replacement: replacement).state }
    }

    /// Deletes a live record (and what it cascades to); unknownRecord otherwise.
    public func delete(_ name: String, in key: ZoneKey) throws {
        try transaction {
            guard record(named: name, in: key)?.isAlive == true else { throw ReplicaError.unknownRecord(name) }
            try (self as any ReplicaStorage).delete([name], in: key)
        }
    }

    @discardableResult
    public func clearConflicts(of name: String, in key: ZoneKey) throws -> Bool {
        try transaction { try (self as any ReplicaStorage).clearConflicts(of: name, in: key) }
    }

    @discardableResult
    public func deploySchema() throws -> Bool {
        try transaction { try (self as any ReplicaStorage).deploySchema() }
    }

    // MARK: Change sets

    /// A change set of what this replica has in `key` that `vector` lacks.
    public func makeChangeSet(for key: ZoneKey, since vector: VersionVector) throws -> [UInt8] {
        guard let zone = zones[key] else { throw ReplicaError.zoneNotFound(key) }
        let start = Checkpoint.deltaStart(in: zone.checkpoints, for: vector)
        let changed = zone.records.values.filter { $0.sequence > start }.sorted { ($0.sequence, $0.state.recordName) < ($1.sequence, $1.state.recordName) }.map(\.state)
        return try Self.encode(header: ChangeSetHeader(zone: key, sync: zone.sync, base: vector, schema: currentSchema), records: changed)
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
            total.add(try transaction { try (self as any ReplicaStorage).apply(&reader) })
            reader = ChangeSetReader(source: reader.source)
        }
        return total
    }
}
