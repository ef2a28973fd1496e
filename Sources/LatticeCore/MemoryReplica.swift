@_spi(Tools) import LatticeCrypto

/// A whole replica in memory: the replica's logic without SQLite.
///
/// It runs exactly the code the store runs (`ReplicaStorage`'s operations),
/// which lets property tests and benchmarks exercise the engine without
/// disk, and lets the store be compared against it. Every operation is a
/// transaction: it applies whole or not at all, and one that changes nothing
/// takes no commit sequence.
@_spi(Tools) public final class MemoryReplica: ReplicaStorage {
    struct Zone {
        var sync: ZoneSyncState
        var records: [String: (state: RecordState, sequence: UInt64)] = [:]
        var checkpoints: [Checkpoint] = []
        /// deleteSelf targets → live records referencing them.
        var cascadeIndex: [String: Set<String>] = [:]
        /// Collected tombstones' residues, by name.
        var residues: [String: RecordResidue] = [:]
    }

    /// The writer of its local stamps: with an identity, the ID its public key gives.
    public let replica: ReplicaID
    /// The identity local writes are signed with; nil under a made-up ID: it neither signs nor checks.
    public let signer: Identity?
    /// Smaller than `WriteBlock.maximumEntries` only in tests that want many blocks.
    public var sealedBlockEntries = WriteBlock.maximumEntries
    /// The running transaction's local writes, sealed when it commits; empty between transactions.
    public var pendingLocalWrites: [PendingLocalWrite] = []
    /// Blocks by writer and zone, sorted by `last`.
    private var blocks: [BlockKey: [WriteBlock]] = [:]
    /// The hybrid clock local writes are stamped with; set back when a transaction throws or changes nothing.
    public var clock: HybridLogicalClock
    /// Milliseconds since 1970 as this replica reads them: tests and benchmarks pass a clock they move.
    public var wallClock: () -> UInt64
    private var currentSchema = Schema()
    /// Zones in slots, found by key; a merge asks for one zone many times per
    /// record, so the last one found is kept rather than hashed again.
    private var slots: [Zone] = []
    private var slotOfZone: [ZoneKey: Int] = [:]
    private var lastZone: (key: ZoneKey, slot: Int)?
    /// The last committed sequence.
    public private(set) var sequence: UInt64 = 0
    private var touchedSlots: [Int] = []
    private var changed = false
    /// How to take back each change of the running transaction, newest last.
    private var undo: [Undo] = []

    private enum Undo {
        case sync(slot: Int, ZoneSyncState)
        case newZone(ZoneKey)
        case records(slot: Int, [String: (state: RecordState, sequence: UInt64)], [String: Set<String>], [String: RecordResidue])
        case residue(slot: Int, name: String, RecordResidue?)
        case record(slot: Int, name: String, (state: RecordState, sequence: UInt64)?)
        case cascade(slot: Int, target: String, source: String, wasIndexed: Bool)
        case schema(Schema)
        case blockInserted(BlockKey, Int)
        case blockRemoved(BlockKey, Int, WriteBlock)
    }

    struct BlockKey: Hashable {
        var replica: ReplicaID
        var zone: ZoneKey
    }

    /// A replica under a made-up ID: it neither signs its writes nor checks others' (unit tests of the merge).
    public init(replica: ReplicaID, maximumSkewMilliseconds: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds, wallClock: @escaping () -> UInt64) {
        self.replica = replica
        signer = nil
        self.wallClock = wallClock
        clock = HybridLogicalClock(maximumSkewMilliseconds: maximumSkewMilliseconds)
    }

    /// A replica that signs its writes as `identity` and checks every write it receives, as the store does.
    public init(identity: Identity, maximumSkewMilliseconds: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds, wallClock: @escaping () -> UInt64) throws {
        replica = try WriteBlock.replica(of: identity.publicKey)
        signer = identity
        self.wallClock = wallClock
        clock = HybridLogicalClock(maximumSkewMilliseconds: maximumSkewMilliseconds)
    }

    private func slot(_ key: ZoneKey) -> Int? {
        if let lastZone, lastZone.key == key { return lastZone.slot }
        guard let slot = slotOfZone[key] else { return nil }
        lastZone = (key, slot)
        return slot
    }

