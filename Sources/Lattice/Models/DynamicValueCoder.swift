import Foundation
@_spi(Tools) import LatticeCore

/// Stores the property types that need no conformance: enums with raw values
/// (as the raw value), Codable types (as JSON text with sorted keys, so equal
/// values are equal fields), and optionals and arrays of them. Chosen once per
/// property, when the schema is built.
struct DynamicValueCoder: @unchecked Sendable {
    let fieldType: FieldType
    /// Whether the stored order is the values' order (false for JSON text).
    var isOrdered = true
    let encode: (Any, ModelValueStore) throws(LatticeError) -> FieldValue?
    let decode: (FieldValue, ModelValueStore) -> Any?

    /// Nil for a type no field can hold.
    static func make(for type: Any.Type) -> DynamicValueCoder? {
        if let valueType = type as? any ModelValue.Type { return modelValue(valueType) }
        if let optional = type as? any OptionalModelProperty.Type {
            guard let inner = make(for: optional.wrappedType) else { return nil }
            return DynamicValueCoder(fieldType: inner.fieldType, isOrdered: inner.isOrdered, encode: { value, store throws(LatticeError) in
                guard let unwrapped = (value as! any OptionalModelProperty).unwrapped else { return nil }
                return try inner.encode(unwrapped, store)
            }, decode: { field, store in inner.decode(field, store).map { optional.wrap($0) } })
        }
        if let array = type as? any ArrayModelProperty.Type {
            guard let element = make(for: array.elementType), !element.fieldType.isList,
                  !(array.elementType is any OptionalModelProperty.Type) else { return nil }
            return DynamicValueCoder(fieldType: FieldType(element.fieldType.element, isList: true), isOrdered: element.isOrdered, encode: { value, store throws(LatticeError) in
                var items: [FieldValue] = []
                for item in (value as! any ArrayModelProperty).elements {
                    if let field = try element.encode(item, store) { items.append(field) }
                }
                return .list(items)
            }, decode: { field, store in
                guard case .list(let items) = field else { return nil }
                var elements: [Any] = []
                for item in items {
                    guard let decoded = element.decode(item, store) else { return nil }
                    elements.append(decoded)
                }
                return array.make(elements)
            })
        }
        if let raw = type as? any RawRepresentable.Type, let coder = rawValue(raw) { return coder }
        if let codable = type as? any Codable.Type { return json(codable) }
        return nil
    }

    private static func modelValue<V: ModelValue>(_ type: V.Type) -> DynamicValueCoder {
        DynamicValueCoder(fieldType: V.fieldType, encode: { value, store throws(LatticeError) in try (value as! V).fieldValue(in: store) },
                          decode: { field, store in V(fieldValue: field, in: store) })
    }

    private static func rawValue<R: RawRepresentable>(_ type: R.Type) -> DynamicValueCoder? {
        guard let raw = R.RawValue.self as? any ModelListElement.Type else { return nil }
        return rawValue(type, raw)
    }

    private static func rawValue<R: RawRepresentable, Raw: ModelListElement>(_ type: R.Type, _ raw: Raw.Type) -> DynamicValueCoder {
        DynamicValueCoder(fieldType: Raw.fieldType, encode: { value, store throws(LatticeError) in
            try ((value as! R).rawValue as! Raw).fieldValue(in: store)
        }, decode: { field, store in
            Raw(fieldValue: field, in: store).flatMap { $0 as? R.RawValue }.flatMap { R(rawValue: $0) }
        })
    }

    private static func json<C: Codable>(_ type: C.Type) -> DynamicValueCoder {
        DynamicValueCoder(fieldType: FieldType(.string), isOrdered: false, encode: { value, _ throws(LatticeError) in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            do {
                return .string(String(decoding: try encoder.encode(value as! C), as: UTF8.self))
            } catch {
                throw LatticeError(.invalidArguments, "cannot encode \(C.self) as JSON: \(error)")
            }
        }, decode: { field, _ in
            guard case .string(let text) = field else { return nil }
            return try? JSONDecoder().decode(C.self, from: Data(text.utf8))
        })
    }
}

/// Lets the coder see through `Optional` without knowing its wrapped type statically.
protocol OptionalModelProperty {
    static var wrappedType: Any.Type { get }
    var unwrapped: Any? { get }
    static func wrap(_ value: Any) -> Any
}

extension Optional: OptionalModelProperty {
    static var wrappedType: Any.Type { Wrapped.self }
    var unwrapped: Any? { self.map { $0 as Any } }
    static func wrap(_ value: Any) -> Any { Optional(value as! Wrapped) as Any }
}

/// Lets the coder see into `Array` without knowing its element type statically.
protocol ArrayModelProperty {
    static var elementType: Any.Type { get }
    var elements: [Any] { get }
    /// Nil when an element is not of the array's type.
    static func make(_ elements: [Any]) -> Any?
}

extension Array: ArrayModelProperty {
    static var elementType: Any.Type { Element.self }
    var elements: [Any] { map { $0 as Any } }
    static func make(_ elements: [Any]) -> Any? {
        var typed: [Element] = []
        typed.reserveCapacity(elements.count)
        for element in elements {
            guard let element = element as? Element else { return nil }
            typed.append(element)
        }
        return typed
    }
}
