/// Appends the little building blocks of Lattice's binary encodings.
package struct BinaryWriter: Sendable {
    package private(set) var bytes: [UInt8]

    package init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    package var count: Int { bytes.count }

    package mutating func removeAll(keepingCapacity: Bool = true) { bytes.removeAll(keepingCapacity: keepingCapacity) }

    @inline(__always) package mutating func byte(_ value: UInt8) { bytes.append(value) }

    package mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    @inline(__always) package mutating func varint(_ value: Int) { varint(UInt64(value)) }

    package mutating func zigzag(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func fixed32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    package mutating func fixed64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    package mutating func double(_ value: Double) { fixed64(value.bitPattern) }

    package mutating func raw<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }

    package mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    package mutating func blob(_ value: [UInt8]) {
        varint(value.count)
        bytes.append(contentsOf: value)
    }
}

/// Why a binary encoding could not be read.
package enum BinaryDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(offset: Int)
    case malformed(String, offset: Int)

    package var description: String {
        switch self {
        case .truncated(let offset): return "data ends early at byte \(offset)"
        case .malformed(let what, let offset): return "\(what) at byte \(offset)"
        }
    }
}

/// Reads what `BinaryWriter` wrote, checking every length against what is there.
package struct BinaryReader {
    package let bytes: [UInt8]
    package private(set) var offset: Int
    let end: Int

    package init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        offset = start
        self.end = end ?? bytes.count
    }

    package var isAtEnd: Bool { offset >= end }
    package var remaining: Int { end - offset }

    @inline(__always) package mutating func byte() throws -> UInt8 {
        guard offset < end else { throw BinaryDecodingError.truncated(offset: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    package mutating func varint() throws -> UInt64 {
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
    package mutating func count(below limit: Int, _ what: String) throws -> Int {
        let value = try varint()
        guard value < UInt64(limit) else { throw BinaryDecodingError.malformed("\(what) \(value) is out of range", offset: offset) }
        return Int(value)
    }

    package mutating func zigzag() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    package mutating func fixed32() throws -> UInt32 {
        guard remaining >= 4 else { throw BinaryDecodingError.truncated(offset: offset) }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << UInt32(8 * index) }
        offset += 4
        return value
    }

    package mutating func fixed64() throws -> UInt64 {
        guard remaining >= 8 else { throw BinaryDecodingError.truncated(offset: offset) }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << UInt64(8 * index) }
        offset += 8
        return value
    }

    package mutating func double() throws -> Double { Double(bitPattern: try fixed64()) }

    package mutating func raw(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw BinaryDecodingError.truncated(offset: offset) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A length prefix, checked against what is left after it.
    package mutating func length(_ what: String) throws -> Int {
        let value = try varint()
        guard value <= UInt64(remaining) else { throw BinaryDecodingError.malformed("\(what) \(value) runs past the end", offset: offset) }
        return Int(value)
    }

    package mutating func string() throws -> String {
        let length = try length("string length")
        let start = offset
        offset += length
        guard let text = String(validating: bytes[start..<start + length], as: UTF8.self) else {
            throw BinaryDecodingError.malformed("invalid UTF-8", offset: start)
        }
        return text
    }

    package mutating func blob() throws -> [UInt8] {
        let length = try length("blob length")
        return Array(try raw(length))
    }
}
