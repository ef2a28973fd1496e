/// What applying a change set did.
public struct ApplySummary: Hashable, Sendable {
    /// The change set's zone; nil in a total over several (`add` keeps none).
    public var zone: ZoneKey?
    /// How many change sets were read (a bundle holds one per zone).
    public var changeSets = 0
    /// Records the change sets held, deferred, refused and stale ones included.
    public var recordsReceived = 0
    /// Records whose state changed, cascade deletes included.
    public var recordsChanged = 0
    /// Losing writes the change set added to the records' conflicts.
    public var conflicts = 0
    /// Records refused because their stamps were too far in the future.
    public var recordsDeferred = 0
    /// Whether the whole change set was refused: it moves the zone to a state
    /// stamped too far in the future (a deletion or re-creation).
    public var zoneDeferred = false
    /// Whether the zone's vector advanced to the sender's.
    public var claimTaken = false
    /// Whether the whole change set was for an older incarnation of the zone.
    public var zoneIncarnationStale = false
    /// Records refused because a write they bring was not their writer's to
    /// make (`WriteRights`): skipped, and the stream comes again later.
    public var recordsRefused = 0
    /// Why the first of them was.
    public var refusal: String?
    /// Records a revocation the change set brought voided here, in part or whole
    /// (`settleRevocations`): peers' versions of them must stream again.
    public var recordsVoided = 0
    /// The change set was of a zone this replica does not replicate (selective sync): nothing of it was kept.
    public var zoneNotReplicated = false

    /// A summary of nothing: every count zero, every flag false.
    public init() {}

    /// Adds `other`'s counts to these; flags are or-ed, and the first refusal is kept.
    public mutating func add(_ other: ApplySummary) {
        changeSets += other.changeSets
        recordsReceived += other.recordsReceived
        recordsChanged += other.recordsChanged
        conflicts += other.conflicts
        recordsDeferred += other.recordsDeferred
        zoneDeferred = zoneDeferred || other.zoneDeferred
        claimTaken = claimTaken || other.claimTaken
        zoneIncarnationStale = zoneIncarnationStale || other.zoneIncarnationStale
        recordsRefused += other.recordsRefused
        refusal = refusal ?? other.refusal
        recordsVoided += other.recordsVoided
        zoneNotReplicated = zoneNotReplicated || other.zoneNotReplicated
    }
}

extension ReplicaStorage {
    /// Applies every change set `source` holds (one per zone, as in a bundle),
    /// all within the caller's transaction.
    /// With `takingClaims` false, no change set advances a zone's vector (the
    /// caller knows this replica still lacks part of what the sender claims).
    /// With `takingSchema` false, the change sets' schemas are not merged (a
    /// stranger's: the schema is the container's, private record types too).
    package func applyChangeSets<Source: ByteSource>(from source: Source, takingClaims: Bool = true, takingSchema: Bool = true) throws -> ApplySummary {
        var reader = ChangeSetReader(source: source)
        var total = ApplySummary()
        while try reader.readHeader() != nil {
            total.add(try apply(&reader, takingClaim: takingClaims, takingSchema: takingSchema))
            reader = ChangeSetReader(source: reader.source)
        }
        return total
    }

