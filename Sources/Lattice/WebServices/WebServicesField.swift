import Foundation
@_spi(Tools) import LatticeCore

/// A field as CloudKit Web Services writes it: `{"value": …, "type": "STRING"}`.
///
/// Types: STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP (ms), BYTES (base64),
/// REFERENCE (`{"recordName","action":"NONE"|"DELETE_SELF"}`), LOCATION
/// (`{"latitude","longitude","altitude"?}`), ASSETID (`{"fileChecksum","size","downloadURL"?}`;
/// on input, a file path to import), and `<TYPE>_LIST` with an array value.
/// Without a type, the JSON value decides: a string, an integer, a number or a boolean.
public struct WebServicesField: Codable, Hashable, Sendable {
    public var value: WebServicesValue
    public var type: String?

    public init(value: WebServicesValue, type: String?) {
        self.value = value
        self.type = type
    }

    public init(_ fieldValue: FieldValue, assetURL: (AssetReference) -> URL? = { _ in nil }) {
        value = Self.json(fieldValue, assetURL: assetURL)
        type = fieldValue.type.description
    }

    private static func json(_ value: FieldValue, assetURL: (AssetReference) -> URL?) -> WebServicesValue {
        switch value {
        case .string(let text): return .string(text)
        case .int64(let number): return .integer(number)
        case .double(let number): return .number(number)
        case .bool(let flag): return .bool(flag)
        case .date(let milliseconds): return .integer(milliseconds)
        case .bytes(let bytes): return .string(Data(bytes).base64EncodedString())
        case .reference(let reference):
            return .object(["recordName": .string(reference.recordName), "action": .string(reference.action == .deleteSelf ? "DELETE_SELF" : "NONE")])
        case .asset(let asset):
            var object: [String: WebServicesValue] = ["fileChecksum": .string(asset.hexHash), "size": .integer(asset.size)]
            // Content not here yet (it comes from a peer: `lattice asset fetch`): no downloadURL, and local false.
            let url = assetURL(asset)
            if let url { object["downloadURL"] = .string(url.absoluteString) }
            object["local"] = .bool(url != nil)
            return .object(object)
        case .location(let location):
            var object: [String: WebServicesValue] = ["latitude": .number(location.latitude), "longitude": .number(location.longitude)]
            if let altitude = location.altitude { object["altitude"] = .number(altitude) }
            return .object(object)
        case .list(let items): return .array(items.map { json($0, assetURL: assetURL) })
        }
    }

    /// The field's value; a value that does not fit its type is invalidArguments naming the field.
    public func fieldValue(field: String, importAsset: ((String) throws(LatticeError) -> FieldValue)? = nil) throws(LatticeError) -> FieldValue {
        guard let typeName = type else { return try Self.inferred(value, field: field) }
        let normalized = typeName.uppercased() == "BOOL" ? "BOOLEAN" : typeName.uppercased()
        guard let fieldType = FieldType(webServicesName: normalized) else {
            throw LatticeError(.invalidArguments, "field \(field): unknown type \"\(typeName)\"")
        }
        return try Self.value(value, as: fieldType, field: field, importAsset: importAsset)
    }

    static func value(_ raw: WebServicesValue, as type: FieldType, field: String, importAsset: ((String) throws(LatticeError) -> FieldValue)?) throws(LatticeError) -> FieldValue {
        if type.isList {
            guard case .array(let items) = raw else { throw LatticeError(.invalidArguments, "field \(field): \(type) needs an array") }
            var values: [FieldValue] = []
            for item in items { values.append(try value(item, as: FieldType(type.element), field: field, importAsset: importAsset)) }
            return .list(values)
        }
        let bad = LatticeError(.invalidArguments, "field \(field): \(raw.text) is not a valid \(type)")
        switch (type.element, raw) {
        case (.string, .string(let text)): return .string(text)
        case (.int64, .integer(let number)): return .int64(number)
        case (.int64, .number(let number)):
            guard let exact = exactInteger(number) else { throw bad }
            return .int64(exact)
        case (.double, .integer(let number)): return .double(Double(number))
        case (.double, .number(let number)): return .double(number)
        case (.bool, .bool(let flag)): return .bool(flag)
        case (.date, .integer(let milliseconds)): return .date(milliseconds)
        case (.date, .number(let number)):
            guard let exact = exactInteger(number) else { throw bad }
            return .date(exact)
        case (.date, .string(let text)):
            guard let milliseconds = ISO8601Milliseconds.parse(text) else { throw bad }
            return .date(milliseconds)
        case (.bytes, .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw bad }
            return .bytes([UInt8](data))
        case (.reference, .string(let name)): return .reference(RecordReference(recordName: name))
        case (.reference, .object):
            guard case .string(let name)? = raw["recordName"] else { throw bad }
            let action: RecordReference.Action
            switch raw["action"] {
            case nil, .null?: action = .none
            case .string(let given)? where given.uppercased() == "NONE": action = .none
            case .string(let given)? where given.uppercased() == "DELETE_SELF": action = .deleteSelf
            default: throw LatticeError(.invalidArguments, "field \(field): a reference's action is NONE or DELETE_SELF")
            }
            return .reference(RecordReference(recordName: name, action: action))
        case (.location, .object):
            guard let latitude = raw["latitude"]?.double, let longitude = raw["longitude"]?.double else { throw bad }
            return .location(Location(latitude: latitude, longitude: longitude, altitude: raw["altitude"]?.double))
        case (.asset, .string(let path)):
            guard let importAsset else { throw LatticeError(.invalidArguments, "field \(field): an asset cannot be given here") }
            return try importAsset(path)
        case (.asset, _):
            throw LatticeError(.invalidArguments, "field \(field): an ASSETID value is a file path to import")
        default:
            throw bad
        }
    }

    private static func inferred(_ raw: WebServicesValue, field: String) throws(LatticeError) -> FieldValue {
        switch raw {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .integer(let number): return .int64(number)
        case .number(let number): return .double(number)
        default: throw LatticeError(.invalidArguments, "field \(field): give a \"type\" for this value")
        }
    }

    /// The number as an Int64 only if it is one exactly: no rounding, no clamping (doubles are exact up to 2^53).
    private static func exactInteger(_ value: Double) -> Int64? {
        guard value.rounded() == value, value.magnitude <= 9_007_199_254_740_992 else { return nil }
        return Int64(value)
    }
}

extension WebServicesValue {
    /// The value as JSON text, for error messages.
    public var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "this value"
    }
}

/// ISO 8601 dates with or without fractional seconds, or a date alone, as milliseconds.
public enum ISO8601Milliseconds {
    public static func parse(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime], [.withFullDate]] {
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        }
        return nil
    }

    public static func format(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
