import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore
import LatticeTestSupport

/// One replica under test, on disk or in memory, driven through the same operations.
protocol FuzzReplica: AnyObject {
    var replicaID: ReplicaID { get }
    var kind: String { get }
    func createZone(_ zone: ZoneKey) throws
    func deleteZone(_ zone: ZoneKey) throws
    func save(_ name: String, type: String, in zone: ZoneKey, changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement) throws -> Bool
    func delete(_ name: String, in zone: ZoneKey) throws -> [String]
    func clearConflicts(of name: String, in zone: ZoneKey) throws -> Bool
    func deploySchema() throws -> Bool
    func apply(_ bytes: [UInt8]) throws -> ApplySummary
    func changeSet(for zone: ZoneKey, since vector: VersionVector) throws -> [UInt8]
    func syncState(of zone: ZoneKey) throws -> ZoneSyncState?
    /// The vector a node tells peers: a store's own entry lowered while it fetches writes of its own again.
    func vectorToTell(of zone: ZoneKey) throws -> VersionVector
    func records(in zone: ZoneKey) throws -> [RecordState]
    /// The zone's digest (its whole set's sum), as `lattice diff` compares it.
    func digest(of zone: ZoneKey) throws -> DigestSum
    func record(_ name: String, in zone: ZoneKey) throws -> RecordState?
    func schema() throws -> Schema
    /// The last commit's sequence: it must not move on a no-op.
    func commitSequence() throws -> UInt64
    /// Collects the zone's tombstones `acknowledged` covers; returns their names.
    func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String]
    /// The zone's collected tombstones' residues, by name.
    func residues(in zone: ZoneKey) throws -> [String: RecordResidue]
    /// Collects the zone's write blocks that prove nothing shown; returns how many went.
    func collectWriteBlocks(in zone: ZoneKey) throws -> Int
}

final class MemoryFuzzReplica: FuzzReplica {
    let replica: MemoryReplica
    var replicaID: ReplicaID { replica.replica }
    let kind = "memory"

    /// A replica that signs as identity `number` and checks what it receives, as a store does.
    init(number: UInt64, clock: ManualClock, blockEntries: Int = WriteBlock.maximumEntries) throws {
        replica = try MemoryReplica(identity: .numbered(number), wallClock: { clock.now })
        replica.sealedBlockEntries = blockEntries
    }

    func createZone(_ zone: ZoneKey) throws { replica.createZone(zone) }
    func deleteZone(_ zone: ZoneKey) throws { try replica.deleteZone(zone) }
    func save(_ name: String, type: String, in zone: ZoneKey, changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement) throws -> Bool {
        let before = replica.sequence
        _ = try replica.save(name, type: type, in: zone, changes: changes, replacement: replacement)
        return replica.sequence != before
    }
    func delete(_ name: String, in zone: ZoneKey) throws -> [String] {
        try replica.transaction { try (replica as any ReplicaStorage).delete([name], in: zone) }
    }
    func clearConflicts(of name: String, in zone: ZoneKey) throws -> Bool { try replica.clearConflicts(of: name, in: zone) }
    func deploySchema() throws -> Bool { try replica.deploySchema() }
    func apply(_ bytes: [UInt8]) throws -> ApplySummary { try replica.apply(bytes) }
    func changeSet(for zone: ZoneKey, since vector: VersionVector) throws -> [UInt8] { try replica.makeChangeSet(for: zone, since: vector) }
    func syncState(of zone: ZoneKey) -> ZoneSyncState? { replica.syncState(of: zone) }
    func vectorToTell(of zone: ZoneKey) -> VersionVector { replica.syncState(of: zone)?.vector ?? VersionVector() }
    func records(in zone: ZoneKey) -> [RecordState] { replica.records(in: zone) }
    func digest(of zone: ZoneKey) throws -> DigestSum {
        try MemoryDigestSet(zone: replica.syncState(of: zone)?.zoneState, records: replica.records(in: zone)).sum(in: .all)
    }
    func record(_ name: String, in zone: ZoneKey) -> RecordState? { replica.record(name, in: zone) }
    func schema() -> Schema { replica.schema() }
    func commitSequence() -> UInt64 { replica.sequence }
    func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] { try replica.collectTombstones(in: zone, acknowledged: acknowledged) }
    func residues(in zone: ZoneKey) -> [String: RecordResidue] { replica.residues(in: zone) }
    func collectWriteBlocks(in zone: ZoneKey) throws -> Int { try replica.collectWriteBlocks(in: zone) }
}

