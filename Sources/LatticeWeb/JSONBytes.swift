import Foundation
import Lattice

/// JSON written by hand for the dictionaries that responses carry by the
/// hundred (records, fields, values): `JSONEncoder` spent two thirds of a
/// query's time on them. Keys come sorted and `/` unescaped, as the server's
/// `JSONEncoder` writes them (`.sortedKeys`, `.withoutEscapingSlashes`); the
/// tests hold the two to the same JSON.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 4096) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for (index, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: utf8[start..<index])
                start = index + 1
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    raw("\\u00")
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                }
            }
            bytes.append(contentsOf: utf8[start...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func integer(_ value: Int64) { bytes.append(contentsOf: String(value).utf8) }

    mutating func number(_ value: Double) {
        guard value.isFinite else { return raw("null") }
        var text = "\(value)"
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    mutating func bool(_ value: Bool) { value ? raw("true") : raw("false") }

    /// `"key":` (with a comma first unless it opens its object).
    mutating func key(_ name: String, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func value(_ value: WebServicesValue) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): bool(flag)
        case .integer(let number): integer(number)
        case .number(let number): self.number(number)
        case .string(let text): string(text)
        case .array(let items):
            raw("[")
            for (index, item) in items.enumerated() {
                if index > 0 { raw(",") }
                self.value(item)
            }
            raw("]")
        case .object(let members):
            raw("{")
            for (index, name) in members.keys.sorted().enumerated() {
                key(name, first: index == 0)
                self.value(members[name]!)
            }
            raw("}")
        }
    }

    mutating func field(_ field: WebServicesField) {
        raw("{")
        if let type = field.type {
            key("type", first: true)
            string(type)
            key("value")
        } else {
            key("value", first: true)
        }
        value(field.value)
        raw("}")
    }

    mutating func zoneID(_ zoneID: WebServicesZoneID) {
        raw("{\"ownerName\":")
        string(zoneID.ownerName)
        raw(",\"zoneName\":")
        string(zoneID.zoneName)
        raw("}")
    }

    mutating func timestamp(_ stamp: WebServicesTimestamp) {
        raw("{\"deviceID\":")
        string(stamp.deviceID)
        raw(",\"timestamp\":")
        integer(stamp.timestamp)
        raw("}")
    }

    /// A record dictionary, its keys in order (created, fields, modified, recordChangeTag, recordName, recordType, zoneID).
    mutating func record(_ record: WebServicesRecord) {
        raw("{")
        var first = true
        if let created = record.created {
            key("created", first: true)
            timestamp(created)
            first = false
        }
        key("fields", first: first)
        raw("{")
        for (index, name) in record.fields.keys.sorted().enumerated() {
            key(name, first: index == 0)
            field(record.fields[name]!)
        }
        raw("}")
        if let modified = record.modified {
            key("modified")
            timestamp(modified)
        }
        if let tag = record.recordChangeTag {
            key("recordChangeTag")
            string(tag)
        }
        key("recordName")
        string(record.recordName)
        key("recordType")
        string(record.recordType)
        if let zoneID = record.zoneID {
            key("zoneID")
            self.zoneID(zoneID)
        }
        raw("}")
    }

    /// A value of another shape, through `JSONEncoder` (a deletion, an error: rare and small).
    mutating func encoded(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let data = try? encoder.encode(value) { bytes.append(contentsOf: data) } else { raw("null") }
    }
}

extension RecordEntry {
    func write(to json: inout JSONBytes) {
        switch self {
        case .record(let record): json.record(record)
        case .deleted(let deletion): json.encoded(deletion)
        case .error(let error): json.encoded(error)
        }
    }
}

extension WebResponse {
    /// `{…,"records":[…],…}`, written by `JSONBytes`: `before` writes the members
    /// whose keys sort before "records" (each with its comma after), `after` those after it (each with its comma before).
    static func records(_ entries: [RecordEntry], before: (inout JSONBytes) -> Void = { _ in }, after: (inout JSONBytes) -> Void = { _ in }) -> WebResponse {
        var json = JSONBytes(capacity: entries.count * 512 + 128)
        json.raw("{")
        before(&json)
        json.raw("\"records\":[")
        for (index, entry) in entries.enumerated() {
            if index > 0 { json.raw(",") }
            entry.write(to: &json)
        }
        json.raw("]")
        after(&json)
        json.raw("}")
        return .whole(status: .ok, contentType: "application/json; charset=utf-8", body: json.bytes)
    }
}
