/// Makes a class a model: its stored `var`s are the fields of a record type
/// named after the class, as SwiftData's `@Model`.
///
/// ```swift
/// @Model final class Movie {
///     @Attribute(.unique) var title: String = ""
///     var year: Int = 0
///     @Relationship(deleteRule: .cascade, inverse: \Review.movie) var reviews: [Review] = []
///     init(title: String, year: Int) { self.title = title; self.year = year }
/// }
/// ```
///
/// Every stored property needs a default value or an optional type, as
/// CloudKit-synced SwiftData models do: a record written by another version
/// of the app may lack a field, and reads as the default.
@attached(member, names: named(_$backing), named(init))
@attached(memberAttribute)
@attached(extension, conformances: PersistentModel, names: named(_$properties))
public macro Model() = #externalMacro(module: "LatticeMacros", type: "ModelMacro")

/// Options of `@Attribute`.
public enum AttributeOption: Sendable {
    /// Part of the model's key: the key names the record, so objects created
    /// with the same key on several devices become one record.
    case unique
    /// A delete's history entry keeps the property's last value
    /// (`DefaultHistoryDelete.tombstone`), as SwiftData's.
    case preserveValueOnDeletion
}

/// Marks a model property: `.unique` makes it part of the key; `originalName`
/// keeps the field name a property had before it was renamed.
@attached(peer)
public macro Attribute(_ options: AttributeOption..., originalName: String? = nil) = #externalMacro(module: "LatticeMacros", type: "MarkerMacro")

/// Marks a relationship: what deleting the object does to the related ones,
/// and the property on the other side that mirrors this one.
@attached(peer)
public macro Relationship(deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath? = nil) = #externalMacro(module: "LatticeMacros", type: "MarkerMacro")

/// A property of a model that is not stored (it needs a default value).
@attached(peer)
public macro Transient() = #externalMacro(module: "LatticeMacros", type: "MarkerMacro")

/// Added by `@Model` to each stored property; not written by hand.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_))
public macro _PersistedProperty() = #externalMacro(module: "LatticeMacros", type: "PersistedPropertyMacro")

/// What deleting an object does to the objects a relationship holds, as SwiftData's `Schema.Relationship.DeleteRule`.
public enum DeleteRule: String, Sendable {
    /// Delete them too. When the other side holds the reference (a to-many
    /// with a to-one inverse), this is the reference's `deleteSelf`: every
    /// replica deletes them, whatever order the changes arrive in.
    case cascade
    /// Remove this object from their inverse relationship.
    case nullify
    /// Leave them; their references to this object read as absent.
    case noAction
    /// Refuse the delete while the relationship holds any object.
    case deny
}

/// The arguments of `@Relationship`, as the macro passes them on.
public struct RelationshipOptions: @unchecked Sendable {
    public var deleteRule: DeleteRule
    /// The property on the other side (`\Review.movie`); key paths are immutable.
    public var inverse: AnyKeyPath?

    public init(deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath? = nil) {
        self.deleteRule = deleteRule
        self.inverse = inverse
    }
}
