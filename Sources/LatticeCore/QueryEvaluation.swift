#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RecordState {
    /// The value a query key reads from this record.
    public func queryValue(_ key: QueryKey) -> FieldValue? {
        switch key {
        case .field(let name): return self[field: name]
        case .recordName: return .string(PublicRecordName.plain(recordName))
        case .creationDate: return .date(Int64(created.time.milliseconds))
        case .modificationDate: return .date(Int64(lastModified.time.milliseconds))
        case .allTokens: return nil
        }
    }
}

extension QueryPredicate {
    /// Whether a live record matches. Type mismatches never match.
    package func matches(_ record: RecordState) -> Bool {
        switch self {
        case .all: return true
        case .condition(let condition): return condition.matches(record)
        case .and(let parts): return parts.allSatisfy { $0.matches(record) }
        case .or(let parts): return parts.contains { $0.matches(record) }
        case .not(let inner): return !inner.matches(record)
        }
    }
}

extension QueryCondition {
    package func matches(_ record: RecordState) -> Bool {
        if key == .allTokens {
            let text = record.presentFields.compactMap { field -> String? in
                if case .string(let text) = field.value { return text }
                return nil
            }.joined(separator: " ")
            return tokensMatch(text)
        }
        guard let field = record.queryValue(key) else {
            // A missing field equals nothing, so the negative comparators hold.
            switch comparator {
            case .notEquals, .notIn, .notBeginsWith, .notListContains, .notListContainsAny, .notListContainsAll, .notListMemberBeginsWith:
                return true
            default:
                return false
            }
        }
        switch comparator {
        case .equals: return ValueComparison.equal(field, value)
        case .notEquals: return !ValueComparison.equal(field, value)
        case .lessThan: return ValueComparison.order(field, value).map { $0 < 0 } ?? false
        case .lessThanOrEquals: return ValueComparison.order(field, value).map { $0 <= 0 } ?? false
        case .greaterThan: return ValueComparison.order(field, value).map { $0 > 0 } ?? false
        case .greaterThanOrEquals: return ValueComparison.order(field, value).map { $0 >= 0 } ?? false
        case .near:
            guard case .location(let here) = field, case .location(let center) = value, let distance else { return false }
            return here.distance(to: center) <= distance
        case .containsAllTokens, .containsAnyTokens:
            guard case .string(let text) = field else { return false }
            return tokensMatch(text)
        case .in: return listItems(value).contains { ValueComparison.equal(field, $0) }
        case .notIn: return !listItems(value).contains { ValueComparison.equal(field, $0) }
        case .beginsWith: return beginsWith(field)
        case .notBeginsWith: return !beginsWith(field)
        case .listContains: return listItems(field).contains { ValueComparison.equal($0, value) }
        case .notListContains: return !listItems(field).contains { ValueComparison.equal($0, value) }
        case .listContainsAny: return containsAny(field)
        case .notListContainsAny: return !containsAny(field)
        case .listContainsAll: return containsAll(field)
        case .notListContainsAll: return !containsAll(field)
        case .listMemberBeginsWith: return listItems(field).contains(where: beginsWith)
        case .notListMemberBeginsWith: return !listItems(field).contains(where: beginsWith)
        }
    }

    private func listItems(_ value: FieldValue) -> [FieldValue] {
        if case .list(let items) = value { return items }
        return []
    }

    private func beginsWith(_ field: FieldValue) -> Bool {
        guard case .string(let text) = field, case .string(let prefix) = value else { return false }
        return text.utf8.starts(with: prefix.utf8)
    }

    private func containsAny(_ field: FieldValue) -> Bool {
        let wanted = listItems(value)
        return listItems(field).contains { item in wanted.contains { ValueComparison.equal(item, $0) } }
    }

    private func containsAll(_ field: FieldValue) -> Bool {
        let items = listItems(field)
        return listItems(value).allSatisfy { wanted in items.contains { ValueComparison.equal($0, wanted) } }
    }

    private func tokensMatch(_ text: String) -> Bool {
        guard case .string(let query) = value else { return false }
        // Tokens match by their bytes, as the token index does (a Set of
        // Strings would also match canonically equivalent spellings).
        let have = Set(Tokenizer.tokens(text).map { Array($0.utf8) })
        let wanted = Tokenizer.tokens(query).map { Array($0.utf8) }
        return comparator == .containsAllTokens ? wanted.allSatisfy(have.contains) : wanted.contains(where: have.contains)
    }
}

/// Splits text into lowercase words, as CloudKit's token searches do.
package enum Tokenizer {
    package static func tokens(_ text: String) -> [String] {
        text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }
}

/// Comparisons between field values: numbers compare across Int64 and Double,
/// dates with dates, strings with strings; other pairs are unordered.
package enum ValueComparison {
    package static func equal(_ a: FieldValue, _ b: FieldValue) -> Bool {
        if let order = order(a, b) { return order == 0 }
        switch (a, b) {
        case (.reference(let x), .reference(let y)): return textOrder(x.recordName, y.recordName) == 0
        case (.reference(let x), .string(let y)), (.string(let y), .reference(let x)): return textOrder(x.recordName, y) == 0
        default: return a == b
        }
    }

    /// -1, 0 or 1; nil when the two values have no order.
    package static func order(_ a: FieldValue, _ b: FieldValue) -> Int? {
        switch (a, b) {
        case (.int64(let x), .int64(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.double(let x), .double(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.int64(let x), .double(let y)): return compare(x, y)
        case (.double(let x), .int64(let y)): return -compare(y, x)
        case (.date(let x), .date(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.string(let x), .string(let y)): return textOrder(x, y)
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (!x ? -1 : 1)
        default: return nil
        }
    }

    private static func compare(_ x: Double, _ y: Double) -> Int { x < y ? -1 : (x == y ? 0 : 1) }

    /// An integer against a double exactly, as SQLite compares them (a
    /// conversion to Double would round integers past 2^53).
    private static func compare(_ x: Int64, _ y: Double) -> Int {
        let rounded = compare(Double(x), y)
        guard rounded == 0 else { return rounded }
        // Double(x) == y, so y is a whole number within one rounding step of x.
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        return x < Int64(y) ? -1 : (x == Int64(y) ? 0 : 1)
    }

    /// Text orders by its UTF-8 bytes (so by code point), as SQLite's indexes
    /// order it: an indexed query and a scan agree on every string.
    package static func textOrder(_ x: String, _ y: String) -> Int {
        var a = x
        var b = y
        return a.withUTF8 { p in
            b.withUTF8 { q in
                let common = min(p.count, q.count)
                if common > 0, let base = p.baseAddress, let other = q.baseAddress {
                    let order = memcmp(base, other, common)
                    if order != 0 { return order < 0 ? -1 : 1 }
                }
                return p.count < q.count ? -1 : (p.count == q.count ? 0 : 1)
            }
        }
    }
}
