/// CloudKit's limits, and the name rules: checked on every local write, and
/// on every record and header a peer sends, so nothing enters a replica from
/// the network that it could not have written itself.
package enum Limits {
    /// A record's fields total at most this (CloudKit's 1 MB); larger data goes in an asset.
    package static let maximumRecordBytes = 1_000_000
    package static let maximumNameLength = 255
    /// Memberships a shared zone's change set may carry: one per writer, a few each.
    package static let maximumMembershipsPerChangeSet = 4096
    /// Indexed fields per record type: each is a column of the type's index
    /// table, and SQLite allows 2,000 columns.
    package static let maximumIndexedFieldsPerType = 100
    /// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in milliseconds.
    package static let dateRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999
    /// Causal lengths beyond this are refused: honest histories stay far below,
    /// and arithmetic on them (a delete adds one) must never overflow.
    package static let maximumCausalLength: UInt64 = 1 << 62

    /// Field names and record types: a letter, then letters, digits and `_`.
    package static func isIdentifier(_ name: String) -> Bool {
        var utf8 = name.utf8.makeIterator()
        guard let first = utf8.next(), isLetter(first), name.utf8.count <= maximumNameLength else { return false }
        while let byte = utf8.next() {
            guard isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") else { return false }
        }
        return true
    }

    /// Record names: 1 to 255 bytes, no `/`, no control characters.
    package static func isRecordName(_ name: String) -> Bool {
        isPrintableName(name, refusingSpaces: false)
    }

    /// Zone names: 1 to 255 bytes, no `/`, spaces or control characters.
    package static func isZoneName(_ name: String) -> Bool {
        isPrintableName(name, refusingSpaces: true)
    }

    /// A string or bytes value of this size fits in a record.
    @inlinable package static func accepts(byteCount: Int) -> Bool { byteCount <= maximumRecordBytes }
    @inlinable package static func accepts(date milliseconds: Int64) -> Bool { dateRange.contains(milliseconds) }
    package static func accepts(location: Location) -> Bool {
        (-90...90).contains(location.latitude) && (-180...180).contains(location.longitude) && (location.altitude?.isFinite ?? true)
    }
    package static func accepts(asset: AssetReference) -> Bool { asset.hash.count == 32 && asset.size >= 0 }

    /// Why a single value cannot be written, nil if it can (the record's total is the caller's to add up).
    package static func problem(with value: FieldValue) -> String? {
        switch value {
        case .string(let text) where !accepts(byteCount: text.utf8.count):
            return "\(text.utf8.count) bytes is more than a record may hold (\(maximumRecordBytes)) — put large data in an asset"
        case .bytes(let bytes) where !accepts(byteCount: bytes.count):
            return "\(bytes.count) bytes is more than a record may hold (\(maximumRecordBytes)) — put large data in an asset"
        case .double(let number) where !number.isFinite:
            return "\(number) is not a finite number"
        case .date(let milliseconds) where !accepts(date: milliseconds):
            return "dates must fall in the years 1 to 9999"
        case .location(let location) where !accepts(location: location):
            return location.altitude?.isFinite ?? true ? "latitude must be within ±90 and longitude within ±180" : "the altitude must be a finite number"
        case .reference(let reference):
            return isRecordName(reference.recordName) ? nil : "the referenced record name \"\(reference.recordName)\" is invalid"
        case .asset(let asset):
            return accepts(asset: asset) ? nil : "malformed asset reference"
        case .list(let items):
            guard let first = items.first else { return nil }
            for item in items {
                if case .list = item { return "lists cannot contain lists" }
                guard item.type == first.type else { return "a list holds one type; found \(first.type) and \(item.type)" }
                if let problem = problem(with: item) { return problem }
            }
            if value.approximateSize > maximumRecordBytes { return "the list is more than a record may hold (\(maximumRecordBytes) bytes)" }
            return nil
        default:
            return nil
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// Unicode's control characters are U+0000–U+001F and U+007F–U+009F; the last
    /// range is 0xC2 0x80–0x9F in UTF-8, which a byte scan can see.
    private static func isPrintableName(_ name: String, refusingSpaces: Bool) -> Bool {
        let count = name.utf8.count
        guard count > 0, count <= maximumNameLength else { return false }
        var previous: UInt8 = 0
        for byte in name.utf8 {
            if byte < 0x20 || byte == 0x7F || byte == UInt8(ascii: "/") || (refusingSpaces && byte == UInt8(ascii: " ")) { return false }
            if previous == 0xC2, (0x80...0x9F).contains(byte) { return false }
            previous = byte
        }
        return true
    }
}
