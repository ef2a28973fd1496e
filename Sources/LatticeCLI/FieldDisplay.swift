import Foundation
import Lattice

/// Field values for people: strings quoted and escaped, dates in ISO 8601.
enum FieldDisplay {
    /// A value for people: strings quoted, dates in ISO 8601.
    static func text(_ value: FieldValue) -> String {
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
        case .date(let milliseconds): return ISO8601Milliseconds.format(milliseconds)
        case .bytes(let bytes): return "bytes(\(Data(bytes).base64EncodedString()))"
        case .reference(let reference): return "ref(\(reference.recordName)\(reference.action == .deleteSelf ? ", cascade" : ""))"
        case .asset(let asset): return "asset(\(asset.hexHash.prefix(16))…, \(asset.size) bytes)"
        case .location(let location): return "location(\(location.latitude), \(location.longitude)\(location.altitude.map { ", \($0)" } ?? ""))"
        case .list(let items): return "[" + items.map(text).joined(separator: ", ") + "]"
        }
    }
}
