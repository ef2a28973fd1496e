@_spi(Tools) import LatticeCore

/// The conflict log's row format: the field conflicts one merge observed on
/// one record, encoded together so a merge that loses many fields writes one row.
enum ConflictCodec {
    static func encode(_ conflicts: [FieldConflict]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.varint(conflicts.count)
        for conflict in conflicts {
            writer.string(conflict.field)
            writer.blob(RecordBlob.encodeValue(conflict.losingValue))
            writer.blob(RecordBlob.encodeStamp(conflict.losingStamp))
            writer.blob(RecordBlob.encodeValue(conflict.winningValue))
            writer.blob(RecordBlob.encodeStamp(conflict.winningStamp))
        }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8], recordName: String) throws -> [FieldConflict] {
        var reader = BinaryReader(bytes)
        let count = try reader.count(below: bytes.count + 1, "conflict count")
        return try (0..<count).map { _ in
            let field = try reader.string()
            return FieldConflict(
                recordName: recordName, field: field,
                losingValue: try RecordBlob.decodeValue(try reader.blob()), losingStamp: try RecordBlob.decodeStamp(try reader.blob()),
                winningValue: try RecordBlob.decodeValue(try reader.blob()), winningStamp: try RecordBlob.decodeStamp(try reader.blob()))
        }
    }
}