    /// Applies the change set `reader` is positioned at (header already read):
    /// the one place where remote state enters a replica. Zone incarnations,
    /// the clock-skew bound, the merge, cascades and the vector claim are
    /// decided here for the store and for memory alike.
    ///
    /// The caller commits only if this returns: a truncated or corrupt change
    /// set throws before its end and must leave nothing behind. Nothing is
    /// written when the change set brings nothing new.
    package func apply<Source: ByteSource>(_ reader: inout ChangeSetReader<Source>, takingClaim: Bool = true, takingSchema: Bool = true) throws -> ApplySummary {
        guard let header = reader.header else { throw ChangeSetError.malformed("no header read") }
        let zone = header.zone
        var summary = ApplySummary()
        summary.zone = zone
        summary.changeSets = 1
        let wallClock = wallClockNow()
        let bound = clock
        let acceptable = { (time: HLCTimestamp) in bound.accepts(time, wallClock: wallClock) }

        guard try replicates(zone) else {
            // A zone this device does not replicate: none of it is kept (`lattice zone sync`).
            while try reader.nextRecord() != nil { summary.recordsReceived += 1 }
            summary.zoneNotReplicated = true
            return summary
        }
        if zone.scope == .shared {
            var memberships: [AccountMembership] = []
            for bytes in header.memberships {
                do { memberships.append(try AccountMembership.decodingOnce(bytes)) } catch { throw WriteProofError.malformed("a writer's membership of an account: \(error)") }
            }
            try takeMemberships(memberships)
        }
        let before = try syncState(of: zone)
        let check = signer != nil && checksWrites ? ProofCheck(storage: self, zone: zone, knowledge: before?.knowledge ?? VersionVector()) : nil
        // Its live records may lack the ghosts of writes its base covers (format 5): see `elisionBase`.
        if header.elidesCoveredGhosts {
            guard ChangeSetHeader.elides(in: zone, base: header.base) else {
                throw ChangeSetError.malformed("format 5 for a zone whose change sets keep every ghost")
            }
            check?.elisionBase = header.base
        }
        check?.header(header.zoneState)
        var sync = before ?? ZoneSyncState(zoneState: header.zoneState)
        let zoneState = before.map { $0.zoneState.merged(with: header.zoneState) } ?? header.zoneState
        if zoneState != before?.zoneState {
            if enforcesWriteRights, let refusal = WriteRights.zoneRefusal(header.zoneState, of: zone, share: try share(of: zone), accounts: accounts(of:)) { throw WriteProofError.forbidden(refusal) }
            guard acceptable(header.zoneState.stamp.time) else {
                // A deletion or re-creation from the future: all of it waits, none of it half-applies.
                while try reader.nextRecord() != nil { summary.recordsReceived += 1 }
                summary.recordsDeferred = summary.recordsReceived
                summary.zoneDeferred = true
                return summary
            }
            clock.observe(header.zoneState.stamp.time)
            check?.zoneChanged(to: header.zoneState)
            if let before, zoneState.causalLength > before.zoneState.causalLength { try removeAllRecords(in: zone, by: header.zoneState.stamp) }
            sync.zoneState = zoneState
            try setSyncState(sync, of: zone)
        }
        if takingSchema { try mergeSchema(header.schema.filter { acceptable($0.time) }) }

        let stale = header.zoneState.causalLength < zoneState.causalLength
        // Records after the share in this change set are judged by the share it brings.
        var share = try self.share(of: zone)
        let historiesBefore = share?.participants
        let removalsBefore = share?.removedDevices
        /// Records this change set stored before it brought a share change: not vouched for (see `settleRevocations`).
        var takenBeforeShare: Set<String>?
        var taken = Set<String>()
        var deferred = false
        var candidates = Set<String>()
        var arrived = Set<String>()
        // Records this replica dropped with writes of its own in them: a state it wrote since may claim
        // (by its vector) what it no longer holds, so a peer's state of them merges whatever the vectors say.
        let refetching = zone.scope == .shared ? try ownRefetchNames(in: zone) : []
        while let incoming = try reader.nextRecord() {
            summary.recordsReceived += 1
            let writes = try check?.received(incoming)
            if stale || !zoneState.exists { continue }
            let newest = incoming.vector.entries.lazy.map(\.time).max() ?? .zero
            guard acceptable(newest) else {
                summary.recordsDeferred += 1
                deferred = true
                continue
            }
            let name = incoming.recordName
            if zone.scope == .shared { arrived.insert(name) }
            let previous: RecordState?
            var residue: RecordResidue?
            if zone.scope == .public {
                // Which of two creators' states keeps a name does not follow causal length and
                // vector (`WriteRights.publicMerge`): a stored state whose version covers the
                // incoming one may still be the one to give way.
                previous = try record(named: name, in: zone)
            } else {
                switch try recordToMerge(named: name, in: zone, incoming: incoming) {
                case .covers:
                    guard refetching.contains(name), let state = try record(named: name, in: zone) else { continue }
                    previous = state
                case .absent:
                    previous = nil
                    residue = try self.residue(named: name, in: zone)
                case .state(let state): previous = state
                }
            }
            if let residue, residue.outlives(incoming) {
                // A state of a collected incarnation: the tombstone wins, only the vectors join (as `Merge` does).
                let vector = residue.vector.joined(with: incoming.vector)
                guard vector != residue.vector else { continue }
                if let check, let writes {
                    let before = residue.tombstone(named: name, type: incoming.recordType)
                    var after = before
                    after.vector = vector
                    check.changed(to: after, previous: before, incoming: incoming, writes: writes)
                }
                try storeResidue(RecordResidue(causalLength: residue.causalLength, vector: vector, deletion: residue.deletion), named: name, in: zone)
                sync.knowledge.join(incoming.vector)
                continue
            }
            // The incoming state is judged whole, whatever the merge keeps of it: a claim taken
            // with a state that showed another's writes would say those writes are held here.
            if let refusal = rightsRefusal(incoming, in: zone, share: share) {
                arrived.remove(name)
                summary.recordsRefused += 1
                summary.refusal = summary.refusal ?? refusal
                deferred = true
                continue
            }
            // The merge keeps rights: states of one creation, each its creator's alone, merge
            // into one that is; another creation is taken whole (judged above) or not at all.
            // A newer incarnation of a collected record merges with what is left of the tombstone.
            let outcome = try residue.map { Merge.merge(local: $0.tombstone(named: name, type: incoming.recordType), incoming: incoming) }
                ?? merge(incoming, into: previous, in: zone)
            guard outcome.changed else { continue }
            if let check, let writes { check.changed(to: outcome.state, previous: previous, incoming: incoming, writes: writes) }
            clock.observe(newest)
            sync.knowledge.join(incoming.vector)
            summary.recordsChanged += 1
            summary.conflicts += outcome.newConflicts
            try store(outcome.state, previous: previous, in: zone)
            if name == Share.recordName {
                share = Share.held(outcome.state, in: zone)
                if takenBeforeShare == nil { takenBeforeShare = taken }
            } else if zone.scope == .shared, takenBeforeShare == nil {
                taken.insert(name)
            }
            if outcome.state.causalLength != previous?.causalLength { candidates.formUnion(try cascadeSources(of: PublicRecordName.referenced(name, in: zone), in: zone)) }
            if outcome.state.isAlive, outcome.state.hasCascadeReferences { candidates.insert(name) }
        }
        summary.zoneIncarnationStale = stale
        let claiming = takingClaim && !stale && !deferred && header.top.entries.allSatisfy({ acceptable($0.time) })
        // Nothing above is committed until this holds: a refusal undoes the whole change set.
        try check?.finish(reader.proofs, claim: claiming && header.claimsTop ? header.top : nil)
        if claiming {
            summary.claimTaken = sync.applyClaim(of: header)
        }
        if sync != (try syncState(of: zone)) { try setSyncState(sync, of: zone) }
        summary.recordsChanged += try cascade(from: candidates, in: zone).count
        if !arrived.isEmpty { try noteRefetched(arrived, in: zone) }
        // A revocation learned here: an owner device vouches for what it took before, another drops what is void.
        if let takenBeforeShare, share?.participants != historiesBefore || share?.removedDevices != removalsBefore {
            summary.recordsVoided = try settleRevocations(in: zone, notVouching: takenBeforeShare)
            summary.recordsChanged += summary.recordsVoided
        }
        return summary
    }

    /// The merge, with the public database's rule for two accounts' concurrent creations.
    private func merge(_ incoming: RecordState, into previous: RecordState?, in zone: ZoneKey) throws -> MergeOutcome {
        guard zone.scope == .public, enforcesWriteRights, let previous else { return Merge.merge(local: previous, incoming: incoming) }
        switch WriteRights.publicMerge(local: previous, incoming: incoming) {
        case .merge:
            return Merge.merge(local: previous, incoming: incoming)
        case .keepLocal:
            return MergeOutcome(state: previous, changed: false, newConflicts: 0)
        case .takeIncoming:
            // Whole, its vector too: a state's vector names its creator's writes alone.
            return MergeOutcome(state: incoming, changed: true, newConflicts: incoming.conflictCount)
        }
    }

    /// Why `state` holds a write its writer had no right to make, or nil.
    private func rightsRefusal(_ state: RecordState, in zone: ZoneKey, share: Share?) -> String? {
        guard enforcesWriteRights else { return nil }
        switch zone.scope {
        case .private: return nil
        case .public: return WriteRights.publicRefusal(state, sameAccount: sameAccount)
        case .shared: return WriteRights.sharedRefusal(state, in: zone, share: share, accounts: accounts(of:))
        }
    }
}
