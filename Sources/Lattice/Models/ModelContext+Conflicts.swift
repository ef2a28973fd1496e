@_spi(Tools) import LatticeCore

/// A losing value of a concurrent write to one property (DESIGN §2.5): the
/// same on every replica holding the object, until resolved.
public struct ModelConflict: Sendable, Hashable {
    /// The property's field name.
    public var property: String
    /// The value that lost; nil when the loser removed the value.
    public var losingValue: FieldValue?
    /// The value the object holds.
    public var winningValue: FieldValue?
    /// The device (replica) whose write lost.
    public var losingReplica: ReplicaID
}

extension ModelContext {
    /// The object's unresolved conflicts, latest loser first per property.
    public func conflicts<T: PersistentModel>(of model: T) throws(LatticeError) -> [ModelConflict] {
        guard let id = model._$backing.id, model._$backing.isPersisted else { return [] }
        return try database.conflicts(for: id.recordID).map {
            ModelConflict(property: $0.field, losingValue: $0.losingValue, winningValue: $0.winningValue, losingReplica: $0.losingStamp.replica)
        }
    }

    /// The values that lost to the one a property holds, as the property's type.
    public func losingValues<T: PersistentModel, V>(of model: T, for keyPath: KeyPath<T, V>) throws(LatticeError) -> [V] {
        let schema = ModelSchema.of(T.self)
        let property = try schema.property(for: keyPath)
        guard let access = property.attribute else {
            throw LatticeError(.invalidArguments, "\(property.name) is a relationship; read its conflicts with conflicts(of:)")
        }
        // Each losing value is read into a scratch object, as a fetch would read it.
        return try conflicts(of: model).filter { $0.property == property.name }.map { conflict in
            let scratch = T(_$backing: ModelBacking())
            scratch._$backing.isLoading = true
            access.write(scratch, conflict.losingValue, schema.prototype, valueStore)
            return scratch[keyPath: keyPath]
        }
    }

    /// Resolves the object's conflicts as they stand (the winners stay): a
    /// write that reaches every replica. To pick a losing value instead, set
    /// the property to it and save: a write to a property resolves its conflicts.
    public func resolveConflicts<T: PersistentModel>(of model: T) throws(LatticeError) {
        guard let id = model._$backing.id, model._$backing.isPersisted else { return }
        try database.clearConflicts(for: id.recordID)
    }
}
