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
    package func collectTombstones(in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] {
        try collect(try tombstones(in: zone), in: zone, acknowledged: acknowledged)
    }

    /// Collects those of the zone's `tombstones` (as `tombstones(in:)` read
    /// them in this transaction) whose vectors `acknowledged` dominates.
    package func collect(_ tombstones: [RecordState], in zone: ZoneKey, acknowledged: VersionVector) throws -> [String] {
        var collected: [String] = []
        for tombstone in tombstones where acknowledged.dominates(tombstone.vector) {
            try collect(tombstone, in: zone)
            collected.append(tombstone.recordName)
        }
        return collected
    }

    /// Records another device collected while this one was away past the
    /// tombstone horizon: each held here in an incarnation up to its
    /// residue's is deleted as it was there (its state merged with the
    /// tombstone the residue stands for, then collected); one held in a newer
    /// incarnation stays, as it would win over the tombstone. Returns how many
    /// records went.
    ///
    /// The teller's word alone changes only what this replica holds as
    /// deleted already (a tombstone of the same incarnation goes, a residue's
    /// vector joins). Anything else — a live record deleted, a residue where
    /// none was, a newer incarnation of one — needs the delete its writer
    /// signed: the residue names it, and one of `blocks` (or a block stored
    /// here) must sign exactly that delete, by a writer this replica accepts.
    /// What is not so proven is skipped, and nothing of it changes.
    package func takeCollected(_ records: [(name: String, residue: RecordResidue)], blocks: [WriteBlock] = [], in zone: ZoneKey) throws -> Int {
        guard try syncState(of: zone)?.zoneState.exists == true else { return 0 }
        var taken = 0
        var candidates = Set<String>()
        var proofs = DeletionProofs(blocks: blocks, zone: zone)
        for (name, told) in records {
            guard let held = try record(named: name, in: zone) else {
                // Not held: its residue still guards against a stale copy another device may bring.
                if let mine = try self.residue(named: name, in: zone), mine.causalLength >= told.causalLength {
                    // One kept before deletes were named takes a proven one, to prove it to the next device.
                    var deletion = mine.deletion
                    if deletion == nil, mine.causalLength == told.causalLength, try proofs.prove(told, named: name, storage: self) { deletion = told.deletion }
                    if mine.causalLength == told.causalLength, !mine.vector.dominates(told.vector) || deletion != mine.deletion {
                        try storeResidue(RecordResidue(causalLength: mine.causalLength, vector: mine.vector.joined(with: told.vector), deletion: deletion), named: name, in: zone)
                    }
                } else if try proofs.prove(told, named: name, storage: self) {
                    try storeResidue(told, named: name, in: zone)
                }
                continue
            }
            guard held.causalLength <= told.causalLength else { continue }
            let heldAsDeleted = !held.isAlive && held.causalLength == told.causalLength
            guard try heldAsDeleted || proofs.prove(told, named: name, storage: self) else { continue }
            // The peer's incarnation, not this record's next one: the record may have been created and
            // deleted again meanwhile, and a save here must start after every incarnation the others ended.
            let residue = told
            var tombstone = held
            if held.causalLength < residue.causalLength || held.isAlive {
                // Merged with the tombstone the residue stands for: its incarnation wins, vectors join.
                tombstone = Merge.merge(local: held, incoming: residue.tombstone(named: name, type: held.recordType)).state
                tombstone.deleted = residue.deletion
                try store(tombstone, previous: held, in: zone)
                candidates.formUnion(try cascadeSources(of: PublicRecordName.referenced(name, in: zone), in: zone))
            } else {
                tombstone.vector.join(residue.vector)
            }
            try collect(tombstone, in: zone)
            taken += 1
        }
        // The deletes' blocks stay with the residues that name them, to prove them to the next device.
        for block in proofs.used { try storeWriteBlock(block) }
        // What referenced them with deleteSelf goes too, as it went where they were deleted.
        return taken + (try cascade(from: candidates, in: zone).count)
    }

    /// The record's causal length, its collected tombstone's if it has none.
    func causalLength(of name: String, in zone: ZoneKey) throws -> UInt64 {
        if let version = try recordVersion(named: name, in: zone) { return version.causalLength }
        return try residue(named: name, in: zone)?.causalLength ?? 0
    }
}

/// The blocks a `collected` message brings to prove its deletes, each
/// checked once.
struct DeletionProofs {
    private var byReplica: [ReplicaID: [WriteBlock]]
    private let zone: ZoneKey
    private var verified: [WriteBlock.Key: Bool] = [:]
    private(set) var used: [WriteBlock] = []
    private var usedKeys = Set<WriteBlock.Key>()

    init(blocks: [WriteBlock], zone: ZoneKey) {
        byReplica = Dictionary(grouping: blocks.filter { $0.entries != nil && $0.zone == zone }, by: \.replica)
        self.zone = zone
    }

    /// Whether a block signs the delete `residue` names, for `name` in this
    /// zone, by a writer `storage` accepts writes from at that stamp.
    mutating func prove(_ residue: RecordResidue, named name: String, storage: some ReplicaStorage) throws -> Bool {
        guard let deletion = residue.deletion, let digest = residue.deletionDigest(named: name, in: zone),
              storage.refusal(ofWriter: deletion.replica, at: deletion.time) == nil else { return false }
        if try storage.writeBlock(of: deletion.replica, in: zone, covering: deletion.time)?.digest(at: deletion.time) == digest { return true }
        for block in byReplica[deletion.replica] ?? [] where block.digest(at: deletion.time) == digest {
            let key = block.key
            if verified[key] == nil { verified[key] = block.isSignatureValid }
            guard verified[key] == true else { continue }
            if usedKeys.insert(key).inserted { used.append(block) }
            return true
        }
        return false
    }
}
