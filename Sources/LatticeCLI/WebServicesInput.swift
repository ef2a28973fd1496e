import Foundation
import Lattice

/// The CLI's JSON input, read into the library's CloudKit Web Services shapes
/// (`WebServicesRecord`, `WebServicesFilter`, `WebServicesSort`), with
/// messages that name what is wrong.
enum WebServicesInput {
    /// A record line of `record import`, in `zoneID`; an ASSETID value is a file to import.
    static func record(_ line: Data, zoneID: Zone.ID, container: Container) throws -> Record {
        // Most lines are read without JSONDecoder; what the fast reader leaves, and every error, is its.
        let shape: WebServicesRecord = try line.withUnsafeBytes { WebServicesRecord.fastDecoded($0) } ?? decode(line, what: "a record")
        return try library {
            try shape.record(in: zoneID) { path throws(LatticeError) in try container.importAsset(fileAt: URL(fileURLWithPath: path)) }
        }
    }

    /// `filterBy`: an array of filter dictionaries, ANDed.
    static func predicate(fromFilterBy text: String) throws -> QueryPredicate {
        try option("--where", text, as: [WebServicesFilter].self, shape: "filterBy must be a JSON array of {fieldName, comparator, fieldValue}") { filters throws(LatticeError) in
            try WebServicesFilter.predicate(filters)
        }
    }

    /// `sortBy`: an array of `{"fieldName","ascending"?,"relativeLocation"?}`.
    static func sorts(fromSortBy text: String) throws -> [QuerySort] {
        try option("--sort", text, as: [WebServicesSort].self, shape: "sortBy must be a JSON array of {fieldName, ascending?}") { sorts throws(LatticeError) in
            try sorts.map { sort throws(LatticeError) in try sort.sort() }
        }
    }

    /// An option's JSON, decoded and turned into what the query needs; either
    /// step's failure is a usage error (64) that names the option.
    private static func option<Shape: Decodable, Result>(
        _ name: String, _ text: String, as type: Shape.Type, shape: String, _ convert: (Shape) throws(LatticeError) -> Result
    ) throws -> Result {
        let decoded: Shape
        do {
            decoded = try decode(Data(text.utf8), what: String(shape.prefix { $0 != " " }))
        } catch let error as CLIError {
            throw CLIError.usage("\(name): \(shape): \(error.message)")
        }
        do {
            return try convert(decoded)
        } catch {
            throw CLIError.usage("\(name): \(error.message)")
        }
    }

    /// Decodes JSON into a shape; what does not fit says which key and why.
    static func decode<Shape: Decodable>(_ data: Data, what: String) throws -> Shape {
        do {
            return try JSONDecoder().decode(Shape.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw CLIError.corrupt("\(what): missing \"\(path(context.codingPath + [key]))\"")
        } catch let DecodingError.typeMismatch(type, context), let DecodingError.valueNotFound(type, context) {
            throw CLIError.corrupt("\(what): \"\(path(context.codingPath))\" must be \(expected(type))")
        } catch let DecodingError.dataCorrupted(context) {
            throw CLIError.corrupt(context.codingPath.isEmpty ? "not valid JSON" : "\(what): \"\(path(context.codingPath))\" is not valid")
        } catch {
            throw CLIError.corrupt("not valid JSON")
        }
    }

    /// What a JSON value of this Swift type looks like, for people.
    private static func expected(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: return "true or false"
        case is String.Type: return "a string"
        case is Double.Type, is Int.Type, is Int64.Type, is UInt64.Type: return "a number"
        case is [Any].Type: return "an array"
        default: return type is any Collection.Type ? "an array or object" : "a JSON object"
        }
    }

    private static func path(_ keys: [CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
