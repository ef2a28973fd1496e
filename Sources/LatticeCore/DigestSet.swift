/// A range of digest keys: from `lower` (inclusive) to `upper` (exclusive;
/// nil for the end of the key space).
@_spi(Tools) public struct DigestRange: Hashable, Sendable {
    /// Where the range starts, inclusive; the empty key for the start of the key space.
    public var lower: [UInt8]
    /// Where the range ends, exclusive; nil for the end of the key space.
    public var upper: [UInt8]?

    /// Every key: from the empty key to the end of the key space.
    public static let all = DigestRange(lower: [], upper: nil)

    /// The keys from `lower` (inclusive) up to `upper` (exclusive; nil: no end).
    public init(lower: [UInt8], upper: [UInt8]?) {
        self.lower = lower
        self.upper = upper
    }

    /// Whether `key` falls in the range, keys compared as bytes.
    public func contains(_ key: [UInt8]) -> Bool {
        !digestKeyPrecedes(key, lower) && (upper.map { digestKeyPrecedes(key, $0) } ?? true)
    }
}

/// One part of a range cut by count: its upper bound and the sum of its items.
@_spi(Tools) public struct DigestPart: Hashable, Sendable {
    /// Where the part ends, exclusive; nil for the end of the key space.
    public var upper: [UInt8]?
    /// The sum of the part's item hashes, with their count.
    public var sum: DigestSum

    /// A part ending at `upper` (nil: the end of the key space) whose items sum to `sum`.
    public init(upper: [UInt8]?, sum: DigestSum) {
        self.upper = upper
        self.sum = sum
    }
}

/// Where a replica's digest items of a zone come from (a store, or memory).
@_spi(Tools) public protocol DigestSource {
    /// The sum of the zone's items in `range`.
    func digestSum(of zone: ZoneKey, in range: DigestRange) throws -> DigestSum
    /// The zone's items in `range`, in key order.
    func digestItems(of zone: ZoneKey, in range: DigestRange) throws -> [DigestItem]
    /// `range` cut into at most `parts` parts of about equal count (`DigestSplitter`).
    func digestParts(of zone: ZoneKey, in range: DigestRange, parts: Int) throws -> [DigestPart]
}

/// Cuts items met in key order into parts of about equal count, each bound
/// the shortest prefix of its part's first key that still follows the key
/// before it: bounds stay short, and both sides can sum their own items
/// between them.
package struct DigestSplitter {
    private let total: Int
    private let parts: Int
    private let range: DigestRange
    private var seen = 0
    private var previousKey: [UInt8]?
    private var current = DigestSum()
    package private(set) var result: [DigestPart] = []

    /// `total` items of `range` will come, cut into at most `parts` parts.
    package init(total: Int, parts: Int, range: DigestRange) {
        self.total = max(1, total)
        self.parts = max(1, min(parts, total))
        self.range = range
    }

    package mutating func add(key: [UInt8], hash: [UInt8]) {
        // The part this item falls in: items [i·total/parts, (i+1)·total/parts) make part i.
        if seen > 0, seen * parts / total != (seen - 1) * parts / total, let previousKey {
            result.append(DigestPart(upper: Self.separator(after: previousKey, upTo: key), sum: current))
            current = DigestSum()
        }
        current.add(hash)
        previousKey = key
        seen += 1
    }

    /// The parts, the last one reaching the range's upper bound.
    package mutating func finish() -> [DigestPart] {
        if current.count > 0 || result.isEmpty { result.append(DigestPart(upper: range.upper, sum: current)) }
        current = DigestSum()
        return result
    }

    /// The shortest prefix of `key` greater than `previous` (keys differ and `previous < key`).
    static func separator(after previous: [UInt8], upTo key: [UInt8]) -> [UInt8] {
        var length = 0
        while length < previous.count, length < key.count, previous[length] == key[length] { length += 1 }
        return Array(key.prefix(length + 1))
    }
}

/// A digest set held in memory, sorted by key: for tests, and replicas in memory.
package struct MemoryDigestSet: Sendable {
    package private(set) var items: [DigestItem]

    /// One item per key (the last given wins).
    package init(_ items: [DigestItem]) {
        var byKey: [[UInt8]: DigestItem] = [:]
        for item in items { byKey[item.key] = item }
        self.items = byKey.values.sorted { digestKeyPrecedes($0.key, $1.key) }
    }

    /// The zone state's item and every record's.
    package init(zone: ZoneState?, records: [RecordState]) throws {
        var items = try records.map { try DigestItem($0) }
        if let zone { items.append(try DigestItem(zone)) }
        self.init(items)
    }

    package func items(in range: DigestRange) -> ArraySlice<DigestItem> {
        let start = firstIndex(notBefore: range.lower)
        let end = range.upper.map { firstIndex(notBefore: $0) } ?? items.count
        return items[start..<max(start, end)]
    }

    private func firstIndex(notBefore key: [UInt8]) -> Int {
        var low = 0, high = items.count
        while low < high {
            let middle = (low + high) / 2
            if digestKeyPrecedes(items[middle].key, key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    package func sum(in range: DigestRange) -> DigestSum {
        var sum = DigestSum()
        for item in items(in: range) { sum.add(item.hash) }
        return sum
    }

    package func parts(in range: DigestRange, count: Int) -> [DigestPart] {
        let slice = items(in: range)
        var splitter = DigestSplitter(total: slice.count, parts: count, range: range)
        for item in slice { splitter.add(key: item.key, hash: item.hash) }
        return splitter.finish()
    }
}

/// Several zones' sets in memory, as a `DigestSource`.
package struct MemoryDigestSource: DigestSource, Sendable {
    package var zones: [ZoneKey: MemoryDigestSet]

    package init(_ zones: [ZoneKey: MemoryDigestSet]) { self.zones = zones }

    package func digestSum(of zone: ZoneKey, in range: DigestRange) -> DigestSum { zones[zone]?.sum(in: range) ?? DigestSum() }
    package func digestItems(of zone: ZoneKey, in range: DigestRange) -> [DigestItem] { Array(zones[zone]?.items(in: range) ?? []) }
    package func digestParts(of zone: ZoneKey, in range: DigestRange, parts: Int) -> [DigestPart] {
        zones[zone]?.parts(in: range, count: parts) ?? [DigestPart(upper: range.upper, sum: DigestSum())]
    }
}
