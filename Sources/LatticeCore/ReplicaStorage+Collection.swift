/// Tombstone collection (DESIGN §4): a tombstone goes once every device that
/// holds its zone has acknowledged a vector covering it.
///
/// Why that is safe: before a tombstone is first collected anywhere, every
/// device that acknowledged its vector had merged every write it covers, so
/// each of them holds the deletion (or a later incarnation); no honest
/// device can send an older state of the record after that. What can still
/// arrive — a bundle, a restored backup, a delivery late from before — meets
/// the residue (`RecordResidue`), which merges as the tombstone did.
extension ReplicaStorage {
    /// Collects the zone's tombstones whose vectors `acknowledged` dominates
    /// (the meet of what every device holding the zone acknowledged, this one
    /// included); returns their names.
    @discardableResult
    public func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] {
        var collected: [String] = []
        for tombstone in try tombstones(in: zone) where acknowledged.dominates(tombstone.vector) {
            try collect(tombstone, in: zone)
            collected.append(tombstone.recordName)
        }
        return collected
    }

    /// The record's causal length, its collected tombstone's if it has none.
    func causalLength(of name: String, in zone: ZoneKey) throws -> UInt64 {
        if let version = try recordVersion(named: name, in: zone) { return version.causalLength }
        return try residue(named: name, in: zone)?.causalLength ?? 0
    }
}
