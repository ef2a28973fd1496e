import Foundation
@_spi(Tools) import LatticeCore

/// Version vectors as JSON, what a replica holds of each zone:
/// `{"vectors":[{"database":"private","zoneName":"Movies","ownerName":"…","vector":{"<replica hex>":<hlc>}}]}`.
/// One device writes its own (`lattice vector --json`), the other writes a
/// bundle of what that device lacks (`Container.writeBundle(to:zones:since:)`).
public struct VersionVectorFile: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var database: String
        public var zoneName: String
        public var ownerName: String?
        /// Exact unsigned integers: 1.5, true or 1e30 are refused, not rounded.
        public var vector: [String: UInt64]
    }

    public var vectors: [Entry]

    /// The file for these vectors.
    public init(_ vectors: [(ZoneKey, VersionVector)]) {
        self.vectors = vectors.map { key, vector in
            Entry(database: key.scope.description, zoneName: key.zoneID.zoneName, ownerName: key.zoneID.ownerName,
                  vector: Dictionary(uniqueKeysWithValues: vector.entries.map { ($0.replica.description, $0.time.rawValue) }))
        }
    }

    /// Reads a file written from `init(_:)`. Errors: `unknownItem` if it cannot
    /// be read, `invalidArguments`, saying where, if it is not such a file.
    public static func read(_ path: String) throws(LatticeError) -> [ZoneKey: VersionVector] {
        guard let data = FileManager.default.contents(atPath: path) else { throw LatticeError(.unknownItem, "cannot read vector file \(path)") }
        let file: VersionVectorFile
        do { file = try JSONDecoder().decode(VersionVectorFile.self, from: data) } catch {
            throw LatticeError(.invalidArguments, "\(path) is not a vector file (make one with `lattice vector --json`): \(describe(error))")
        }
        var vectors: [ZoneKey: VersionVector] = [:]
        for (index, entry) in file.vectors.enumerated() {
            guard let scope = DatabaseScope(name: entry.database) else {
                throw LatticeError(.invalidArguments, "\(path): vectors[\(index)] names an unknown database \"\(entry.database)\"")
            }
            var vector = VersionVector()
            for (hex, time) in entry.vector {
                guard let replica = ReplicaID(hex: hex) else {
                    throw LatticeError(.invalidArguments, "\(path): vectors[\(index)] has a malformed entry \"\(hex)\"")
                }
                vector.advance(replica, to: HLCTimestamp(rawValue: time))
            }
            vectors[ZoneKey(scope: scope, zoneID: ZoneID(zoneName: entry.zoneName, ownerName: entry.ownerName ?? ZoneID.defaultOwnerName))] = vector
        }
        return vectors
    }

    /// Where in the file decoding failed, in a line a person can act on.
    private static func describe(_ error: Error) -> String {
        guard let error = error as? Swift.DecodingError else { return "\(error)" }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? context.debugDescription : "at \(path): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
