import Foundation
import Lattice

/// CloudKit Web Services dictionaries: the CLI's JSON input and output.
///
/// Record: `{"recordName","recordType","recordChangeTag","zoneID":{"zoneName","ownerName"},
/// "fields":{"title":{"value":"Toy Story","type":"STRING"}},"created":{"timestamp","deviceID"},
/// "modified":{…}}`. Types: STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP (ms), BYTES
/// (base64), REFERENCE (`{"recordName","action":"NONE"|"DELETE_SELF"}`), LOCATION
/// (`{"latitude","longitude","altitude"?}`), ASSETID (`{"fileChecksum","size","downloadURL"?}`),
/// and `<TYPE>_LIST` with an array value.
public enum WebServicesJSON {
    // MARK: Output

    static func record(_ record: Record, container: Container? = nil) -> [String: Any] {
        var fields: [String: Any] = [:]
        for key in record.allKeys() { fields[key] = field(record[key]!, container: container) }
        var object: [String: Any] = [
            "recordName": record.recordID.recordName,
            "recordType": record.recordType,
            "zoneID": zone(record.recordID.zoneID),
            "fields": fields,
        ]
        if let tag = record.recordChangeTag { object["recordChangeTag"] = tag }
        if let created = record.creationDate {
            object["created"] = ["timestamp": created, "deviceID": record.creatorReplica?.description ?? ""]
        }
        if let modified = record.modificationDate {
            object["modified"] = ["timestamp": modified, "deviceID": record.lastModifierReplica?.description ?? ""]
        }
        return object
    }

    static func zone(_ zoneID: Zone.ID) -> [String: Any] {
        ["zoneName": zoneID.zoneName, "ownerName": zoneID.ownerName]
    }

    static func field(_ value: FieldValue, container: Container? = nil) -> [String: Any] {
        ["value": jsonValue(value, container: container), "type": value.type.description]
    }

    static func jsonValue(_ value: FieldValue, container: Container? = nil) -> Any {
        switch value {
        case .string(let text): return text
        case .int64(let number): return number
        case .double(let number): return number
        case .bool(let flag): return flag
        case .date(let milliseconds): return milliseconds
        case .bytes(let bytes): return Data(bytes).base64EncodedString()
        case .reference(let reference):
            return ["recordName": reference.recordName, "action": reference.action == .deleteSelf ? "DELETE_SELF" : "NONE"]
        case .asset(let asset):
            var object: [String: Any] = ["fileChecksum": asset.hexHash, "size": asset.size]
            if let url = container?.fileURL(for: asset) { object["downloadURL"] = url.absoluteString }
            return object
        case .location(let location):
            var object: [String: Any] = ["latitude": location.latitude, "longitude": location.longitude]
            if let altitude = location.altitude { object["altitude"] = altitude }
            return object
        case .list(let items): return items.map { jsonValue($0, container: container) }
        }
    }

