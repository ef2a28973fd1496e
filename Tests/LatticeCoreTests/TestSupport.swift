import LatticeCore
@_exported import LatticeTestSupport

let testZone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))

func replicaID(_ n: UInt64) -> ReplicaID { ReplicaID(high: n, low: n &* 31) }

/// A wall clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    var now: UInt64
    init(_ now: UInt64 = 1_700_000_000_000) { self.now = now }
}

func makeReplica(_ n: UInt64, clock: ManualClock) -> MemoryReplica {
    let replica = MemoryReplica(replica: replicaID(n), wallClock: { clock.now })
    return replica
}

/// The canonical bytes of a record, for byte-identical comparisons.
func canonical(_ records: [RecordState]) throws -> [UInt8] {
    let replicas = Set(records.flatMap { $0.vector.entries.map(\.replica) }).sorted()
    let header = ChangeSetHeader(
        zone: testZone, zoneState: ZoneState(causalLength: 1, stamp: Stamp(time: .zero, replica: replicas.first ?? replicaID(0))),
        base: VersionVector(), top: VersionVector(), claimsTop: false, replicas: replicas.isEmpty ? [replicaID(0)] : replicas, schema: Schema())
    return try MemoryReplica.encode(header: header, records: records)
}

/// Splits a change set into parts that claim nothing, records dealt out at random.
func split(_ bytes: [UInt8], parts: Int, using rng: inout SeededGenerator) throws -> [[UInt8]] {
    var reader = ChangeSetReader(source: ArrayByteSource(bytes))
    var header = try reader.readHeader()!
    var buckets = Array(repeating: [RecordState](), count: parts)
    while let record = try reader.nextRecord() { buckets[Int.random(in: 0..<parts, using: &rng)].append(record) }
    header.claimsTop = false
    return try buckets.map { try MemoryReplica.encode(header: header, records: $0) }
}

func recordNames(in bytes: [UInt8]) throws -> [String] {
    var reader = ChangeSetReader(source: ArrayByteSource(bytes))
    var names: [String] = []
    while try reader.readHeader() != nil {
        while let record = try reader.nextRecord() { names.append(record.recordName) }
        reader = ChangeSetReader(source: reader.source)
    }
    return names
}
