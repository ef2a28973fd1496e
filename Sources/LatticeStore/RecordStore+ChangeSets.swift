import Foundation
import LatticeCore

extension RecordStore {
    /// Streams the change set of what this store has in `key` that `vector`
    /// lacks to `sink`, a frame at a time, from one consistent snapshot.
    @discardableResult
    public func writeChangeSet(for key: ZoneKey, since vector: VersionVector, to sink: @escaping ([UInt8]) throws -> Void) throws -> (records: Int, bytes: Int) {
        try read { snapshot in
            guard let zone = try snapshot.zoneRow(key) else { throw StoreError.zoneNotFound(key.description) }
            let header = ChangeSetHeader(zone: key, sync: zone.sync, base: vector, schema: try snapshot.schema())
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
    /// any of them is applied. If none brings anything new, nothing is
    /// committed: the sequence, checkpoints and change tokens stay as they were.
    @discardableResult
    public func apply<Source: ByteSource>(from source: Source) throws -> ApplySummary {
        var reader = ChangeSetReader(source: source)
        return try write { transaction in
            var total = ApplySummary()
            while try reader.readHeader() != nil {
                total.add(try transaction.apply(&reader))
                reader = ChangeSetReader(source: reader.source)
            }
            return total
        }
    }

    public func apply(_ bytes: [UInt8]) throws -> ApplySummary {
        try apply(from: ArrayByteSource(bytes))
    }
}
