import Foundation
import LatticeCore
import LatticeCrypto

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
    private let lock = NSLock()
    private var links: [String: RelationshipLink] = [:]

    private init<T: PersistentModel>(_ type: T.Type) {
        self.type = type
        recordType = T.recordType
        properties = T._$properties.map(\.erased)
        byField = Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        byKeyPath = Dictionary(properties.map { ($0.keyPath, $0) }, uniquingKeysWith: { first, _ in first })
        key = properties.filter(\.unique)
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

    /// Throws invalidArguments when the type cannot be stored.
    func check() throws(LatticeError) {
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

    var relationships: [RelationshipLink] { properties.compactMap { link($0) } }

    // MARK: Keys

    /// The record name a keyed object's key gives: `Type:value,value`, readable
    /// when it fits, a hash of it when it does not. The same on every device,
    /// so concurrent creations of one key are one record.
    func recordName(forKeyOf object: AnyObject, store: ModelValueStore) throws(LatticeError) -> String {
        var parts: [String] = []
        for property in key {
            switch property.kind {
            case .attribute(let access):
                parts.append(try access.read(object, store).map(Self.render) ?? "")
            case .relationship(let access):
                let target = access.get(object).first
                guard let target = target.map({ ($0 as! any PersistentModel)._$backing }) else { parts.append(""); continue }
                guard let id = target.id else {
                    throw LatticeError(.invalidArguments, "the key of a \(recordType) names an object that has no identity yet: insert and save it first")
                }
                parts.append(Self.escape(id.recordID.recordName))
            case .unsupported: break
            }
        }
        let name = "\(recordType):" + parts.joined(separator: ",")
        if name.utf8.count <= Limits.maximumNameLength && Limits.isRecordName(name) { return name }
        let digest = (try? ContentHasher.sha256(Array(name.utf8))) ?? []
        return "\(recordType):#" + digest.prefix(16).map { String(format: "%02x", $0) }.joined()
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

    /// Percent-escapes what separates parts (`,` `+` `%`) and what a record name cannot hold (`/`, control characters).
    private static func escape(_ text: String) -> String {
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

/// A relationship and its other side: which side stores it, and what deletes do.
struct RelationshipLink: @unchecked Sendable {
    let property: AnyModelProperty
    let access: RelationshipAccess
    let target: ModelSchema
    /// The property on the other side that mirrors this one.
    let inverse: AnyModelProperty?
    /// This side's record holds the field (a to-one always; a to-many when it has no
    /// to-one inverse, and for many-to-many on one side only).
    let isStored: Bool
    let deleteRule: DeleteRule
    /// For a stored to-one: deleteSelf when the other side cascades, so every replica deletes it.
    let referenceAction: RecordReference.Action

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
            isStored = true
        } else if let inverse, !inverseIsToMany {
            isStored = false
        } else if let inverse {
            isStored = "\(owner.recordType).\(property.name)" < "\(target.recordType).\(inverse.name)"
        } else {
            isStored = true
        }
        let cascades = !access.isToMany && inverseIsToMany && inverse?.options?.deleteRule == .cascade
        referenceAction = cascades ? .deleteSelf : .none
    }
}
