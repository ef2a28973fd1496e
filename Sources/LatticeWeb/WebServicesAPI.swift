import Foundation
import Lattice
import NIOHTTP1

/// CloudKit Web Services' operations on one container's store: each takes a
/// request's database and body and returns its response, with the library's
/// semantics (as the CLI's `batch`, `query`, `changes` and `zone` have them).
struct WebServicesAPI: Sendable {
    let container: Container
    /// CloudKit caps a request at 400 operations or records.
    static let maximumOperations = 400

    /// Options every response that carries records honours.
    struct RecordShaping {
        var desiredKeys: [String]?
        var numbersAsStrings: Bool

        func shape(_ record: Record, container: Container) -> WebServicesRecord {
            var shaped = WebServicesRecord(record, assetURL: { container.fileURL(for: $0) })
            if let desiredKeys { shaped.fields = shaped.fields.filter { desiredKeys.contains($0.key) } }
            if numbersAsStrings { shaped.fields = shaped.fields.mapValues(Self.numbersAsStrings) }
            return shaped
        }

        /// INT64, DOUBLE and TIMESTAMP values (and their lists) as strings, as CloudKit writes them with `numbersAsStrings`.
        static func numbersAsStrings(_ field: WebServicesField) -> WebServicesField {
            func convert(_ value: WebServicesValue) -> WebServicesValue {
                switch value {
                case .integer(let number): return .string(String(number))
                case .number(let number): return .string(String(number))
                case .array(let items): return .array(items.map(convert))
                default: return value
                }
            }
            let numeric: Set<String> = ["INT64", "DOUBLE", "TIMESTAMP", "INT64_LIST", "DOUBLE_LIST", "TIMESTAMP_LIST"]
            guard let type = field.type, numeric.contains(type) else { return field }
            return WebServicesField(value: convert(field.value), type: type)
        }
    }

    func zone(_ shape: WebServicesZoneID?, in database: Database) throws -> Zone.ID {
        if let shape, shape.zoneName.utf8.contains(0) || shape.ownerName.utf8.contains(0) {
            throw WebError.badRequest("a zone's name or owner cannot hold a NUL character")
        }
        do { return try database.resolveZoneID(shape?.zoneID ?? .default) } catch { throw WebError.from(error) }
    }

    /// Runs a library call, its error as CloudKit's.
    func library<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw WebError.from(error) }
    }

    static func limit(_ requested: Int?, default defaultLimit: Int, maximum: Int) throws -> Int {
        guard let requested else { return defaultLimit }
        guard requested > 0 else { throw WebError.badRequest("resultsLimit must be at least 1") }
        return min(requested, maximum)
    }
}
