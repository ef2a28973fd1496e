import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// A model type as the runtime sees it: its record type, its properties by
/// field name and by key path, its key, and an object holding the defaults.
/// Built once per type; relationships are linked to the other side on first use.
final class ModelSchema: @unchecked Sendable {
    let type: any PersistentModel.Type
    let recordType: String
    let properties: [AnyModelProperty]
    let byField: [String: AnyModelProperty]
    let byKeyPath: [AnyKeyPath: AnyModelProperty]
    /// The `@Attribute(.unique)` properties, in declaration order.
    let key: [AnyModelProperty]
    /// An object made with `init(_$backing:)`: what an absent field reads as.
    let prototype: AnyObject
    /// Why the type cannot be stored, if it cannot.
    let problems: [String]
    /// The stored properties' names, and those a delete's history keeps (`.preserveValueOnDeletion`).
    let fieldNames: Set<String>
    let preservedNames: Set<String>
    private let lock = NSLock()
    private var links: [String: RelationshipLink] = [:]
    private var linkedRelationships: [RelationshipLink]?

    private init<T: PersistentModel>(_ type: T.Type) {
        self.type = type
        recordType = T.recordType
        properties = T._$properties.map(\.erased)
        byField = Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        byKeyPath = Dictionary(properties.map { ($0.keyPath, $0) }, uniquingKeysWith: { first, _ in first })
        key = properties.filter(\.unique)
        fieldNames = Set(properties.map(\.name))
        preservedNames = Set(properties.filter(\.preservesValueOnDeletion).map(\.name))
        prototype = T(_$backing: ModelBacking())
        var problems: [String] = []
        if !Limits.isIdentifier(recordType) { problems.append("the record type \(recordType) is not a valid name (letters, digits and _, starting with a letter)") }
        for property in properties {
            if !Limits.isIdentifier(property.name) { problems.append("field \(property.name) is not a valid name (letters, digits and _, starting with a letter)") }
            switch property.kind {
            case .unsupported(let reason): problems.append("\(property.name): \(reason)")
            case .attribute where property.options != nil: problems.append("\(property.name): @Relationship applies to properties that hold models")
            case .relationship(let access) where property.unique && access.isToMany: problems.append("\(property.name): a to-many relationship cannot be part of the key")
            default: break
            }
        }
        if properties.count != byField.count { problems.append("two properties share a field name") }
        self.problems = problems
    }

    private static let cacheLock = NSLock()
    nonisolated(unsafe) private static var cache: [ObjectIdentifier: ModelSchema] = [:]

    /// The schema of a model type, built on first use.
    static func of(_ type: any PersistentModel.Type) -> ModelSchema {
        let id = ObjectIdentifier(type)
        cacheLock.lock()
        if let schema = cache[id] { cacheLock.unlock(); return schema }
        cacheLock.unlock()
        // Built outside the lock: a prototype's initial values may touch other model types.
        let schema = build(type)
        cacheLock.lock()
        defer { cacheLock.unlock() }
        if let existing = cache[id] { return existing }
        cache[id] = schema
        return schema
    }

    private static func build<T: PersistentModel>(_ type: T.Type) -> ModelSchema { ModelSchema(type) }

    /// Throws invalidArguments when the type cannot be stored, or a relationship's
    /// declared inverse is not a relationship back to this type.
    func check() throws(LatticeError) {
        var problems = problems
        for link in relationships {
            guard let inverse = link.inverse else { continue }
            if inverse.relationship?.target != type {
                problems.append("\(link.property.name): its inverse \(link.target.recordType).\(inverse.name) is not a relationship to \(recordType)")
            }
        }
        guard problems.isEmpty else {
            throw LatticeError(.invalidArguments, "model \(recordType) cannot be stored: " + problems.joined(separator: "; "))
        }
    }

    /// The property a key path of a predicate or sort names.
    func property(for keyPath: AnyKeyPath) throws(LatticeError) -> AnyModelProperty {
        guard let property = byKeyPath[keyPath] else {
            throw LatticeError(.invalidArguments, "\(keyPath) is not a stored property of \(recordType)")
        }
        return property
    }

    // MARK: Relationships

    /// How a relationship meets its other side; nil for an attribute.
    func link(_ property: AnyModelProperty) -> RelationshipLink? {
        guard let access = property.relationship else { return nil }
        lock.lock()
        if let link = links[property.name] { lock.unlock(); return link }
        lock.unlock()
        let link = RelationshipLink(owner: self, property: property, access: access)
        lock.lock()
        defer { lock.unlock() }
        links[property.name] = link
        return link
    }

    /// Every relationship, linked; made once (every insert and save walks them).
    var relationships: [RelationshipLink] {
        lock.lock()
        if let linked = linkedRelationships { lock.unlock(); return linked }
        lock.unlock()
        let linked = properties.compactMap { link($0) }
        lock.lock()
        defer { lock.unlock() }
        linkedRelationships = linked
        return linked
    }

    // MARK: Keys

    /// The record name a keyed object's key gives: `Type:value,value`, readable
    /// when it fits, a hash of it when it does not. The same on every device,
    /// so concurrent creations of one key are one record.
    func recordName(forKeyOf object: AnyObject, store: ModelValueStore) throws(LatticeError) -> String {
        var parts: [String] = []
        for property in key {
            switch property.kind {
            case .attribute(let access):
                parts.append(try access.read(object, store).map(Self.render) ?? Self.nilPart)
            case .relationship:
                // The name the relationship holds, resolved or not: a related object that
                // was deleted or has not arrived does not change the key.
                switch (object as? any PersistentModel)?._$backing.relationTarget(property.name) {
                case .name(let name)?: parts.append(Self.escape(name))
                case .unnamed?:
                    throw LatticeError(.invalidArguments, "the key of a \(recordType) names an object that has no identity yet: insert and save it first")
                case nil: parts.append(Self.nilPart)
                }
            case .unsupported: break
            }
        }
        let name = "\(recordType):" + parts.joined(separator: ",")
        if name.utf8.count <= Limits.maximumNameLength && Limits.isRecordName(name) { return name }
        return "\(recordType):#" + Self.digest(name)
    }

