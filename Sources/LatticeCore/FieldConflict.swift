/// A losing value of a concurrent write to one field, kept for the app to resolve.
public struct FieldConflict: Hashable, Sendable {
    /// The name of the record whose field is in conflict.
    public var recordName: String
    /// The conflicting field's name in that record.
    public var field: String
    /// The losing value; nil when the loser was a removal.
    public var losingValue: FieldValue?
    /// The losing write's stamp: when and by which replica it was made.
    public var losingStamp: Stamp
    /// The value the field shows; nil when the winning write was a removal.
    public var winningValue: FieldValue?
    /// The winning write's stamp, larger than `losingStamp`.
    public var winningStamp: Stamp

    /// A conflict as `RecordState.conflicts` lists it.
    public init(recordName: String, field: String, losingValue: FieldValue?, losingStamp: Stamp, winningValue: FieldValue?, winningStamp: Stamp) {
        self.recordName = recordName
        self.field = field
        self.losingValue = losingValue
        self.losingStamp = losingStamp
        self.winningValue = winningValue
        self.winningStamp = winningStamp
    }
}

extension RecordState {
    /// The unresolved conflicts of the record's fields, by field name, latest loser first.
    public var conflicts: [FieldConflict] {
        fields.flatMap { register in
            register.losers.map { loser in
                FieldConflict(recordName: recordName, field: register.name, losingValue: loser.value, losingStamp: loser.stamp,
                              winningValue: register.value, winningStamp: register.stamp)
            }
        }
    }

    /// Whether any field holds an unresolved conflict: cheaper than `conflicts.isEmpty`.
    public var hasConflicts: Bool { fields.contains { $0.hasLosers } }
}
