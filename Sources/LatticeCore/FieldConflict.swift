/// A losing value of a concurrent write to one field, kept for the app to resolve.
public struct FieldConflict: Hashable, Sendable {
    public var recordName: String
    public var field: String
    /// The losing value; nil when the loser was a removal.
    public var losingValue: FieldValue?
    public var losingStamp: Stamp
    public var winningValue: FieldValue?
    public var winningStamp: Stamp

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

    public var hasConflicts: Bool { fields.contains { $0.hasLosers } }
}
