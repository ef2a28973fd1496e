@_spi(Tools) import LatticeCore

/// CloudKit's limits, checked before anything is written.
enum RecordValidation {
    static let maximumRecordBytes = Limits.maximumRecordBytes
    static let maximumNameLength = Limits.maximumNameLength

    static func checkIdentifier(_ name: String, what: String) throws(LatticeError) {
        guard Limits.isIdentifier(name) else {
            throw LatticeError(.invalidArguments, "\(what) \"\(name)\" is invalid: it must start with a letter and hold only letters, digits and _ (at most \(maximumNameLength))")
        }
    }

    static func checkRecordName(_ name: String) throws(LatticeError) {
        guard Limits.isRecordName(name) else {
            throw LatticeError(.invalidArguments, "record name \"\(name)\" is invalid: 1 to \(maximumNameLength) bytes, no '/' and no control characters")
        }
    }

    static func checkZoneName(_ name: String) throws(LatticeError) {
        guard Limits.isZoneName(name) else {
            throw LatticeError(.invalidArguments, "zone name \"\(name)\" is invalid: 1 to \(maximumNameLength) bytes, no '/', spaces or control characters")
        }
    }

    static func checkValue(_ value: FieldValue, field: String) throws(LatticeError) {
        if let problem = Limits.problem(with: value) {
            throw LatticeError(value.approximateSize > maximumRecordBytes ? .limitExceeded : .invalidArguments, "field \(field): \(problem)")
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
