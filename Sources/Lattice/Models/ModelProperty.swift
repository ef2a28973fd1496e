@_spi(Tools) import LatticeCore

/// One stored property of a model, as `@Model` lists it: its field name, how
/// its values are stored, and whether it is part of the key or a relationship.
public struct ModelProperty<Root: PersistentModel>: @unchecked Sendable {
    let erased: AnyModelProperty

    /// A property of a type Lattice stores (String, Int, Date, URL, …).
    public static func property<V: ModelValue>(
        _ keyPath: ReferenceWritableKeyPath<Root, V>, name: String, unique: Bool = false, relationship: RelationshipOptions? = nil, preservesValueOnDeletion: Bool = false
    ) -> Self {
        let access = AttributeAccess(fieldType: V.fieldType, valueType: V.self, read: { object, store throws(LatticeError) in
            try (object as! Root)[keyPath: keyPath].fieldValue(in: store)
        }, encode: { value, store throws(LatticeError) in
            guard let value = value as? V else { throw LatticeError(.invalidArguments, "\(type(of: value)) is not a value of \(name) (\(V.self))") }
            return try value.fieldValue(in: store)
        }, write: { object, field, prototype, store in
            let value = field.flatMap { V(fieldValue: $0, in: store) } ?? (prototype as! Root)[keyPath: keyPath]
            (object as! Root)[keyPath: keyPath] = value
        })
        return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .attribute(access)))
    }

    /// A property of an enum with a raw value, a Codable type, or an optional or array of these.
    public static func property<V>(
        _ keyPath: ReferenceWritableKeyPath<Root, V>, name: String, unique: Bool = false, relationship: RelationshipOptions? = nil, preservesValueOnDeletion: Bool = false
    ) -> Self {
        if V.self is any PersistentModel.Type {
            return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .unsupported(
                "a to-one relationship is optional (`var \(name): \(V.self)? = nil`): the object it names may not have arrived yet")))
        }
        guard let coder = DynamicValueCoder.make(for: V.self) else {
            return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .unsupported(
                "\(V.self) cannot be stored: use a Lattice value type, an enum with a raw value, a Codable type, or an optional or array of these")))
        }
        let access = AttributeAccess(fieldType: coder.fieldType, valueType: V.self, isOrdered: coder.isOrdered, read: { object, store throws(LatticeError) in
            try coder.encode((object as! Root)[keyPath: keyPath], store)
        }, encode: { value, store throws(LatticeError) in
            guard let value = value as? V else { throw LatticeError(.invalidArguments, "\(type(of: value)) is not a value of \(name) (\(V.self))") }
            return try coder.encode(value, store)
        }, write: { object, field, prototype, store in
            let value = field.flatMap { coder.decode($0, store) as? V } ?? (prototype as! Root)[keyPath: keyPath]
            (object as! Root)[keyPath: keyPath] = value
        })
        return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .attribute(access)))
    }

    /// A to-one relationship: a reference to another model's record.
    public static func property<Target: PersistentModel>(
        _ keyPath: ReferenceWritableKeyPath<Root, Target?>, name: String, unique: Bool = false, relationship: RelationshipOptions? = nil, preservesValueOnDeletion: Bool = false
    ) -> Self {
        let access = RelationshipAccess(target: Target.self, isToMany: false, get: { object in
            (object as! Root)[keyPath: keyPath].map { [$0] } ?? []
        }, set: { object, related in
            (object as! Root)[keyPath: keyPath] = related.first.map { $0 as! Target }
        })
        return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .relationship(access)))
    }

    /// A to-many relationship: the objects whose inverse names this one, or a list of references.
    public static func property<Target: PersistentModel>(
        _ keyPath: ReferenceWritableKeyPath<Root, [Target]>, name: String, unique: Bool = false, relationship: RelationshipOptions? = nil, preservesValueOnDeletion: Bool = false
    ) -> Self {
        let access = RelationshipAccess(target: Target.self, isToMany: true, get: { object in
            (object as! Root)[keyPath: keyPath]
        }, set: { object, related in
            (object as! Root)[keyPath: keyPath] = related.map { $0 as! Target }
        })
        return Self(erased: AnyModelProperty(name: name, keyPath: keyPath, unique: unique, preservesValueOnDeletion: preservesValueOnDeletion, options: relationship, kind: .relationship(access)))
    }
}

/// How an attribute's value is read from and written to an object.
struct AttributeAccess: @unchecked Sendable {
    let fieldType: FieldType
    /// The property's Swift type.
    let valueType: Any.Type
    /// Whether comparing and sorting stored values follows the Swift values' order (not for JSON text).
    var isOrdered = true
    let read: (AnyObject, ModelValueStore) throws(LatticeError) -> FieldValue?
    /// The stored form of a value of the property's type (a predicate's operand).
    let encode: (Any, ModelValueStore) throws(LatticeError) -> FieldValue?
    /// Nil when the property is not a list or the elements are not of its element type.
    var encodeList: (([Any], ModelValueStore) throws(LatticeError) -> FieldValue?) {
        { elements, store throws(LatticeError) in
            var type = valueType
            if let optional = type as? any OptionalModelProperty.Type { type = optional.wrappedType }
            guard let arrayType = type as? any ArrayModelProperty.Type, let array = arrayType.make(elements) else { return nil }
            return try encode(array, store)
        }
    }
    /// Sets the decoded field, or the prototype's value when the field is absent or holds another type.
    let write: (AnyObject, FieldValue?, AnyObject, ModelValueStore) -> Void
}

/// How a relationship's objects are read and set (a to-one holds zero or one).
struct RelationshipAccess: @unchecked Sendable {
    let target: any PersistentModel.Type
    let isToMany: Bool
    let get: (AnyObject) -> [AnyObject]
    let set: (AnyObject, [AnyObject]) -> Void
}

/// A property without its root type, as the context works with it.
final class AnyModelProperty: @unchecked Sendable {
    enum Kind {
        case attribute(AttributeAccess)
        case relationship(RelationshipAccess)
        /// A type no field can hold; the schema refuses the model with this reason.
        case unsupported(String)
    }

    let name: String
    let keyPath: AnyKeyPath
    let unique: Bool
    /// `@Attribute(.preserveValueOnDeletion)`: a delete's history entry shows its last value.
    let preservesValueOnDeletion: Bool
    let options: RelationshipOptions?
    let kind: Kind

    init(name: String, keyPath: AnyKeyPath, unique: Bool, preservesValueOnDeletion: Bool = false, options: RelationshipOptions?, kind: Kind) {
        self.name = name
        self.keyPath = keyPath
        self.unique = unique
        self.preservesValueOnDeletion = preservesValueOnDeletion
        self.options = options
        self.kind = kind
    }

    var attribute: AttributeAccess? { if case .attribute(let access) = kind { return access } else { return nil } }
    var relationship: RelationshipAccess? { if case .relationship(let access) = kind { return access } else { return nil } }
}
