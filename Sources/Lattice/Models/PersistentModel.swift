@_spi(Tools) import LatticeCore

/// A type whose objects are stored as records: what `@Model` makes a class.
/// Its requirements are written by the macro, not by hand.
public protocol PersistentModel: AnyObject, Hashable {
    /// The stored properties, as the macro lists them.
    static var _$properties: [ModelProperty<Self>] { get }
    /// Where the object keeps its identity, its context and its changed fields.
    var _$backing: ModelBacking { get }
    /// Makes an object whose properties hold their defaults.
    init(_$backing: ModelBacking)
    /// The record type; the class's name unless the class declares
    /// `static var recordType: String { "Note" }` (for a renamed class, or two
    /// versions of one model side by side).
    static var recordType: String { get }
}

extension PersistentModel {
    /// Objects are equal when they are the same object: a context holds one object per record.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    public static var recordType: String { String(describing: Self.self) }

    /// The object's identity once it is inserted (keyed objects: once saved).
    public var persistentModelID: PersistentIdentifier? { _$backing.id }

    /// The context the object is inserted in or was fetched by.
    public var modelContext: ModelContext? { _$backing.context }

    /// Deleted, in its context or by a save.
    public var isDeleted: Bool { _$backing.isDeleted }

    /// Changed since it was fetched or saved.
    public var hasChanges: Bool { !_$backing.changed.isEmpty || (_$backing.context != nil && !_$backing.isPersisted) }
}

/// An object's identity: its record type and record ID, the same on every device.
public struct PersistentIdentifier: Hashable, Sendable, CustomStringConvertible {
    public var recordType: String
    public var recordID: Record.ID

    public init(recordType: String, recordID: Record.ID) {
        self.recordType = recordType
        self.recordID = recordID
    }

    public var description: String { "\(recordType) \(recordID)" }
}
