/// What a replica keeps of a tombstone it collected: the deleted
/// incarnation's causal length and the tombstone's vector.
///
/// That is all a merge needs of a tombstone: a state of an incarnation up to
/// `causalLength` loses to it outright (only its vector joins in), and a newer
/// incarnation wins outright with the vectors joined. Keeping both makes a
/// collected tombstone merge exactly as the tombstone would have, so a copy
/// of the record from a bundle, a restored backup or a late delivery can
/// never bring a deleted record back, and replicas that collected at
/// different moments still converge to the same bytes.
public struct RecordResidue: Hashable, Sendable {
    public var causalLength: UInt64
    public var vector: VersionVector

    public init(causalLength: UInt64, vector: VersionVector) {
        self.causalLength = causalLength
        self.vector = vector
    }

    /// The residue of a tombstone.
    public init(of tombstone: RecordState) {
        self.init(causalLength: tombstone.causalLength, vector: tombstone.vector)
    }

    /// Whether a state of this record arriving now is of a collected
    /// incarnation: the tombstone wins over it, so it is not stored.
    public func outlives(_ incoming: RecordState) -> Bool { causalLength >= incoming.causalLength }

    /// A tombstone standing for the residue, as a local write's previous state:
    /// a write after the delete starts the next incarnation from its vector.
    func tombstone(named name: String, type: String) -> RecordState {
        let none = Stamp(time: .zero, replica: ReplicaID(high: 0, low: 0))
        return RecordState(recordName: name, causalLength: causalLength, recordType: type, typeStamp: none, created: none, fields: [], vector: vector)
    }
}
