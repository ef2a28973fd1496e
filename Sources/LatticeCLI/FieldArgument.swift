import Foundation
import Lattice

/// `FIELD[:TYPE]=VALUE` from the command line.
///
/// Types: string (default, unless the schema already says otherwise), int,
/// double, bool, date (ISO 8601 or milliseconds), bytes (base64), ref and
/// ref-cascade (a record name of the same zone; cascade = deleteSelf),
/// location (lat,lon[,alt]), asset (a file path), null (removes the field), and
/// lists: `TYPE-list` with comma-separated items or a JSON array.
public struct FieldArgument: Equatable, Sendable {
    public var name: String
    public var type: String?
    public var text: String

    public init(parsing argument: String) throws {
        guard let equals = argument.firstIndex(of: "=") else {
            throw CLIError.usage("\"\(argument)\" is not FIELD[:TYPE]=VALUE (missing '=')")
        }
        let left = argument[..<equals]
        text = String(argument[argument.index(after: equals)...])
        if let colon = left.firstIndex(of: ":") {
            name = String(left[..<colon])
            type = String(left[left.index(after: colon)...]).lowercased()
        } else {
            name = String(left)
        }
        guard !name.isEmpty else { throw CLIError.usage("\"\(argument)\" has an empty field name") }
        guard let first = name.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic,
              name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") })
        else {
            throw CLIError.usage("field name \"\(name)\" is invalid: it must start with a letter and hold only letters, digits and _")
        }
        if let type, Self.element(type) == nil, type != "null" {
            throw CLIError.usage("\"\(argument)\": unknown type \"\(type)\"; use string, int, double, bool, date, bytes, ref, ref-cascade, location, asset, null or TYPE-list")
        }
    }

    static func element(_ type: String) -> (FieldType.Element, cascade: Bool, list: Bool)? {
        let list = type.hasSuffix("-list")
        let base = list ? String(type.dropLast(5)) : type
        let table: [String: FieldType.Element] = [
            "string": .string, "int": .int64, "int64": .int64, "double": .double, "bool": .bool, "date": .date,
            "bytes": .bytes, "ref": .reference, "ref-cascade": .reference, "location": .location, "asset": .asset,
        ]
        guard let element = table[base] else { return nil }
        return (element, base == "ref-cascade", list)
    }

    /// The value, typed by the argument's TYPE, else by the schema, else a string. Nil removes.
    /// `zoneName`: the zone of the record the field is written to, which a ZONE/NAME reference must name.
    func value(schemaType: FieldType?, container: Container, zoneName: String) throws -> FieldValue? {
        if type == "null" { return nil }
        let (element, cascade, list): (FieldType.Element, Bool, Bool)
        if let type, let parsed = Self.element(type) {
            (element, cascade, list) = parsed
        } else if let schemaType {
            (element, cascade, list) = (schemaType.element, false, schemaType.isList)
        } else {
            (element, cascade, list) = (.string, false, false)
        }
        if list {
            let items: [String]
            if text.hasPrefix("["), let array = try? JSONDecoder().decode([WebServicesValue].self, from: Data(text.utf8)) {
                items = array.map(\.argumentText)
            } else {
                items = text.isEmpty ? [] : text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: .whitespaces) }
            }
            return .list(try items.map { try scalar($0, element, cascade: cascade, container: container, zoneName: zoneName) })
        }
        return try scalar(text, element, cascade: cascade, container: container, zoneName: zoneName)
    }

    private func scalar(_ text: String, _ element: FieldType.Element, cascade: Bool, container: Container, zoneName: String) throws -> FieldValue {
        func bad(_ expected: String) -> CLIError {
            CLIError.corrupt("field \(name): \"\(text)\" is not \(expected)")
        }
        switch element {
        case .string: return .string(text)
        case .int64:
            guard let number = Int64(text) else { throw bad("an integer") }
            return .int64(number)
        case .double:
            guard let number = Double(text), number.isFinite else { throw bad("a finite number") }
            return .double(number)
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw bad("true or false")
            }
        case .date:
            if let milliseconds = ISO8601Milliseconds.parse(text) ?? Int64(text) { return .date(milliseconds) }
            throw bad("an ISO 8601 date (2024-05-01T12:00:00Z) or milliseconds")
        case .bytes:
            guard let data = Data(base64Encoded: text) else { throw bad("base64") }
            return .bytes([UInt8](data))
        case .reference:
            // NAME, or ZONE/NAME as `record get` takes it; a reference names a record of its own zone, so the
            // zone part is the record's (`Save` checks it): nothing of it may be dropped silently.
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty }) else { throw bad("a record name, or ZONE/NAME") }
            if parts.count == 2, parts[0] != zoneName {
                throw CLIError.corrupt("field \(name): \"\(text)\" names a record of zone \(parts[0]); a reference stays within its record's zone, \(zoneName)")
            }
            return .reference(RecordReference(recordName: parts[parts.count - 1], action: cascade ? .deleteSelf : .none))
        case .location:
            let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard (2...3).contains(parts.count), parts.allSatisfy({ $0 != nil }) else { throw bad("lat,lon[,alt]") }
            return .location(Location(latitude: parts[0]!, longitude: parts[1]!, altitude: parts.count == 3 ? parts[2] : nil))
        case .asset:
            return try library { try container.importAsset(fileAt: URL(fileURLWithPath: text)) }
        }
    }
}

/// `ZONE/NAME`, or `NAME` in the default zone.
struct RecordPath {
    var zoneID: Zone.ID
    var recordName: String

    init(parsing text: String) throws {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if parts.count == 2 {
            guard !parts[0].isEmpty, !parts[1].isEmpty, !parts[1].contains("/") else { throw CLIError.usage("\"\(text)\" is not ZONE/NAME (a record name holds no '/')") }
            zoneID = Zone.ID(zoneName: parts[0])
            recordName = parts[1]
        } else {
            guard !text.isEmpty else { throw CLIError.usage("a record needs a name (ZONE/NAME)") }
            zoneID = .default
            recordName = text
        }
    }

    var recordID: Record.ID { Record.ID(recordName: recordName, zoneID: zoneID) }

    /// The path with its zone as `database` resolves it (a shared zone by its name alone).
    func resolved(in database: Database) throws -> RecordPath {
        var path = self
        path.zoneID = try library { try database.resolveZoneID(zoneID) }
        return path
    }
}

extension WebServicesValue {
    /// A JSON array element as an argument's text: strings without quotes, numbers and booleans as written.
    var argumentText: String {
        switch self {
        case .string(let text): return text
        case .integer(let number): return String(number)
        case .number(let number): return String(number)
        case .bool(let flag): return String(flag)
        default: return text
        }
    }
}
