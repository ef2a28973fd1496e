import Foundation

/// A reader of the JSON that `record import` and `batch` take a line at a
/// time, many times faster than `JSONDecoder` with the same meaning.
///
/// It answers only where its answer is sure to be `JSONDecoder`'s: a line it
/// does not read as plainly valid (a number `JSONDecoder` might read either
/// way, a key given twice, an escape it does not know, a value of the wrong
/// shape) gives nil, and the caller decodes that line with `JSONDecoder`,
/// whose errors name what is wrong.
enum WebServicesJSON {
    /// Nesting deeper than this is left to `JSONDecoder`.
    static let maximumDepth = 32

    /// The value of a whole JSON text, or nil (see above).
    static func value(_ bytes: UnsafeRawBufferPointer) -> WebServicesValue? {
        var reader = Reader(bytes: bytes)
        guard let value = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.index == bytes.count ? value : nil
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
        }

        mutating func value(depth: Int) -> WebServicesValue? {
            guard depth < WebServicesJSON.maximumDepth else { return nil }
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(WebServicesValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default: return number()
            }
        }

        mutating func literal(_ word: String, _ value: WebServicesValue) -> WebServicesValue? {
            let utf8 = word.utf8
            guard index + utf8.count <= bytes.count, bytes[index..<index + utf8.count].elementsEqual(utf8) else { return nil }
            index += utf8.count
            return value
        }

        mutating func object(depth: Int) -> WebServicesValue? {
            index += 1
            var members: [String: WebServicesValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                // A key given twice: which one JSONDecoder keeps is its business.
                guard let member = value(depth: depth + 1), members.updateValue(member, forKey: key) == nil else { return nil }
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(members)
                } else {
                    return nil
                }
            }
        }

        mutating func array(depth: Int) -> WebServicesValue? {
            index += 1
            var items: [WebServicesValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(items)
                } else {
                    return nil
                }
            }
        }

        /// A string without escapes, or with the short ones; `\u` escapes are left to JSONDecoder.
        mutating func string() -> String? {
            index += 1
            let start = index
            var unescaped: [UInt8]?
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = unescaped.map { String(validating: $0, as: UTF8.self) }
                        ?? String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return text
                }
                guard byte >= 0x20 else { return nil }
                if byte == UInt8(ascii: "\\") {
                    if unescaped == nil { unescaped = Array(bytes[start..<index]) }
                    index += 1
                    guard index < bytes.count else { return nil }
                    switch bytes[index] {
                    case UInt8(ascii: "\""): unescaped!.append(UInt8(ascii: "\""))
                    case UInt8(ascii: "\\"): unescaped!.append(UInt8(ascii: "\\"))
                    case UInt8(ascii: "/"): unescaped!.append(UInt8(ascii: "/"))
                    case UInt8(ascii: "n"): unescaped!.append(0x0A)
                    case UInt8(ascii: "t"): unescaped!.append(0x09)
                    case UInt8(ascii: "r"): unescaped!.append(0x0D)
                    case UInt8(ascii: "b"): unescaped!.append(0x08)
                    case UInt8(ascii: "f"): unescaped!.append(0x0C)
                    default: return nil
                    }
                } else {
                    unescaped?.append(byte)
                }
                index += 1
            }
            return nil
        }

        /// An integer that fits 64 bits, or a number whose value has a fraction
        /// (JSONDecoder reads `2.0` and `1e3` as integers, and a number past
        /// 64 bits as a double: those are left to it).
        mutating func number() -> WebServicesValue? {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            let digits = index - digitsStart
            // JSON allows no leading zero and no empty integer part.
            guard digits > 0, digits == 1 || bytes[digitsStart] != UInt8(ascii: "0") else { return nil }
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                let fractionStart = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
                guard index > fractionStart else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                let exponentStart = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
                guard index > exponentStart else { return nil }
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger { return Int64(text).map(WebServicesValue.integer) }
            guard let number = Double(text), number.isFinite, number.rounded() != number else { return nil }
            return .number(number)
        }
    }
}

extension WebServicesRecord {
    /// A record line read as `JSONDecoder` would, or nil where this reader
    /// leaves it to `JSONDecoder` (`WebServicesJSON`).
    package static func fastDecoded(_ line: UnsafeRawBufferPointer) -> WebServicesRecord? {
        guard case .object(let members)? = WebServicesJSON.value(line),
              case .string(let recordName)? = members["recordName"],
              case .string(let recordType)? = members["recordType"],
              case .object(let fieldMembers)? = members["fields"] else { return nil }
        var fields: [String: WebServicesField] = [:]
        fields.reserveCapacity(fieldMembers.count)
        for (name, member) in fieldMembers {
            guard case .object(let field) = member, let value = field["value"] else { return nil }
            switch field["type"] {
            case nil, .null?: fields[name] = WebServicesField(value: value, type: nil)
            case .string(let type)?: fields[name] = WebServicesField(value: value, type: type)
            default: return nil
            }
        }
        var record = WebServicesRecord(recordName: recordName, recordType: recordType, fields: fields)
        switch members["recordChangeTag"] {
        case nil, .null?: break
        case .string(let tag)?: record.recordChangeTag = tag
        default: return nil
        }
        switch members["zoneID"] {
        case nil, .null?: break
        case .object(let zone)?:
            // The owner is optional, as CloudKit's is, under either name (as JSONDecoder reads it: null is absent).
            func owner(_ key: String) -> String?? {
                switch zone[key] {
                case nil, .null?: return .some(nil)
                case .string(let name)?: return .some(name)
                default: return nil
                }
            }
            guard case .string(let zoneName)? = zone["zoneName"], let ownerName = owner("ownerName"), let ownerRecordName = owner("ownerRecordName") else { return nil }
            record.zoneID = WebServicesZoneID(zoneName: zoneName, ownerName: ownerName ?? ownerRecordName ?? Zone.ID.defaultOwnerName)
        default: return nil
        }
        func timestamp(_ key: String) -> WebServicesTimestamp?? {
            switch members[key] {
            case nil, .null?: return .some(nil)
            case .object(let stamp)?:
                guard case .integer(let milliseconds)? = stamp["timestamp"], case .string(let deviceID)? = stamp["deviceID"] else { return nil }
                return .some(WebServicesTimestamp(timestamp: milliseconds, deviceID: deviceID))
            default: return nil
            }
        }
        guard let created = timestamp("created"), let modified = timestamp("modified") else { return nil }
        record.created = created
        record.modified = modified
        return record
    }
}

extension WebServicesZoneID {
    init(zoneName: String, ownerName: String) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }
}
