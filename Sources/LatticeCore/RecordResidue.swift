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
///
/// It also keeps the stamp of the delete that made the tombstone, and the
/// replica keeps that write's signed block while the residue stands: a
/// device back after the tombstone horizon deletes a record it holds live
/// only on a delete its writer signed (`takeCollected`), never on the word
/// of the device that tells it.
@_spi(Tools) public struct RecordResidue: Hashable, Sendable {
    /// The deleted incarnation's causal length (even): a state up to it loses to the residue.
    public var causalLength: UInt64
    /// The tombstone's vector: joined into any state the residue outlives.
    public var vector: VersionVector
    /// The tombstone's delete (nil in residues kept before deletes were: they prove nothing to another device).
    public var deletion: Stamp?

    /// A residue as kept; `deletion` nil for one kept before deletes were.
    public init(causalLength: UInt64, vector: VersionVector, deletion: Stamp? = nil) {
        self.causalLength = causalLength
        self.vector = vector
        self.deletion = deletion
    }

    /// The residue of a tombstone.
    public init(of tombstone: RecordState) {
        self.init(causalLength: tombstone.causalLength, vector: tombstone.vector, deletion: tombstone.deleted)
    }

    /// The digest the deleter signed for the delete of `name` this residue
    /// stands for (`WriteDigest`): a delete writes the causal length alone.
    public func deletionDigest(named name: String, in zone: ZoneKey) -> [UInt8]? {
        guard let deletion else { return nil }
        let none = Stamp(time: .zero, replica: ReplicaID(high: 0, low: 0))
        var tombstone = RecordState(recordName: name, causalLength: causalLength, recordType: "", typeStamp: none, created: none, fields: [], vector: VersionVector())
        tombstone.deleted = deletion
        return WriteDigest.record(tombstone, stamp: deletion, in: zone)
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
