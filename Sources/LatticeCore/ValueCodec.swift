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

    /// A value as a peer or the store wrote it, refused if a local save would refuse it.
    static func decode(from reader: inout BinaryReader) throws -> FieldValue? {
        let at = reader.offset
        let value = try decodeUnchecked(from: &reader)
        if let value, let problem = Limits.problem(with: value) { throw DecodingError.malformed(problem, offset: at) }
        return value
    }

    private static func decodeUnchecked(from reader: inout BinaryReader) throws -> FieldValue? {
        let at = reader.offset
        let tagByte = try reader.byte()
        if tagByte & Tag.list.rawValue != 0 {
            guard tagByte & 0xD0 == 0, let element = FieldType.Element(rawValue: tagByte & 0x0F) else {
                throw DecodingError.malformed("unknown list type \(tagByte)", offset: at)
            }
            let count = try reader.count(below: reader.remaining + 1, "list length")
            var items: [FieldValue] = []
            items.reserveCapacity(min(count, 256)) // a count read off the wire reserves no more than that
            for _ in 0..<count { items.append(try decodePayload(element, from: &reader)) }
            return .list(items)
        }
        guard let tag = Tag(rawValue: tagByte) else { throw DecodingError.malformed("unknown value tag \(tagByte)", offset: at) }
        switch tag {
        case .removed: return nil
        case .string: return .string(try reader.string())
        case .int64: return .int64(try reader.zigzag())
        case .double: return .double(try reader.double())
        case .boolFalse: return .bool(false)
        case .boolTrue: return .bool(true)
        case .date: return .date(try reader.zigzag())
        case .bytes: return .bytes(try reader.blob())
        case .reference: return try decodePayload(.reference, from: &reader)
        case .asset: return try decodePayload(.asset, from: &reader)
        case .location: return try decodePayload(.location, from: &reader)
        case .list: throw DecodingError.malformed("bare list tag", offset: at)
        }
    }

    private static func decodePayload(_ element: FieldType.Element, from reader: inout BinaryReader) throws -> FieldValue {
        switch element {
        case .string: return .string(try reader.string())
        case .int64: return .int64(try reader.zigzag())
        case .double: return .double(try reader.double())
        case .bool: return .bool(try reader.byte() != 0)
        case .date: return .date(try reader.zigzag())
        case .bytes: return .bytes(try reader.blob())
        case .reference:
            let name = try reader.string()
            let at = reader.offset
            guard let action = RecordReference.Action(rawValue: try reader.byte()) else {
                throw DecodingError.malformed("unknown reference action", offset: at)
            }
            return .reference(RecordReference(recordName: name, action: action))
        case .asset:
            let hash = try reader.blob()
            return .asset(AssetReference(hash: hash, size: try reader.zigzag()))
        case .location:
            let latitude = try reader.double()
            let longitude = try reader.double()
            let hasAltitude = try reader.byte() != 0
            return .location(Location(latitude: latitude, longitude: longitude, altitude: hasAltitude ? try reader.double() : nil))
        }
    }
}
