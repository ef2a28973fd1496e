import Foundation

/// A JSON value as CloudKit Web Services dictionaries carry it: what a
/// field's `value` holds before its `type` says what it means.
public enum WebServicesValue: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    /// A number written without a fraction or exponent that fits 64 bits.
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([WebServicesValue])
    case object([String: WebServicesValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let flag = try? container.decode(Bool.self) { self = .bool(flag) }
        else if let integer = try? container.decode(Int64.self) { self = .integer(integer) }
        else if let number = try? container.decode(Double.self) { self = .number(number) }
        else if let text = try? container.decode(String.self) { self = .string(text) }
        else if let items = try? container.decode([WebServicesValue].self) { self = .array(items) }
        else { self = .object(try container.decode([String: WebServicesValue].self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let integer): try container.encode(integer)
        case .number(let number): try container.encode(number)
        case .string(let text): try container.encode(text)
        case .array(let items): try container.encode(items)
        case .object(let members): try container.encode(members)
        }
    }

    /// The number's value, integer or not.
    var double: Double? {
        switch self {
        case .integer(let integer): return Double(integer)
        case .number(let number): return number
        default: return nil
        }
    }

    subscript(key: String) -> WebServicesValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
}

extension WebServicesValue {
    /// A whole JSON text read fast, where the reader is sure `JSONDecoder`
    /// would read it the same (`WebServicesJSON`); nil otherwise: decode it
    /// with `JSONDecoder` then, whose errors say what is wrong. For servers
    /// that read many records a request (`lattice serve --http`).
    public static func fastParsed(_ bytes: UnsafeRawBufferPointer) -> WebServicesValue? { WebServicesJSON.value(bytes) }
}