    /// A value for people: strings quoted, dates in ISO 8601.
    static func displayValue(_ value: FieldValue) -> String {
        switch value {
        case .string(let text):
            // Quoted and escaped, so quotes, newlines and control characters stay visible.
            var escaped = ""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case "\n": escaped += "\\n"
                case "\t": escaped += "\\t"
                case "\r": escaped += "\\r"
                default:
                    if scalar.properties.generalCategory == .control {
                        escaped += "\\u{\(String(scalar.value, radix: 16))}"
                    } else {
                        escaped.unicodeScalars.append(scalar)
                    }
                }
            }
            return "\"\(escaped)\""
        case .int64(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return String(flag)
        case .date(let milliseconds): return ISO8601.format(milliseconds)
        case .bytes(let bytes): return "bytes(\(Data(bytes).base64EncodedString()))"
        case .reference(let reference): return "ref(\(reference.recordName)\(reference.action == .deleteSelf ? ", cascade" : ""))"
        case .asset(let asset): return "asset(\(asset.hexHash.prefix(16))…, \(asset.size) bytes)"
        case .location(let location): return "location(\(location.latitude), \(location.longitude)\(location.altitude.map { ", \($0)" } ?? ""))"
        case .list(let items): return "[" + items.map(displayValue).joined(separator: ", ") + "]"
        }
    }

    // MARK: Input

    /// A record dictionary read from JSON (import), in `zoneID`.
    static func record(from object: Any, zoneID: Zone.ID, container: Container) throws -> Record {
        guard let dictionary = object as? [String: Any] else { throw CLIError.corrupt("a record must be a JSON object") }
        guard let name = dictionary["recordName"] as? String else { throw CLIError.corrupt("missing \"recordName\" (a string)") }
        guard let type = dictionary["recordType"] as? String else { throw CLIError.corrupt("missing \"recordType\" (a string)") }
        var record = Record(recordType: type, recordName: name, zoneID: zoneID)
        if let fields = dictionary["fields"] {
            guard let fields = fields as? [String: Any] else { throw CLIError.corrupt("\"fields\" must be an object") }
            for (key, field) in fields { record[key] = try value(from: field, field: key, container: container) }
        }
        return record
    }

    /// A `{"value", "type"}` field dictionary; without a type, the JSON type decides.
    static func value(from object: Any, field: String, container: Container?) throws -> FieldValue {
        guard let dictionary = object as? [String: Any], let raw = dictionary["value"] else {
            throw CLIError.corrupt("field \(field): expected {\"value\": …, \"type\": …}")
        }
        if let typeName = dictionary["type"] as? String {
            guard let type = FieldType(webServicesName: typeName.uppercased() == "BOOL" ? "BOOLEAN" : typeName.uppercased()) else {
                throw CLIError.corrupt("field \(field): unknown type \"\(typeName)\"")
            }
            return try value(raw, as: type, field: field, container: container)
        }
        return try inferredValue(raw, field: field)
    }

    static func value(_ raw: Any, as type: FieldType, field: String, container: Container?) throws -> FieldValue {
        if type.isList {
            guard let items = raw as? [Any] else { throw CLIError.corrupt("field \(field): \(type) needs an array") }
            return .list(try items.map { try value($0, as: FieldType(type.element), field: field, container: container) })
        }
        func bad() -> CLIError { CLIError.corrupt("field \(field): \(String(describing: raw)) is not a valid \(type)") }
        switch type.element {
        case .string:
            guard let text = raw as? String else { throw bad() }
            return .string(text)
        case .int64:
            guard let number = raw as? NSNumber, !isBool(number), let exact = exactInteger(number) else { throw bad() }
            return .int64(exact)
        case .double:
            guard let number = raw as? NSNumber, !isBool(number) else { throw bad() }
            return .double(number.doubleValue)
        case .bool:
            if let number = raw as? NSNumber, isBool(number) { return .bool(number.boolValue) }
            throw bad()
        case .date:
            if let number = raw as? NSNumber, !isBool(number) {
                guard let milliseconds = exactInteger(number) else { throw bad() }
                return .date(milliseconds)
            }
            if let text = raw as? String, let milliseconds = ISO8601.parse(text) { return .date(milliseconds) }
            throw bad()
        case .bytes:
            guard let text = raw as? String, let data = Data(base64Encoded: text) else { throw bad() }
            return .bytes([UInt8](data))
        case .reference:
            if let name = raw as? String { return .reference(RecordReference(recordName: name)) }
            guard let object = raw as? [String: Any], let name = object["recordName"] as? String else { throw bad() }
            let action = (object["action"] as? String)?.uppercased() == "DELETE_SELF" ? RecordReference.Action.deleteSelf : .none
            return .reference(RecordReference(recordName: name, action: action))
        case .location:
            guard let object = raw as? [String: Any], let latitude = (object["latitude"] as? NSNumber)?.doubleValue,
                  let longitude = (object["longitude"] as? NSNumber)?.doubleValue else { throw bad() }
            return .location(Location(latitude: latitude, longitude: longitude, altitude: (object["altitude"] as? NSNumber)?.doubleValue))
        case .asset:
            if let path = raw as? String, let container { return try library { try container.importAsset(fileAt: URL(fileURLWithPath: path)) } }
            throw CLIError.corrupt("field \(field): an ASSETID value is a file path to import")
        }
    }

    private static func inferredValue(_ raw: Any, field: String) throws -> FieldValue {
        if let text = raw as? String { return .string(text) }
        if let number = raw as? NSNumber {
            if isBool(number) { return .bool(number.boolValue) }
            if let exact = Int64(number.stringValue) { return .int64(exact) }
            return .double(number.doubleValue)
        }
        throw CLIError.corrupt("field \(field): give a \"type\" for this value")
    }

    /// The number as an Int64 only if it is one exactly: no rounding, no clamping.
    private static func exactInteger(_ number: NSNumber) -> Int64? {
        if let exact = Int64(number.stringValue) { return exact }
        let value = number.doubleValue
        // Doubles are exact integers only up to 2^53.
        guard value.rounded() == value, value.magnitude <= 9_007_199_254_740_992 else { return nil }
        return Int64(value)
    }

    private static func isBool(_ number: NSNumber) -> Bool {
        // JSONSerialization makes booleans NSNumbers of ObjC type 'c' (char).
        String(cString: number.objCType) == "c"
    }

    // MARK: Queries

    /// `filterBy`: an array of `{"fieldName","comparator","fieldValue":{"value","type"},"distance"?}`, all ANDed.
    static func predicate(fromFilterBy text: String) throws -> QueryPredicate {
        guard let data = text.data(using: .utf8), let array = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
            throw CLIError.usage("--where: filterBy must be a JSON array of filter dictionaries")
        }
        let conditions = try array.enumerated().map { index, item -> QueryPredicate in
            guard let filter = item as? [String: Any], let name = filter["fieldName"] as? String,
                  let comparatorName = filter["comparator"] as? String, let comparator = QueryComparator(rawValue: comparatorName.uppercased()),
                  let fieldValue = filter["fieldValue"]
            else { throw CLIError.usage("--where: filterBy[\(index)] needs fieldName, a known comparator and fieldValue") }
            let value = try Self.value(from: fieldValue, field: name, container: nil)
            return .condition(QueryCondition(QueryKey(name: name), comparator, value, distance: (filter["distance"] as? NSNumber)?.doubleValue))
        }
        return conditions.count == 1 ? conditions[0] : .and(conditions)
    }

    /// `sortBy`: an array of `{"fieldName","ascending"?,"relativeLocation"?}`.
    static func sorts(fromSortBy text: String) throws -> [QuerySort] {
        guard let data = text.data(using: .utf8), let array = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
            throw CLIError.usage("--sort: sortBy must be a JSON array")
        }
        return try array.map { item in
            guard let sort = item as? [String: Any], let name = sort["fieldName"] as? String else { throw CLIError.usage("--sort: each sortBy entry needs fieldName") }
            var location: Location?
            if let relative = sort["relativeLocation"] {
                guard case .location(let value)? = try? Self.value(from: ["value": relative, "type": "LOCATION"], field: name, container: nil) else {
                    throw CLIError.usage("--sort: relativeLocation of \(name) must be {\"latitude\": …, \"longitude\": …}")
                }
                location = value
            }
            var ascending = true
            if let given = sort["ascending"] {
                guard let flag = given as? Bool, !(given is String) else { throw CLIError.usage("--sort: ascending of \(name) must be true or false") }
                ascending = flag
            }
            return QuerySort(QueryKey(name: name), ascending: ascending, relativeLocation: location)
        }
    }
}

/// ISO 8601 dates with or without fractional seconds, as milliseconds.
enum ISO8601 {
    static func parse(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        return nil
    }

    static func format(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
