import Foundation
@_spi(Tools) import LatticeCore

/// Where values that live beside the record (asset files) are kept.
public struct ModelValueStore: Sendable {
    /// Nil where no file can be stored (a predicate's operands).
    let container: Container?

    func importAsset(_ url: URL) throws(LatticeError) -> FieldValue {
        guard url.isFileURL else {
            throw LatticeError(.invalidArguments, "\(url) is not a file: a URL property holds a file, stored as an asset (keep web addresses in a String)")
        }
        guard let container else { throw LatticeError(.invalidArguments, "a file cannot be an operand of a query") }
        return try container.importAsset(fileAt: url)
    }

    func assetURL(_ asset: AssetReference) -> URL? { container?.fileURL(for: asset) }

    /// For values that never reach the store's files.
    static let none = ModelValueStore(container: nil)
}

/// A Swift type a model property can hold, stored as one field value.
///
/// Lattice provides it for String, the integer types, Double, Float, Bool,
/// Date (stored to the millisecond, as CloudKit), Data, URL (a file, stored as
/// an asset), Location, and optionals and arrays of these. Enums with raw
/// values and Codable structs need no conformance: `@Model` stores them as
/// their raw value and as JSON text.
public protocol ModelValue {
    /// The field's type; nil for one that is always absent.
    static var fieldType: FieldType { get }
    /// The stored form; nil means the field is absent.
    func fieldValue(in store: ModelValueStore) throws(LatticeError) -> FieldValue?
    /// The value a stored field holds; nil when it holds something else.
    init?(fieldValue: FieldValue, in store: ModelValueStore)
}

/// A value that can be an element of a list field (not an optional or a list).
public protocol ModelListElement: ModelValue {}

extension String: ModelListElement {
    public static var fieldType: FieldType { FieldType(.string) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .string(self) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .string(let text) = fieldValue else { return nil }
        self = text
    }
}

extension Bool: ModelListElement {
    public static var fieldType: FieldType { FieldType(.bool) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .bool(self) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .bool(let flag) = fieldValue else { return nil }
        self = flag
    }
}

/// Integers are stored as INT64; a stored value out of the property's range reads as absent.
public protocol ModelInteger: ModelListElement, FixedWidthInteger {}

extension ModelInteger {
    public static var fieldType: FieldType { FieldType(.int64) }
    public func fieldValue(in store: ModelValueStore) throws(LatticeError) -> FieldValue? {
        guard let value = Int64(exactly: self) else { throw LatticeError(.invalidArguments, "\(self) does not fit a 64-bit integer field") }
        return .int64(value)
    }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .int64(let value) = fieldValue, let exact = Self(exactly: value) else { return nil }
        self = exact
    }
}

extension Int: ModelInteger {}
extension Int64: ModelInteger {}
extension Int32: ModelInteger {}
extension Int16: ModelInteger {}
extension Int8: ModelInteger {}
extension UInt32: ModelInteger {}
extension UInt16: ModelInteger {}
extension UInt8: ModelInteger {}
extension UInt: ModelInteger {}
extension UInt64: ModelInteger {}

extension Double: ModelListElement {
    public static var fieldType: FieldType { FieldType(.double) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .double(self) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .double(let value) = fieldValue else { return nil }
        self = value
    }
}

extension Float: ModelListElement {
    public static var fieldType: FieldType { FieldType(.double) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .double(Double(self)) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .double(let value) = fieldValue else { return nil }
        self = Float(value)
    }
}

extension Date: ModelListElement {
    public static var fieldType: FieldType { FieldType(.date) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .date(Int64((timeIntervalSince1970 * 1000).rounded(.down))) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .date(let milliseconds) = fieldValue else { return nil }
        self = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Data: ModelListElement {
    public static var fieldType: FieldType { FieldType(.bytes) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .bytes([UInt8](self)) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .bytes(let bytes) = fieldValue else { return nil }
        self = Data(bytes)
    }
}

/// A file, stored as an asset: saving copies its content into the store; a
/// read gives the store's copy (absent until the content is on this device).
extension URL: ModelListElement {
    public static var fieldType: FieldType { FieldType(.asset) }
    public func fieldValue(in store: ModelValueStore) throws(LatticeError) -> FieldValue? { try store.importAsset(self) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .asset(let asset) = fieldValue, let url = store.assetURL(asset) else { return nil }
        self = url
    }
}

extension Location: ModelListElement {
    public static var fieldType: FieldType { FieldType(.location) }
    public func fieldValue(in store: ModelValueStore) -> FieldValue? { .location(self) }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .location(let location) = fieldValue else { return nil }
        self = location
    }
}

extension Optional: ModelValue where Wrapped: ModelValue {
    public static var fieldType: FieldType { Wrapped.fieldType }
    public func fieldValue(in store: ModelValueStore) throws(LatticeError) -> FieldValue? {
        guard let self else { return nil }
        return try self.fieldValue(in: store)
    }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard let value = Wrapped(fieldValue: fieldValue, in: store) else { return nil }
        self = .some(value)
    }
}

extension Array: ModelValue where Element: ModelListElement {
    public static var fieldType: FieldType { FieldType(Element.fieldType.element, isList: true) }
    public func fieldValue(in store: ModelValueStore) throws(LatticeError) -> FieldValue? {
        var items: [FieldValue] = []
        items.reserveCapacity(count)
        for element in self {
            guard let item = try element.fieldValue(in: store) else { continue }
            items.append(item)
        }
        return .list(items)
    }
    public init?(fieldValue: FieldValue, in store: ModelValueStore) {
        guard case .list(let items) = fieldValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(items.count)
        for item in items {
            guard let element = Element(fieldValue: item, in: store) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}
