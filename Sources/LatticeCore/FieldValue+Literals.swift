extension FieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension FieldValue {
    /// The text of a `.string` value; nil for any other case.
    public var stringValue: String? { if case .string(let value) = self { return value } else { return nil } }
    /// The integer of an `.int64` value; nil for any other case (a `.double` too).
    public var int64Value: Int64? { if case .int64(let value) = self { return value } else { return nil } }
    /// The number of a `.double` value; nil for any other case (an `.int64` too).
    public var doubleValue: Double? { if case .double(let value) = self { return value } else { return nil } }
    /// The flag of a `.bool` value; nil for any other case.
    public var boolValue: Bool? { if case .bool(let value) = self { return value } else { return nil } }
}
