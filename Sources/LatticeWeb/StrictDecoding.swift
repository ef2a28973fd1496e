import Foundation
import Lattice

/// Any key of a JSON object, to see which keys a request carries.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Refuses a dictionary with a key CloudKit does not define for it: a
    /// misspelt key would otherwise be ignored, and a request do less than asked.
    func requireKnownKeys(_ known: [String], in what: String) throws {
        let container = try container(keyedBy: AnyKey.self)
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !known.contains($0) }) {
            throw WebError.badRequest("unknown key \"\(unknown)\" in \(what); its keys are \(known.joined(separator: ", "))")
        }
    }
}

/// Reads a request body into its shape; malformed JSON, a missing key, a
/// wrong type or an unknown key is BAD_REQUEST naming where.
enum RequestBody {
    static func decode<Shape: Decodable>(_ shape: Shape.Type, from body: [UInt8], what: String) throws -> Shape {
        let data = body.isEmpty ? Data("{}".utf8) : Data(body)
        // JSONDecoder keeps a key's first value and proxies often its last: a key given twice is refused.
        if let repeated = DuplicateKeys.first(in: body) {
            throw WebError.badRequest("\(what): the key \"\(repeated)\" is given twice in one dictionary")
        }
        do {
            return try JSONDecoder().decode(Shape.self, from: data)
        } catch let error as WebError {
            throw error
        } catch let error as LatticeError {
            throw WebError(error)
        } catch let error as DecodingError {
            throw WebError.badRequest("\(what): \(describe(error))")
        } catch {
            throw WebError.badRequest("\(what): \(error)")
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "the body" : "\"" + codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") + "\""
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "not valid JSON" }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context): return "missing \(path(context.codingPath + [key]))"
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)) must be \(typeName(type))"
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)) must be \(typeName(type)), not null"
        @unknown default: return "\(error)"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type: return "an integer"
        case is Double.Type: return "a number"
        default:
            let name = "\(type)"
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "a dictionary" }
            return "a dictionary"
        }
    }
}

/// Finds a key given twice in one JSON object, scanning the text once
/// (strings and nesting followed, values not interpreted).
enum DuplicateKeys {
    static func first(in bytes: [UInt8]) -> String? {
        var stack: [(isObject: Bool, keys: Set<[UInt8]>, expectingKey: Bool)] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"):
                stack.append((true, [], true))
            case UInt8(ascii: "["):
                stack.append((false, [], false))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !stack.isEmpty { stack.removeLast() }
            case UInt8(ascii: ","):
                if let top = stack.indices.last, stack[top].isObject { stack[top].expectingKey = true }
            case UInt8(ascii: "\""):
                let start = index + 1
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { index += 1 }
                    index += 1
                }
                if let top = stack.indices.last, stack[top].isObject, stack[top].expectingKey {
                    let key = Array(bytes[start..<min(index, bytes.count)])
                    if stack[top].keys.contains(key) { return String(decoding: key, as: UTF8.self) }
                    stack[top].keys.insert(key)
                    stack[top].expectingKey = false
                }
            default:
                break
            }
            index += 1
        }
        return nil
    }
}
