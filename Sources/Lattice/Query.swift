import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

/// A query, as `CKQuery`: a record type, a predicate and sort descriptors.
public struct Query: Hashable, Sendable {
    public var recordType: String
    public var predicate: QueryPredicate
    public var sortDescriptors: [QuerySort]

    public init(recordType: String, predicate: QueryPredicate = .all, sortDescriptors: [QuerySort] = []) {
        self.recordType = recordType
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
    }

    /// Where a page of results ended, as `CKQueryOperation.Cursor`. Opaque; its
    /// `stringValue` round-trips through scripts.
    public struct Cursor: Hashable, Sendable {
        let query: Query
        let zoneID: Zone.ID
        let position: QueryPosition

        /// A printable form (base64url) that `init(stringValue:query:)` accepts.
        public var stringValue: String {
            var bytes = position.encoded()
            bytes.append(contentsOf: Array(query.fingerprint(in: zoneID).utf8))
            return Base64URL.encode(bytes)
        }

        /// Rebuilds a cursor printed by `stringValue` for the same query and zone.
        public init(stringValue: String, query: Query, zoneID: Zone.ID = .default) throws(LatticeError) {
            let fingerprint = Array(query.fingerprint(in: zoneID).utf8)
            guard let data = Base64URL.decode(stringValue), data.count > fingerprint.count,
                  Array(data.suffix(fingerprint.count)) == fingerprint,
                  let position = try? QueryPosition(decoding: Array(data.dropLast(fingerprint.count)))
            else {
                throw LatticeError(.invalidArguments, "the cursor is malformed or belongs to another query or zone")
            }
            self.init(query: query, zoneID: zoneID, position: position)
        }

        init(query: Query, zoneID: Zone.ID, position: QueryPosition) {
            self.query = query
            self.zoneID = zoneID
            self.position = position
        }
    }

    /// A short digest of what the query asks and where, so a cursor cannot
    /// be reused for another query or zone.
    func fingerprint(in zoneID: Zone.ID) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(recordType)|\(predicate)|\(sortDescriptors)|\(zoneID.zoneName)|\(zoneID.ownerName)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 36)
    }
}

extension Database {
    /// The default number of records per page, as CloudKit's maximum.
    public static let maximumResults = 100

    /// One page of records matching `query` in a zone, and the cursor to the next page.
    public func records(matching query: Query, inZoneWith zoneID: Zone.ID = .default, resultsLimit: Int = Database.maximumResults) throws(LatticeError) -> (matchResults: [Record], queryCursor: Query.Cursor?) {
        try page(query, zoneID: zoneID, after: nil, limit: resultsLimit)
    }

    /// The page after `cursor`. Records saved or deleted meanwhile are neither repeated nor skipped.
    public func records(continuingMatchFrom cursor: Query.Cursor, resultsLimit: Int = Database.maximumResults) throws(LatticeError) -> (matchResults: [Record], queryCursor: Query.Cursor?) {
        try page(cursor.query, zoneID: cursor.zoneID, after: cursor.position, limit: resultsLimit)
    }

    /// How a query is read, after running it: for `lattice query --explain`.
    public struct QueryExplanation: Sendable {
        /// The plan, in one line.
        public var plan: String
        /// Records read and decoded, against the number returned.
        public var recordsRead: Int
        public var recordsReturned: Int
        /// Rows the read went through: index entries a walk passed (most turned
        /// down by the filter's indexes without reading their records), else the records read.
        public var rowsRead: Int
        /// The ways of reading that were weighed, each with the rows it was
        /// estimated to read (`walk`, `candidates`, `scan`), the one taken first.
        public var estimates: [(way: String, rows: Int, atLeast: Bool)]
        /// Commands that would add an index this query lacks.
        public var suggestions: [String]
    }

    /// Runs `query` as `records(matching:)` would, and says how it was read.
    public func explain(_ query: Query, inZoneWith zoneID: Zone.ID = .default, after cursor: Query.Cursor? = nil, resultsLimit: Int = Database.maximumResults) throws(LatticeError) -> QueryExplanation {
        let result = try run(query, zoneID: zoneID, after: cursor?.position, limit: resultsLimit).result
        let suggestions = result.plan.suggestions.map { "lattice schema index \(query.recordType) \($0.field) --\($0.kind.names.joined(separator: " --"))" }
        return QueryExplanation(
            plan: result.strategy, recordsRead: result.recordsRead, recordsReturned: result.records.count, rowsRead: result.rowsRead,
            estimates: result.estimates.map { ($0.access.rawValue, $0.rows, $0.atLeast) }, suggestions: suggestions)
    }

    private func page(_ query: Query, zoneID: Zone.ID, after: QueryPosition?, limit: Int) throws(LatticeError) -> (matchResults: [Record], queryCursor: Query.Cursor?) {
        let (result, names) = try run(query, zoneID: zoneID, after: after, limit: limit)
        let records = result.records.indices.map { Record(state: result.records[$0], zoneID: zoneID, recordName: names?[$0]) }
        return (records, result.next.map { Query.Cursor(query: query, zoneID: zoneID, position: $0) })
    }

    /// A page, and in the public database the names apps know its records by (`StoreSnapshot.appRecordName`).
    private func run(_ query: Query, zoneID: Zone.ID, after: QueryPosition?, limit: Int) throws(LatticeError) -> (result: QueryPageResult, names: [String]?) {
        guard limit > 0 else { throw LatticeError(.invalidArguments, "resultsLimit must be at least 1, got \(limit)") }
        try RecordValidation.checkIdentifier(query.recordType, what: "record type")
        if let problem = query.predicate.validationError() { throw LatticeError(.invalidArguments, "invalid predicate: \(problem)") }
        let engine = QueryEngine(recordType: query.recordType, predicate: query.predicate, sorts: query.sortDescriptors)
        return try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(zoneID, in: snapshot)
                guard try Self.zoneExists(at: zone, in: snapshot) else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist") }
                let result = try snapshot.queryPage(engine, in: zone, after: after, limit: limit)
                guard zone.scope == .public else { return (result, nil) }
                return (result, try result.records.map { try snapshot.appRecordName(of: $0.recordName, in: zone) })
            }
        }
    }
}
