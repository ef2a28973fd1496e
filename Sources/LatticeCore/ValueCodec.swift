/// The binary form of field values: a tag byte, then the payload.
enum ValueCodec {
    private enum Tag: UInt8 {
        case removed = 0, string, int64, double, boolFalse, boolTrue, date, bytes, reference, asset, location
        case list = 0x20
    }

    static func encode(_ value: FieldValue?, into writer: inout BinaryWriter) {
        guard let value else { return writer.byte(Tag.removed.rawValue) }
        switch value {
        case .string(let text):
            writer.byte(Tag.string.rawValue)
            writer.string(text)
        case .int64(let number):
            writer.byte(Tag.int64.rawValue)
            writer.zigzag(number)
        case .double(let number):
            writer.byte(Tag.double.rawValue)
            writer.double(number)
        case .bool(let flag):
            writer.byte(flag ? Tag.boolTrue.rawValue : Tag.boolFalse.rawValue)
        case .date(let milliseconds):
            writer.byte(Tag.date.rawValue)
            writer.zigzag(milliseconds)
        case .bytes(let bytes):
            writer.byte(Tag.bytes.rawValue)
            writer.blob(bytes)
        case .reference(let reference):
            writer.byte(Tag.reference.rawValue)
            encodePayload(value: .reference(reference), into: &writer)
        case .asset(let asset):
            writer.byte(Tag.asset.rawValue)
            encodePayload(value: .asset(asset), into: &writer)
        case .location(let location):
            writer.byte(Tag.location.rawValue)
            encodePayload(value: .location(location), into: &writer)
        case .list(let items):
            writer.byte(Tag.list.rawValue | value.type.element.rawValue)
            writer.varint(items.count)
            for item in items { encodePayload(value: item, into: &writer) }
        }
    }

    /// A list element: the payload alone, its type being the list's.
    private static func encodePayload(value: FieldValue, into writer: inout BinaryWriter) {
        switch value {
        case .string(let text): writer.string(text)
        case .int64(let number): writer.zigzag(number)
        case .double(let number): writer.double(number)
        case .bool(let flag): writer.byte(flag ? 1 : 0)
        case .date(let milliseconds): writer.zigzag(milliseconds)
        case .bytes(let bytes): writer.blob(bytes)
        case .reference(let reference):
            writer.string(reference.recordName)
            writer.byte(reference.action.rawValue)
        case .asset(let asset):
            writer.blob(asset.hash)
            writer.zigzag(asset.size)
        case .location(let location):
            writer.double(location.latitude)
            writer.double(location.longitude)
            writer.byte(location.altitude == nil ? 0 : 1)
            if let altitude = location.altitude { writer.double(altitude) }
        case .list:
            preconditionFailure("lists do not nest")
        }
    }

    /// A value as a peer or the store wrote it, refused where a local save
    /// would refuse it (`Limits`): each check sits where its payload is read.
    static func decode(from reader: inout BinaryReader) throws -> FieldValue? {
        let at = reader.offset
        let tagByte = try reader.byte()
        if tagByte & Tag.list.rawValue != 0 {
            guard tagByte & 0xD0 == 0, let element = FieldType.Element(rawValue: tagByte & 0x0F) else {
                throw BinaryDecodingError.malformed("unknown list type \(tagByte)", offset: at)
            }
            let count = try reader.count(below: reader.remaining + 1, "list length")
            var items: [FieldValue] = []
            items.reserveCapacity(min(count, 256)) // a count read off the wire reserves no more than that
            for _ in 0..<count { items.append(try decodePayload(element, from: &reader)) }
            let list = FieldValue.list(items)
            guard Limits.accepts(byteCount: list.approximateSize) else { throw refusal(list, at: at) }
            return list
        }
        guard let tag = Tag(rawValue: tagByte) else { throw BinaryDecodingError.malformed("unknown value tag \(tagByte)", offset: at) }
        switch tag {
        case .removed: return nil
        case .boolFalse: return .bool(false)
        case .boolTrue: return .bool(true)
        case .string: return try decodePayload(.string, from: &reader)
        case .int64: return try decodePayload(.int64, from: &reader)
        case .double: return try decodePayload(.double, from: &reader)
        case .date: return try decodePayload(.date, from: &reader)
        case .bytes: return try decodePayload(.bytes, from: &reader)
        case .reference: return try decodePayload(.reference, from: &reader)
        case .asset: return try decodePayload(.asset, from: &reader)
        case .location: return try decodePayload(.location, from: &reader)
        case .list: throw BinaryDecodingError.malformed("bare list tag", offset: at)
        }
    }

    private static func refusal(_ value: FieldValue, at offset: Int) -> BinaryDecodingError {
        BinaryDecodingError.malformed(Limits.problem(with: value) ?? "a value no local save could write", offset: offset)
    }

    private static func decodePayload(_ element: FieldType.Element, from reader: inout BinaryReader) throws -> FieldValue {
        let at = reader.offset
        switch element {
        case .string:
            let text = try reader.string()
            guard Limits.accepts(byteCount: text.utf8.count) else { throw refusal(.string(text), at: at) }
            return .string(text)
        case .int64: return .int64(try reader.zigzag())
        case .double:
            let number = try reader.double()
            guard number.isFinite else { throw refusal(.double(number), at: at) }
            return .double(number)
        case .bool: return .bool(try reader.byte() != 0)
        case .date:
            let milliseconds = try reader.zigzag()
            guard Limits.accepts(date: milliseconds) else { throw refusal(.date(milliseconds), at: at) }
            return .date(milliseconds)
        case .bytes:
            let bytes = try reader.blob()
            guard Limits.accepts(byteCount: bytes.count) else { throw refusal(.bytes(bytes), at: at) }
            return .bytes(bytes)
        case .reference:
            let name = try reader.string()
            guard let action = RecordReference.Action(rawValue: try reader.byte()) else {
                throw BinaryDecodingError.malformed("unknown reference action", offset: at)
            }
            let reference = FieldValue.reference(RecordReference(recordName: name, action: action))
            guard Limits.isRecordName(name) else { throw refusal(reference, at: at) }
            return reference
        case .asset:
            let hash = try reader.blob()
            let asset = AssetReference(hash: hash, size: try reader.zigzag())
            guard Limits.accepts(asset: asset) else { throw refusal(.asset(asset), at: at) }
            return .asset(asset)
        case .location:
            let latitude = try reader.double()
            let longitude = try reader.double()
            let hasAltitude = try reader.byte() != 0
            let location = Location(latitude: latitude, longitude: longitude, altitude: hasAltitude ? try reader.double() : nil)
            guard Limits.accepts(location: location) else { throw refusal(.location(location), at: at) }
            return .location(location)
        }
    }
}
