/// A record state as one self-contained blob, for storage. Replica IDs are
/// written as indexes into a table the caller keeps (the store's `replicas`).
package enum RecordBlob {
    package static func encode(_ state: RecordState, replicas: inout ReplicaTable) -> [UInt8] {
        var codec = RecordCodec()
        codec.names.interning = false
        var writer = BinaryWriter(capacity: 128)
        codec.encode(state, into: &writer, replicas: &replicas)
        return writer.bytes
    }

    package static func decode(_ bytes: [UInt8], replicas: [ReplicaID]) throws -> RecordState {
        var codec = RecordCodec()
        var reader = BinaryReader(bytes)
        let state = try codec.decode(from: &reader, replicas: replicas)
        guard reader.isAtEnd else { throw BinaryDecodingError.malformed("trailing bytes after record", offset: reader.offset) }
        return state
    }

    /// The causal length and vector of a stored record, read without its fields.
    package static func decodeVersion(_ bytes: [UInt8], replicas: [ReplicaID]) throws -> RecordVersion {
        var codec = RecordCodec()
        var reader = BinaryReader(bytes)
        return try codec.decodeVersion(from: &reader, replicas: replicas)
    }

    package static func encodeVector(_ vector: VersionVector) -> [UInt8] {
        var writer = BinaryWriter()
        writer.varint(vector.entries.count)
        for entry in vector.entries {
            writer.raw(entry.replica.bytes)
            writer.varint(entry.time.rawValue)
        }
        return writer.bytes
    }

    package static func decodeVector(_ bytes: [UInt8]) throws -> VersionVector {
        var reader = BinaryReader(bytes)
        var vector = VersionVector()
        for _ in 0..<(try reader.count(below: bytes.count / 17 + 1, "vector length")) {
            let replica = ReplicaID(bytes: try reader.raw(16))
            vector.advance(replica, to: HLCTimestamp(rawValue: try reader.varint()))
        }
        return vector
    }

    package static func encodeStamp(_ stamp: Stamp) -> [UInt8] {
        var writer = BinaryWriter()
        writer.raw(stamp.replica.bytes)
        writer.varint(stamp.time.rawValue)
        return writer.bytes
    }

    package static func decodeStamp(_ bytes: [UInt8]) throws -> Stamp {
        var reader = BinaryReader(bytes)
        let replica = ReplicaID(bytes: try reader.raw(16))
        return Stamp(time: HLCTimestamp(rawValue: try reader.varint()), replica: replica)
    }

    package static func encodeValue(_ value: FieldValue?) -> [UInt8] {
        var writer = BinaryWriter()
        ValueCodec.encode(value, into: &writer)
        return writer.bytes
    }

    package static func decodeValue(_ bytes: [UInt8]) throws -> FieldValue? {
        var reader = BinaryReader(bytes)
        return try ValueCodec.decode(from: &reader)
    }
}
