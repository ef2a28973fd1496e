import Foundation
@_spi(Tools) import LatticeCore

extension RecordStore {
    /// Streams the change set of what this store has in `key` that `vector`
    /// lacks to `sink`, a frame at a time, from one consistent snapshot.
    @discardableResult
    package func writeChangeSet(for key: ZoneKey, since vector: VersionVector, to sink: @escaping ([UInt8]) throws -> Void) throws -> (records: Int, bytes: Int) {
        try read { try $0.writeChangeSet(for: key, since: vector, to: sink) }
    }

    /// The change set as bytes in memory (small zones, tests).
    package func changeSet(for key: ZoneKey, since vector: VersionVector) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try writeChangeSet(for: key, since: vector) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Applies every change set `source` holds (one per zone, as in a bundle)
    /// in one transaction: if any turns out truncated or corrupt, nothing of
    /// any of them is applied. If none brings anything new, nothing is
    /// committed: the sequence, checkpoints and change tokens stay as they were.
    /// With `expectedChangeSets`, a source holding another number of change
    /// sets (a bundle cut between two of them) is refused whole.
    @discardableResult
    package func apply<Source: ByteSource>(from source: Source, expectedChangeSets: Int? = nil) throws -> ApplySummary {
        try write { transaction in
            let summary = try transaction.applyChangeSets(from: source)
            if let expectedChangeSets, summary.changeSets != expectedChangeSets {
                throw ChangeSetError.malformed("it holds \(summary.changeSets) change sets where its header announces \(expectedChangeSets) (cut short?)")
            }
            return summary
        }
    }

    @discardableResult
    package func apply(_ bytes: [UInt8]) throws -> ApplySummary {
        try apply(from: ArrayByteSource(bytes))
    }
}

extension StoreSnapshot {
    /// Streams the change set of what this snapshot holds in `key` that `vector` lacks.
    @discardableResult
    package func writeChangeSet(for key: ZoneKey, since vector: VersionVector, to sink: @escaping ([UInt8]) throws -> Void) throws -> (records: Int, bytes: Int) {
        guard let zone = try zoneRow(key) else { throw StoreError.zoneNotFound(key.description) }
        var header = ChangeSetHeader(zone: key, sync: zone.sync, base: vector, schema: try schema())
        if key.scope == .shared { header.memberships = try memberships(of: header.replicas).map(\.encoded) }
        var writer = try ChangeSetWriter(header: header, proofs: proofCollector(for: key, base: vector), sink: sink)
        let start = try deltaStart(zoneID: zone.id, for: vector)
        // The share goes first: the records after it are judged by the share it brings (the writes an owner device vouches for).
        let share = key.scope == .shared ? try record(Share.recordName, zoneID: zone.id).flatMap { vector.dominates($0.vector) ? nil : $0 } : nil
        if let share { try writer.append(share) }
        try forEachRecord(changedAfter: start, zoneID: zone.id) { state in
            if share == nil || state.recordName != Share.recordName { try writer.append(state) }
        }
        try writer.finish()
        return (writer.recordCount, writer.byteCount)
    }

    /// Every zone this snapshot knows, in every database.
    package func allZoneKeys() throws -> [ZoneKey] {
        try DatabaseScope.allCases.flatMap { try zones(in: $0).map(\.key) }
    }
}