final class StoreFuzzReplica: FuzzReplica {
    let store: RecordStore
    let directory: URL
    var replicaID: ReplicaID { store.replica }
    let kind = "store"

    /// On tmpfs where there is one: the same SQLite code, without waiting on a disk.
    static let base: URL = {
        let shm = URL(fileURLWithPath: "/dev/shm")
        return FileManager.default.isWritableFile(atPath: shm.path) ? shm : URL(fileURLWithPath: NSTemporaryDirectory())
    }()

    init(clock: ManualClock, blockEntries: Int = WriteBlock.maximumEntries) throws {
        // A directory of its own, with no shared parent: no test can remove another's store while it runs.
        directory = Self.base.appendingPathComponent("lattice-fuzz-\(getpid())-\(UUID().uuidString)")
        store = try RecordStore(directory: directory, wallClock: { clock.now })
        store.sealedBlockEntries = blockEntries
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func createZone(_ zone: ZoneKey) throws { try store.write { _ = try $0.createZone(zone) } }
    func deleteZone(_ zone: ZoneKey) throws { try store.write { try $0.deleteZone(zone) } }
    func save(_ name: String, type: String, in zone: ZoneKey, changes: [(name: String, value: FieldValue?)], replacement: FieldReplacement) throws -> Bool {
        try store.write { try $0.save(name, type: type, in: zone, changes: changes, replacement: replacement).changed }
    }
    func delete(_ name: String, in zone: ZoneKey) throws -> [String] { try store.write { try $0.delete([name], in: zone) } }
    func clearConflicts(of name: String, in zone: ZoneKey) throws -> Bool { try store.write { try $0.clearConflicts(of: name, in: zone) } }
    func deploySchema() throws -> Bool { try store.write { try $0.deploySchema() } }
    func apply(_ bytes: [UInt8]) throws -> ApplySummary { try store.apply(bytes) }
    func changeSet(for zone: ZoneKey, since vector: VersionVector) throws -> [UInt8] { try store.changeSet(for: zone, since: vector) }
    func syncState(of zone: ZoneKey) throws -> ZoneSyncState? { try store.read { try $0.syncState(of: zone) } }
    func vectorToTell(of zone: ZoneKey) throws -> VersionVector {
        try store.read { snapshot in try snapshot.syncState(of: zone).map { try snapshot.vectorToTell($0, in: zone) } ?? VersionVector() }
    }
    func records(in zone: ZoneKey) throws -> [RecordState] {
        try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state) }.sorted { $0.recordName < $1.recordName }
    }
    func record(_ name: String, in zone: ZoneKey) throws -> RecordState? { try store.read { try $0.record(name, in: zone) } }
    /// The store's own digest: its digest tables, brought up to date from the rows the triggers marked.
    func digest(of zone: ZoneKey) throws -> DigestSum {
        try store.refreshDigests(of: [zone])
        return try store.read { try $0.digestSum(of: zone, in: .all) }
    }
    func schema() throws -> Schema { try store.read { try $0.schema() } }
    func commitSequence() throws -> UInt64 { try store.currentSequence() }
    func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] { try store.collectTombstones(in: zone, acknowledged: acknowledged) }
    func residues(in zone: ZoneKey) throws -> [String: RecordResidue] { try store.read { try $0.residues(in: zone) } }
    /// The store's own collection: records read on a snapshot, blocks dropped in a short write.
    func collectWriteBlocks(in zone: ZoneKey) throws -> Int { try store.collectWriteBlocks(in: zone) }
}