    /// 32 hex digits of the text's SHA-256: a record name for a key too long to read.
    static func digest(_ text: String) -> String {
        let digest = (try? ContentHasher.sha256(Array(text.utf8))) ?? []
        return digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    private static func render(_ value: FieldValue) -> String {
        switch value {
        case .string(let text): return escape(text)
        case .int64(let number), .date(let number): return String(number)
        case .double(let number): return String(number)
        case .bool(let flag): return flag ? "true" : "false"
        case .bytes(let bytes): return bytes.map { String(format: "%02x", $0) }.joined()
        case .reference(let reference): return escape(reference.recordName)
        case .asset(let asset): return asset.hexHash
        case .location(let location): return "\(location.latitude);\(location.longitude)"
        case .list(let items): return items.map(render).joined(separator: "+")
        }
    }

    /// A nil key part: escaped text never holds a `%` that is not followed by two hex digits.
    static let nilPart = "%"

    /// Percent-escapes what separates parts (`,` `+` `%`) and what a record name cannot hold (`/`, control characters).
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            if scalar == "%" || scalar == "," || scalar == "+" || scalar == "/" || scalar.value < 0x20 || scalar.value == 0x7f {
                for byte in String(scalar).utf8 { escaped += String(format: "%%%02X", byte) }
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}

/// A relationship and its other side: where it is stored, and what deletes do.
struct RelationshipLink: @unchecked Sendable {
    /// Where a relationship lives in records.
    enum Storage {
        /// A to-one: a reference field of this side's record.
        case reference
        /// A to-many whose inverse is a to-one: the other side's references to this record.
        case inverseReference
        /// Any other to-many (many-to-many, or no inverse): one link record per
        /// pair, as Core Data's CloudKit mirroring stores them. Links are added
        /// and removed one by one, so concurrent edits of one relationship on
        /// several devices merge instead of overwriting each other, and each
        /// link references both ends with deleteSelf, so deleting either end
        /// removes its links on every replica.
        case links(LinkType)
    }

    let property: AnyModelProperty
    let access: RelationshipAccess
    let target: ModelSchema
    /// The property on the other side that mirrors this one.
    let inverse: AnyModelProperty?
    let storage: Storage
    let deleteRule: DeleteRule
    /// For a stored to-one: deleteSelf when the other side cascades, so every replica deletes it.
    let referenceAction: RecordReference.Action

    /// This side's record holds the relationship's field.
    var isStored: Bool { if case .reference = storage { return true } else { return false } }

    init(owner: ModelSchema, property: AnyModelProperty, access: RelationshipAccess) {
        self.property = property
        self.access = access
        let target = ModelSchema.of(access.target)
        self.target = target
        let declared = property.options?.inverse.flatMap { target.byKeyPath[$0] }
        let pointing = target.properties.first { candidate in
            guard let mirrored = candidate.options?.inverse, candidate.relationship?.target == owner.type else { return false }
            return mirrored == property.keyPath
        }
        let inverse = declared ?? pointing
        self.inverse = inverse
        deleteRule = property.options?.deleteRule ?? .nullify
        let inverseIsToMany = inverse?.relationship?.isToMany ?? false
        if !access.isToMany {
            storage = .reference
        } else if inverse != nil, !inverseIsToMany {
            storage = .inverseReference
        } else {
            // Both sides of a many-to-many name the same link type: the lesser side's.
            let mine = "\(owner.recordType)_\(property.name)"
            let theirs = inverse.map { "\(target.recordType)_\($0.name)" } ?? mine
            storage = .links(mine <= theirs ? LinkType(recordType: mine, ownField: "source", otherField: "target")
                                            : LinkType(recordType: theirs, ownField: "target", otherField: "source"))
        }
        let cascades = !access.isToMany && inverseIsToMany && inverse?.options?.deleteRule == .cascade
        referenceAction = cascades ? .deleteSelf : .none
    }
}

/// The record type of a to-many's links, and which of its two reference fields names this side.
struct LinkType: Hashable, Sendable {
    let recordType: String
    let ownField: String
    let otherField: String

    /// One record per pair, named by both ends: adding a pair twice, on two devices, is one record.
    func recordID(own: String, other: String, zoneID: Zone.ID) -> Record.ID {
        let (source, target) = ownField == "source" ? (own, other) : (other, own)
        let name = "\(recordType):\(ModelSchema.escape(source)),\(ModelSchema.escape(target))"
        if name.utf8.count <= Limits.maximumNameLength && Limits.isRecordName(name) { return Record.ID(recordName: name, zoneID: zoneID) }
        return Record.ID(recordName: "\(recordType):#" + ModelSchema.digest(name), zoneID: zoneID)
    }

    func record(own: String, other: String, zoneID: Zone.ID) -> Record {
        var record = Record(recordType: recordType, recordID: recordID(own: own, other: other, zoneID: zoneID))
        record[ownField] = .reference(RecordReference(recordName: own, action: .deleteSelf))
        record[otherField] = .reference(RecordReference(recordName: other, action: .deleteSelf))
        return record
    }
}
