/// Appends the little building blocks of Lattice's binary encodings.
public struct BinaryWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func removeAll(keepingCapacity: Bool = true) { bytes.removeAll(keepingCapacity: keepingCapacity) }

    @inline(__always) public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    @inline(__always) public mutating func varint(_ value: Int) { varint(UInt64(value)) }

    public mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func fixed32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    public mutating func fixed64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    public mutating func double(_ value: Double) { fixed64(value.bitPattern) }

    public mutating func raw<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }

    public mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func blob(_ value: [UInt8]) {
        varint(value.count)
        bytes.append(contentsOf: value)
    }
}

/// Why a binary encoding could not be read.
public enum BinaryDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(offset: Int)
    case malformed(String, offset: Int)

    public var description: String {
        switch self {
        case .truncated(let offset): return "data ends early at byte \(offset)"
        case .malformed(let what, let offset): return "\(what) at byte \(offset)"
        }
    }
}

/// Reads what `BinaryWriter` wrote, checking every length against what is there.
public struct BinaryReader {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    let end: Int

    public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        offset = start
        self.end = end ?? bytes.count
    }

    public var isAtEnd: Bool { offset >= end }
    public var remaining: Int { end - offset }

    @inline(__always) public mutating func byte() throws -> UInt8 {
        guard offset < end else { throw BinaryDecodingError.truncated(offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func varint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < end else { throw BinaryDecodingError.truncated(offset: offset) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63, byte > 1 { throw BinaryDecodingError.malformed("varint overflows 64 bits", offset: offset) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { throw BinaryDecodingError.malformed("varint too long", offset: offset) }
        }
    }

    /// A varint that must fit a count or index below `limit`.
    public mutating func count(below limit: Int, _ what: String) throws -> Int {
        let value = try varint()
        guard value < UInt64(limit) else { throw BinaryDecodingError.malformed("\(what) \(value) is out of range", offset: offset) }
        return Int(value)
    }

    public mutating func zigzag() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    public mutating func fixed32() throws -> UInt32 {
        guard remaining >= 4 else { throw BinaryDecodingError.truncated(offset: offset) }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return value
    }

    public mutating func fixed64() throws -> UInt64 {
        guard remaining >= 8 else { throw BinaryDecodingError.truncated(offset: offset) }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += 8
        return value
    }

    public mutating func double() throws -> Double { Double(bitPattern: try fixed64()) }

    public mutating func raw(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw BinaryDecodingError.truncated(offset: offset) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A length prefix, checked against what is left after it.
    public mutating func length(_ what: String) throws -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw BinaryDecodingError.malformed("\(what) \(value) runs past the end", offset: offset) }
        return Int(value)
    }

    public mutating func string() throws -> String {
        let length = try length("string length")
        let start = offset
        offset += length
        guard let text = String(validating: bytes[start..<start + length], as: UTF8.self) else {
            throw BinaryDecodingError.malformed("invalid UTF-8", offset: start)
        }
        return text
    }

    public mutating func blob() throws -> [UInt8] {
        let length = try length("blob length")
        return Array(try raw(length))
    }
}
