import LatticeCore

/// CloudKit's limits, checked before anything is written.
enum RecordValidation {
    static let maximumRecordBytes = 1_000_000
    static let maximumNameLength = 255
    /// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, in milliseconds.
    static let dateRange: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    static func checkIdentifier(_ name: String, what: String) throws(LatticeError) {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII,
              name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }),
              name.utf8.count <= maximumNameLength
        else {
            throw LatticeError(.invalidArguments, "\(what) \"\(name)\" is invalid: it must start with a letter and hold only letters, digits and _ (at most \(maximumNameLength))")
        }
    }

    static func checkRecordName(_ name: String) throws(LatticeError) {
        guard !name.isEmpty, name.utf8.count <= maximumNameLength, !name.contains("/"), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw LatticeError(.invalidArguments, "record name \"\(name)\" is invalid: 1 to \(maximumNameLength) bytes, no '/' and no control characters")
        }
    }

    static func checkZoneName(_ name: String) throws(LatticeError) {
        guard !name.isEmpty, name.utf8.count <= maximumNameLength, !name.contains("/"), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0 == " " }) else {
            throw LatticeError(.invalidArguments, "zone name \"\(name)\" is invalid: 1 to \(maximumNameLength) bytes, no '/', spaces or control characters")
        }
    }

    static func checkValue(_ value: FieldValue, field: String) throws(LatticeError) {
        switch value {
        case .double(let number) where !number.isFinite:
            throw LatticeError(.invalidArguments, "field \(field): \(number) is not a finite number")
        case .date(let milliseconds) where !dateRange.contains(milliseconds):
            throw LatticeError(.invalidArguments, "field \(field): dates must fall in the years 1 to 9999")
        case .location(let location):
            guard (-90...90).contains(location.latitude), (-180...180).contains(location.longitude) else {
                throw LatticeError(.invalidArguments, "field \(field): latitude must be within ±90 and longitude within ±180")
            }
            guard location.altitude?.isFinite ?? true else {
                throw LatticeError(.invalidArguments, "field \(field): the altitude must be a finite number")
            }
        case .reference(let reference):
            try checkRecordName(reference.recordName)
        case .asset(let asset):
            guard asset.hash.count == 32, asset.size >= 0 else { throw LatticeError(.invalidArguments, "field \(field): malformed asset reference") }
        case .list(let items):
            guard let first = items.first else { return }
            for item in items {
                if case .list = item { throw LatticeError(.invalidArguments, "field \(field): lists cannot contain lists") }
                guard item.type == first.type else {
                    throw LatticeError(.invalidArguments, "field \(field): a list holds one type; found \(first.type) and \(item.type)")
                }
                try checkValue(item, field: field)
            }
        default:
            return
        }
    }

    /// Checks a record's fields against the limits and the schema.
    static func check(_ record: Record, schema: Schema) throws(LatticeError) {
        try checkIdentifier(record.recordType, what: "record type")
        try checkRecordName(record.recordID.recordName)
        var size = 0
        for (name, value) in record.fields {
            try checkIdentifier(name, what: "field name")
            try checkValue(value, field: name)
            size += value.approximateSize + name.utf8.count
        }
        do {
            try schema.check(recordType: record.recordType, values: record.fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        } catch {
            throw LatticeError(.invalidArguments, error.description)
        }
        guard size <= maximumRecordBytes else {
            throw LatticeError(.limitExceeded, "record \(record.recordID.recordName) holds \(size) bytes of fields; the limit is \(maximumRecordBytes) — put large data in an asset")
        }
    }
}