    // MARK: Transactions

    /// Runs `body` as one commit: undone whole if it throws, no sequence taken
    /// if it changed no zone (as in the store).
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        let savedClock = clock
        touchedSlots = []
        changed = false
        undo = []
        pendingLocalWrites = []
        defer {
            undo = []
            pendingLocalWrites = []
        }
        do {
            let result = try body()
            try sealLocalWrites()
            // Schema changes alone are kept but take no sequence: it counts zone commits.
            if !touchedSlots.isEmpty {
                sequence += 1
                for slot in touchedSlots { slots[slot].checkpoints.append(Checkpoint(sequence: sequence, knowledge: slots[slot].sync.knowledge)) }
            }
            if !changed { clock = savedClock }
            return result
        } catch {
            for step in undo.reversed() { takeBack(step) }
            clock = savedClock
            throw error
        }
    }

    private func takeBack(_ step: Undo) {
        switch step {
        case .sync(let slot, let sync): slots[slot].sync = sync
        case .newZone(let key):
            slots.removeLast()
            slotOfZone[key] = nil
            lastZone = nil
        case .records(let slot, let records, let cascadeIndex, let residues):
            slots[slot].records = records
            slots[slot].cascadeIndex = cascadeIndex
            slots[slot].residues = residues
        case .residue(let slot, let name, let residue): slots[slot].residues[name] = residue
        case .record(let slot, let name, let entry): slots[slot].records[name] = entry
        case .cascade(let slot, let target, let source, let wasIndexed):
            if wasIndexed { slots[slot].cascadeIndex[target, default: []].insert(source) } else { slots[slot].cascadeIndex[target]?.remove(source) }
        case .schema(let schema): currentSchema = schema
        case .blockInserted(let key, let index): blocks[key]!.remove(at: index)
        case .blockRemoved(let key, let index, let block): blocks[key]!.insert(block, at: index)
        }
    }

    // MARK: ReplicaStorage

    /// Milliseconds since 1970 by `wallClock`.
    public func wallClockNow() -> UInt64 { wallClock() }

    /// The zone's incarnation and vectors; nil for a zone never seen (a deleted one keeps its state).
    public func syncState(of zone: ZoneKey) -> ZoneSyncState? { slot(zone).map { slots[$0].sync } }

    /// Persists the zone's state, creating the zone's entry if needed; undone if the transaction throws.
    public func setSyncState(_ state: ZoneSyncState, of zone: ZoneKey) {
        if let slot = slot(zone) {
            undo.append(.sync(slot: slot, slots[slot].sync))
            slots[slot].sync = state
            touch(slot)
        } else {
            undo.append(.newZone(zone))
            slotOfZone[zone] = slots.count
            slots.append(Zone(sync: state))
            touch(slots.count - 1)
        }
    }

    /// Removes every record of the zone, residues too: it was deleted, or a newer incarnation of it won.
    public func removeAllRecords(in zone: ZoneKey, by stamp: Stamp?) {
        guard let slot = slot(zone), !slots[slot].records.isEmpty || !slots[slot].residues.isEmpty else { return }
        undo.append(.records(slot: slot, slots[slot].records, slots[slot].cascadeIndex, slots[slot].residues))
        slots[slot].records = [:]
        slots[slot].cascadeIndex = [:]
        slots[slot].residues = [:]
        touch(slot)
    }

    /// The record's state, tombstones included; nil if never seen, or collected or forgotten since.
    public func record(named name: String, in zone: ZoneKey) -> RecordState? {
        guard let slot = slot(zone) else { return nil }
        return slots[slot].records[name]?.state
    }

    /// The state as it is: in memory there is no decoding to spare, and the merge finds a covered state unchanged.
    public func recordToMerge(named name: String, in zone: ZoneKey, incoming: RecordState) -> RecordLookup {
        guard let slot = slot(zone), let state = slots[slot].records[name]?.state else { return .absent }
        return .state(state)
    }

    /// Persists a record's new state and the cascades it references; `previous` is what `record(named:in:)`
    /// returned (nil: a residue of the record is dropped). The zone must exist.
    public func store(_ state: RecordState, previous: RecordState?, in zone: ZoneKey) {
        let slot = slot(zone)!
        let name = state.recordName
        if previous == nil, let residue = slots[slot].residues.removeValue(forKey: name) { undo.append(.residue(slot: slot, name: name, residue)) }
        undo.append(.record(slot: slot, name: name, slots[slot].records.updateValue((state, sequence + 1), forKey: name)))
        let before = previous?.liveCascadeTargets ?? []
        let after = state.liveCascadeTargets
        if before != after {
            for target in before.subtracting(after) {
                slots[slot].cascadeIndex[target]?.remove(name)
                undo.append(.cascade(slot: slot, target: target, source: name, wasIndexed: true))
            }
            for target in after.subtracting(before) {
                slots[slot].cascadeIndex[target, default: []].insert(name)
                undo.append(.cascade(slot: slot, target: target, source: name, wasIndexed: false))
            }
        }
        touch(slot)
    }

    /// What is left of the record's collected tombstone; nil if not collected, or created again since.
    public func residue(named name: String, in zone: ZoneKey) -> RecordResidue? {
        slot(zone).flatMap { slots[$0].residues[name] }
    }

    /// Removes a record whole, leaving no tombstone or residue (a void write no one vouches for).
    public func forget(_ state: RecordState, in zone: ZoneKey) {
        guard let slot = slot(zone) else { return }
        var bare = state
        bare.fields = []
        store(bare, previous: state, in: zone)
        undo.append(.record(slot: slot, name: state.recordName, slots[slot].records.removeValue(forKey: state.recordName)))
    }

    /// The stamps of the deletes the zone's residues stand for: their blocks stay.
    public func residueDeletions(in zone: ZoneKey) -> [Stamp] {
        slot(zone).map { slots[$0].residues.values.compactMap(\.deletion) } ?? []
    }

    /// Replaces a collected record's residue: a state of it arrived that adds to its vector.
    public func storeResidue(_ residue: RecordResidue, named name: String, in zone: ZoneKey) {
        guard let slot = slot(zone) else { return }
        undo.append(.residue(slot: slot, name: name, slots[slot].residues.updateValue(residue, forKey: name)))
        touch(slot)
    }

    /// Removes a tombstone, keeping its residue: no reader's view changes, so it takes no commit sequence.
    public func collect(_ tombstone: RecordState, in zone: ZoneKey) {
        guard let slot = slot(zone) else { return }
        let name = tombstone.recordName
        if let removed = slots[slot].records.removeValue(forKey: name) { undo.append(.record(slot: slot, name: name, removed)) }
        undo.append(.residue(slot: slot, name: name, slots[slot].residues.updateValue(RecordResidue(of: tombstone), forKey: name)))
        changed = true
    }

    /// The zone's tombstones not collected yet, by name; empty for an unknown zone.
    public func tombstones(in zone: ZoneKey) -> [RecordState] {
        guard let slot = slot(zone) else { return [] }
        return slots[slot].records.values.map(\.state).filter { !$0.isAlive }.sorted { $0.recordName < $1.recordName }
    }

    /// The zone's collected tombstones' residues, by name.
    public func residues(in key: ZoneKey) -> [String: RecordResidue] { slot(key).map { slots[$0].residues } ?? [:] }

    /// Collects the zone's tombstones that `acknowledged` covers, as one transaction.
    @discardableResult
    public func collectTombstones(in key: ZoneKey, acknowledged: VersionVector) throws -> [String] {
        try transaction { try (self as any ReplicaStorage).collectTombstones(in: key, acknowledged: acknowledged) }
    }

    /// Live records whose fields reference `target` with `deleteSelf`, in no order.
    public func cascadeSources(of target: String, in zone: ZoneKey) -> [String] {
        guard let slot = slot(zone), !slots[slot].cascadeIndex.isEmpty, let sources = slots[slot].cascadeIndex[target] else { return [] }
        return Array(sources)
    }

    /// The replica's schema: record types, fields, indexes and whether it is deployed.
    public func schema() -> Schema { currentSchema }

    /// `replica`'s block in `zone` whose `last` is the first at or after `time` (nil: the latest); nil if none.
    public func writeBlock(of replica: ReplicaID, in zone: ZoneKey, covering time: HLCTimestamp?) -> WriteBlock? {
        guard let list = blocks[BlockKey(replica: replica, zone: zone)] else { return nil }
        guard let time else { return list.last }
        let start = Self.firstBlock(in: list, endingAtOrAfter: time)
        guard start < list.count else { return nil }
        // Versions of a block a restored store signed again can overlap: the first that holds the write.
        return list[start..<min(list.count, start + 8)].first { $0.digest(at: time) != nil } ?? list[start]
    }

    /// `replica`'s blocks in `zone` whose `last` lies in `range`, by `last`; as stored, whatever `entries` says.
    public func writeBlocks(of replica: ReplicaID, in zone: ZoneKey, endingIn range: ClosedRange<HLCTimestamp>, entries: Bool = true) -> [WriteBlock] {
        guard let list = blocks[BlockKey(replica: replica, zone: zone)] else { return [] }
        return Array(list[Self.firstBlock(in: list, endingAtOrAfter: range.lowerBound)...].prefix { $0.last <= range.upperBound })
    }

    /// `replica`'s block in `zone` with the greatest `last` before `time`; nil if none.
    public func writeBlock(of replica: ReplicaID, in zone: ZoneKey, endingBefore time: HLCTimestamp) -> WriteBlock? {
        guard let list = blocks[BlockKey(replica: replica, zone: zone)] else { return nil }
        let index = Self.firstBlock(in: list, endingAtOrAfter: time)
        return index > 0 ? list[index - 1] : nil
    }

    /// Keeps a block, replacing the one with the same writer, zone and `last`.
    public func insertWriteBlock(_ block: WriteBlock) {
        let key = BlockKey(replica: block.replica, zone: block.zone)
        let index = Self.firstBlock(in: blocks[key] ?? [], endingAtOrAfter: block.last)
        if let existing = blocks[key], index < existing.count, existing[index].last == block.last {
            undo.append(.blockRemoved(key, index, existing[index]))
            blocks[key]!.remove(at: index)
        }
        undo.append(.blockInserted(key, index))
        blocks[key, default: []].insert(block, at: index)
        changed = true
    }

    /// Forgets the block with the same writer, zone and `last`; nothing if there is none.
    public func removeWriteBlock(_ block: WriteBlock) {
        let key = BlockKey(replica: block.replica, zone: block.zone)
        guard let list = blocks[key] else { return }
        let index = Self.firstBlock(in: list, endingAtOrAfter: block.last)
        guard index < list.count, list[index].last == block.last else { return }
        undo.append(.blockRemoved(key, index, list[index]))
        blocks[key]!.remove(at: index)
        changed = true
    }

    /// The replicas with blocks in `zone`, sorted.
    public func blockWriters(in zone: ZoneKey) -> [ReplicaID] {
        blocks.filter { $0.key.zone == zone && !$0.value.isEmpty }.map(\.key.replica).sorted()
    }

    /// Calls `body` with every record state of the zone, tombstones included, in no order.
    public func forEachRecord(in zone: ZoneKey, _ body: (RecordState) throws -> Void) throws {
        guard let slot = slot(zone) else { return }
        for entry in slots[slot].records.values { try body(entry.state) }
    }

    /// Collects the zone's write blocks that prove nothing shown, as one transaction.
    @discardableResult
    public func collectWriteBlocks(in key: ZoneKey) throws -> Int {
        try transaction { try (self as any ReplicaStorage).collectWriteBlocks(in: key) }
    }

    /// Blocks are kept sorted by `last`: a binary search finds the first at or after `time`.
    private static func firstBlock(in list: [WriteBlock], endingAtOrAfter time: HLCTimestamp) -> Int {
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].last < time { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Merges what a schema merge changed (never empty) into the replica's schema.
    public func persistSchemaChanges(_ changes: Schema) {
        undo.append(.schema(currentSchema))
        currentSchema.merge(changes)
        changed = true
    }

    /// Sets the index kinds removed here from the field to `removed` (empty: none); its index keeps the others.
    public func persistIndexRemovals(_ removed: IndexKinds, field: String, of recordType: String) {
        undo.append(.schema(currentSchema))
        currentSchema.setRemoved(index: removed, field: field, of: recordType)
        changed = true
    }

    private func touch(_ slot: Int) {
        if !touchedSlots.contains(slot) { touchedSlots.append(slot) }
        changed = true
    }

    // MARK: Reading

    /// The zones this replica has a state of, deleted ones too, in no order.
    public var zoneKeys: [ZoneKey] { Array(slotOfZone.keys) }

    /// The record's state, as the store's readers ask for it: tombstones included; nil if none.
    public func record(_ name: String, in key: ZoneKey) -> RecordState? { record(named: name, in: key) }

    /// Every record of a zone, tombstones included, by name.
    public func records(in key: ZoneKey) -> [RecordState] {
        (slot(key).map { slots[$0].records.values.map(\.state) } ?? []).sorted { $0.recordName < $1.recordName }
    }

    // MARK: Operations, each a transaction

    /// Creates the zone, or re-creates it after a delete, as one transaction; nothing if it exists.
    public func createZone(_ key: ZoneKey) {
        _ = try? transaction { try (self as any ReplicaStorage).createZone(key) }
    }

    /// Deletes the zone and its records as one transaction; throws `zoneNotFound` unless it exists.
    public func deleteZone(_ key: ZoneKey) throws {
        try transaction { try (self as any ReplicaStorage).deleteZone(key) }
    }

    /// Saves `changes` to record `name` of type `type` (nil values remove fields) as one transaction;
    /// returns its state, the one held when the save changes nothing; throws when schema, type or rights refuse it.
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

    /// Resolves the record's conflicts as they stand (a write that syncs), as one transaction; false when it has none.
    @discardableResult
    public func clearConflicts(of name: String, in key: ZoneKey) throws -> Bool {
        try transaction { try (self as any ReplicaStorage).clearConflicts(of: name, in: key) }
    }

    /// Moves the schema to production as one transaction; false if it already is.
    @discardableResult
    public func deploySchema() throws -> Bool {
        try transaction { try (self as any ReplicaStorage).deploySchema() }
    }

    /// Adds index kinds to a field the schema has, as one transaction; returns the kinds that were new.
    @discardableResult
    public func addIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws -> IndexKinds {
        try transaction { try (self as any ReplicaStorage).addIndex(kinds, field: field, of: recordType) }
    }

    /// Removes index kinds from a field here and keeps them off, as one transaction; returns the kinds it had.
    @discardableResult
    public func removeIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws -> IndexKinds {
        try transaction { try (self as any ReplicaStorage).removeIndex(kinds, field: field, of: recordType) }
    }

    // MARK: Change sets

    /// A change set of what this replica has in `key` that `vector` lacks.
    public func makeChangeSet(for key: ZoneKey, since vector: VersionVector) throws -> [UInt8] {
        guard let slot = slot(key) else { throw ReplicaError.zoneNotFound(key) }
        let zone = slots[slot]
        let start = Checkpoint.deltaStart(in: zone.checkpoints, for: vector)
        let changed = zone.records.values.filter { $0.sequence > start }.sorted { ($0.sequence, $0.state.recordName) < ($1.sequence, $1.state.recordName) }.map(\.state)
        let proofs = signer.map { _ in ProofCollector(base: vector) { [self] replica, time in writeBlock(of: replica, in: key, covering: time) } }
        var header = ChangeSetHeader(zone: key, sync: zone.sync, base: vector, schema: currentSchema)
        header.elidesCoveredGhosts = ChangeSetHeader.elides(in: key, base: vector)
        return try Self.encode(header: header, records: changed, proofs: proofs)
    }

    /// The change set of `records` under `header`, whole in memory; with `proofs`, the blocks that check them.
    /// Throws `replicaMissingFromHeader` for a stamp of a replica the header does not name.
    public static func encode(header: ChangeSetHeader, records: [RecordState], proofs: ProofCollector? = nil) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var writer = try ChangeSetWriter(header: header, proofs: proofs) { bytes.append(contentsOf: $0) }
        for record in records { try writer.append(record) }
        try writer.finish()
        return bytes
    }

    /// Applies every change set in `bytes` in one transaction, as the store
    /// does: if any fails to decode, the replica stays as it was.
    @discardableResult
    public func apply(_ bytes: [UInt8]) throws -> ApplySummary {
        try transaction { try (self as any ReplicaStorage).applyChangeSets(from: ArrayByteSource(bytes)) }
    }
}
