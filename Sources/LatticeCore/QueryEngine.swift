/// One sort key; `relativeLocation` sorts a location field by distance from it.
public struct QuerySort: Hashable, Sendable {
    /// The field or system field records are ordered by.
    public var key: QueryKey
    /// Whether smaller values (nearer ones, with `relativeLocation`) come first; records
    /// without a value come last either way.
    public var ascending: Bool
    /// For a location key: the point whose distance (in meters) orders the records; nil for none.
    public var relativeLocation: Location?

    /// A sort on `key`, ascending unless told otherwise.
    public init(_ key: QueryKey, ascending: Bool = true, relativeLocation: Location? = nil) {
        self.key = key
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}

/// Where a page ended: the last record's sort values and name. The next page
/// starts strictly after it, so records saved or deleted meanwhile neither
/// shift nor repeat the rest (keyset pagination, not an offset).
package struct QueryPosition: Hashable, Sendable {
    package var values: [FieldValue?]
    package var recordName: String

    package init(values: [FieldValue?], recordName: String) {
        self.values = values
        self.recordName = recordName
    }

    package func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        writer.string(recordName)
        writer.varint(values.count)
        for value in values { ValueCodec.encode(value, into: &writer) }
        return writer.bytes
    }

    package init(decoding bytes: [UInt8]) throws {
        var reader = BinaryReader(bytes)
        recordName = try reader.string()
        let count = try reader.count(below: 64, "sort key count")
        values = try (0..<count).map { _ in try ValueCodec.decode(from: &reader) }
        guard reader.isAtEnd else { throw BinaryDecodingError.malformed("trailing bytes in cursor", offset: reader.offset) }
    }
}

/// Runs a query over records: filter, order, page.
package struct QueryEngine: Sendable {
    package var recordType: String
    package var predicate: QueryPredicate
    package var sorts: [QuerySort]

    package init(recordType: String, predicate: QueryPredicate, sorts: [QuerySort]) {
        self.recordType = recordType
        self.predicate = predicate
        self.sorts = sorts
    }

    package func position(of record: RecordState) -> QueryPosition {
        QueryPosition(values: sorts.map { sortValue(record, $0) }, recordName: record.recordName)
    }

    /// One page of matches after `cursor`, at most `limit`, and where it ended
    /// when more may follow.
    package func page<Records: Sequence>(_ records: Records, after cursor: QueryPosition?, limit: Int) -> (records: [RecordState], next: QueryPosition?)
    where Records.Element == RecordState {
        var matches: [(QueryPosition, RecordState)] = []
        for record in records where record.isAlive && record.recordType == recordType && predicate.matches(record) {
            let position = position(of: record)
            if let cursor, compare(position, cursor) <= 0 { continue }
            matches.append((position, record))
        }
        matches.sort { compare($0.0, $1.0) < 0 }
        guard matches.count > limit else { return (matches.map(\.1), nil) }
        let page = matches.prefix(limit)
        return (page.map(\.1), page.last?.0)
    }

    /// Total order on positions: each sort key in turn (missing values last),
    /// then record name so equal keys still have one order on every replica.
    package func compare(_ a: QueryPosition, _ b: QueryPosition) -> Int {
        for index in sorts.indices {
            let order = compareKey(index, index < a.values.count ? a.values[index] : nil, index < b.values.count ? b.values[index] : nil)
            if order != 0 { return order }
        }
        // By the names apps know: a public record's stored name carries its creator (`PublicRecordName`).
        let order = ValueComparison.textOrder(PublicRecordName.plain(a.recordName), PublicRecordName.plain(b.recordName))
        return order != 0 ? order : ValueComparison.textOrder(a.recordName, b.recordName)
    }

    /// The order of two values of sort key `index`: missing values last,
    /// whichever the direction.
    package func compareKey(_ index: Int, _ x: FieldValue?, _ y: FieldValue?) -> Int {
        switch (x, y) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case (let x?, let y?):
            let order = ValueComparison.order(x, y) ?? Self.fallbackOrder(x, y)
            return sorts[index].ascending ? order : -order
        }
    }

    private func sortValue(_ record: RecordState, _ sort: QuerySort) -> FieldValue? {
        let value = record.queryValue(sort.key)
        if let origin = sort.relativeLocation, case .location(let location)? = value {
            return .double(location.distance(to: origin))
        }
        return value
    }

    /// Values of different types (a schema race) still get one order: by encoding.
    private static func fallbackOrder(_ x: FieldValue, _ y: FieldValue) -> Int {
        let a = ValueOrder.canonicalBytes(x)
        let b = ValueOrder.canonicalBytes(y)
        return a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
    }
}
