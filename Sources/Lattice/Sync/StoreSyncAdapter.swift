import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeStore
import NIOConcurrencyHelpers

/// The store side of the sync protocol: the delegate `LatticeProtocol`
/// declares, over a `RecordStore`. Each call is one short read or one write
/// transaction; none waits on the network.
struct StoreSyncAdapter: SyncDelegate {
    let store: RecordStore
    let container: String
    let trusted: TrustedDevices
    /// Who may sync the public database with this node besides the account.
    let publicFrom: PublicSyncPolicy
    /// What strangers' public batches may bring here (`PublicWriteAllowance`).
    let allowances: PublicWriteAllowances
    /// Zones where a peer's stream brought records stamped too far in the
    /// future, until that peer's next session: their resume point stays
    /// before the deferred records, and no claim is taken, so the records come
    /// again (and land) on the next session, and no vector says they are held.
    let deferredStreams = NIOLockedValueBox(Set<DeferredStream>())
    /// The cursor each outgoing stream last handed out, per peer and zone: a
    /// cursor a peer asks for that this process did not hand out comes from
    /// its hello, so from a history this store may have lost (see `produceBatch`).
    let issuedCursors = NIOLockedValueBox([DeferredStream: StreamCursor]())
    /// The host each stranger connected from, for its allowance of public writes (bounded).
    let strangerHosts = NIOLockedValueBox([DeviceID: String]())
    /// Outlines of assets being served, so each chunk read is checked before it is sent (bounded).
    let servedOutlines = NIOLockedValueBox([[UInt8]: [[UInt8]]]())

    struct DeferredStream: Hashable {
        var peer: DeviceID
        var zone: ZoneKey
    }

    init(store: RecordStore, container: String, trusted: TrustedDevices, publicFrom: PublicSyncPolicy = .anyone, allowance: PublicWriteAllowance = .default) {
        self.store = store
        self.container = container
        self.trusted = trusted
        self.publicFrom = publicFrom
        allowances = PublicWriteAllowances(allowance: allowance)
    }

    func access(for peer: DeviceID) -> PeerAccess? {
        if trusted.contains(peer) { return .account }
        guard peer != store.identity.deviceID else { return nil }
        return Self.access(publicFrom: publicFrom, sharedZones: trusted.sharedZones(for: peer))
    }

    /// What a device of another account may sync: the public database (if
    /// open to it) and the shared zones its account may; nil for nothing.
    static func access(publicFrom: PublicSyncPolicy, sharedZones: Set<ZoneID>) -> PeerAccess? {
        let scopes: Set<DatabaseScope> = publicFrom == .anyone ? [.public] : []
        guard !scopes.isEmpty || !sharedZones.isEmpty else { return nil }
        return PeerAccess(scopes: scopes, sharedZones: sharedZones)
    }

    func notePeerMembership(_ membership: [UInt8], of peer: DeviceID) -> Bool {
        trusted.notePeerMembership(membership, of: peer)
    }

    func noteOfferedZones(_ zones: [ZoneID], from peer: DeviceID) throws {
        trusted.noteOffers(zones, from: peer)
        // Each session offers them again: an offer is noted once per zone, and the newest kept.
        let offered = zones.filter { !trusted.holdsOrAccepted($0) }.prefix(8)
        guard !offered.isEmpty else { return }
        let now = RecordStore.systemWallClock()
        try store.write { transaction in
            for zone in offered { try transaction.noteShareInvitation(zone, offeredBy: peer.description, at: now) }
        }
    }

    func noteConnected(_ peer: DeviceID, address: String) throws {
        // A stranger syncing the public database costs no store write: anyone can make identities.
        // Its host is remembered in memory: its allowance of public writes is its host's.
        guard access(for: peer)?.isAccount == true else {
            strangerHosts.withLockedValue { hosts in
                if hosts.count >= PublicWriteAllowances.maximumTracked { hosts.removeAll() }
                hosts[peer] = PeerAddress(address)?.host ?? address
            }
            return
        }
        try store.write { try $0.upsertPeer(peer.description, name: nil, trusted: nil, address: address, lastSeen: RecordStore.systemWallClock()) }
    }

    /// Inside every produce and apply: the in-memory set lags a trust change
    /// by a wake-up; the transaction's own view of the store does not.
    private func requireTrusted(_ peer: DeviceID, in snapshot: StoreSnapshot) throws {
        guard try snapshot.peer(peer.description)?.trusted == true else { throw PeerNoLongerTrusted(peer: peer) }
    }

    /// What `peer` may sync, as the store says now.
    func access(for peer: DeviceID, in snapshot: StoreSnapshot) throws -> PeerAccess? {
        if try snapshot.peer(peer.description)?.trusted == true { return .account }
        guard peer != store.identity.deviceID else { return nil }
        let known = snapshot.accounts(of: ReplicaID(device: peer))
        return Self.access(publicFrom: publicFrom, sharedZones: trusted.sharedZones(for: peer, in: try snapshot.sharedZones(), also: known))
    }

    /// The accounts `peer` proved (its hellos) or the store knows (memberships).
    func accounts(of peer: DeviceID, in snapshot: StoreSnapshot) -> Set<String> {
        trusted.accounts(of: peer).union(snapshot.accounts(of: ReplicaID(device: peer)))
    }

    /// A zone's stream goes only to a peer that may sync it: the private
    /// database to the account, the public one to whom `publicFrom` says.
    @discardableResult
    func requireAccess(_ peer: DeviceID, to zone: ZoneKey, in snapshot: StoreSnapshot) throws -> PeerAccess {
        guard let access = try access(for: peer, in: snapshot), access.allows(zone) else { throw PeerNoLongerTrusted(peer: peer) }
        return access
    }

    /// The zones a session streams: the public database has its default zone
    /// alone (a store of an earlier build may hold others, which no peer takes).
    private static func syncable(_ zone: ZoneKey) -> Bool { zone.scope != .public || zone.zoneID.isDefault }

    func hello(for peer: DeviceID) throws -> Hello {
        deferredStreams.withLockedValue { marks in marks = marks.filter { $0.peer != peer } }
        return try store.read { snapshot in
            // Zones, vectors and resume points are the account's: not for a device untrusted since the handshake.
            guard var access = try access(for: peer, in: snapshot) else { throw PeerNoLongerTrusted(peer: peer) }
            // Shared zones as the session's access has them (from memory); the session widens it later.
            access.sharedZones = access.sharedZones.intersection(trusted.sharedZones(for: peer))
            var held = try access.scopes.sorted { $0.rawValue < $1.rawValue }.flatMap { try snapshot.zones(in: $0) }
            if !access.scopes.contains(.shared) { held += try snapshot.zones(in: .shared).filter { access.sharedZones.contains($0.key.zoneID) } }
            // The roster names the account's devices: for the account alone.
            var hello = Hello(
                container: container, zones: try adverts(of: held, for: peer, in: snapshot), roster: access.isAccount ? try snapshot.encodedRoster() : [],
                grants: access.scopes, sharedGrants: access.scopes.contains(.shared) ? [] : access.sharedZones.sorted { $0.description < $1.description },
                membership: trusted.membership)
            hello.excluded = try snapshot.excludedZones().filter(access.allows).sorted { $0.description < $1.description }
            hello.replicatesOnly = try snapshot.onlyZones().map { $0.sorted { $0.description < $1.description } }
            return hello
        }
    }

    func sharedZoneAdverts(_ zones: Set<ZoneID>, for peer: DeviceID) throws -> [ZoneAdvert] {
        try store.read { snapshot in
            try adverts(of: try snapshot.zones(in: .shared).filter { zones.contains($0.key.zoneID) }, for: peer, in: snapshot)
        }
    }

    /// What a hello says of `zones`: their state, vector and `peer`'s resume point.
    private func adverts(of zones: [(key: ZoneKey, sync: ZoneSyncState)], for peer: DeviceID, in snapshot: StoreSnapshot) throws -> [ZoneAdvert] {
        let resume = try snapshot.resumePoints(of: peer.description)
        return try zones.filter { Self.syncable($0.key) }.map { zone in
            // A store that lost writes of its own (a restored copy, or records a revocation made it drop)
            // asks for them from the peer's vector, not from where the peer's stream stopped: that stream
            // skipped them while this store claimed them.
            let gap = try snapshot.ownGap(in: zone.key) != nil || snapshot.ownRefetch(in: zone.key) != nil
            return ZoneAdvert(
                zone: zone.key, zoneState: zone.sync.zoneState, vector: try snapshot.vectorToTell(zone.sync, in: zone.key),
                resume: gap ? nil : resume[zone.key].map(StreamCursor.init))
        }
    }

    func adoptRoster(_ bytes: [UInt8], from peer: DeviceID) throws {
        // Most sessions open with the roster both sides hold already: nothing to check.
        guard bytes != trusted.roster else { return }
        // A stranger's roster changes nothing here: trust comes from the account's own members.
        guard access(for: peer)?.isAccount == true else { return }
        // Whole or a piece: its entries may need those of earlier pieces, which the store holds.
        let piece = try AccountRoster.checkedEntries(of: bytes)
        try store.write { transaction in
            try requireTrusted(peer, in: transaction)
            try transaction.adoptRoster(founder: piece.founder, entries: piece.entries)
        }
    }

    func roster() throws -> [UInt8] { trusted.roster }

    func zones() throws -> [ZoneKey] {
        try store.read { snapshot in try Self.syncableZones(in: snapshot) }
    }

    /// The zones sessions stream, as `zones()` says.
    static func syncableZones(in snapshot: StoreSnapshot) throws -> [ZoneKey] {
        try DatabaseScope.allCases.flatMap { try snapshot.zones(in: $0).map(\.key) }.filter(Self.syncable)
    }

    func localChanges(after sequence: UInt64?) throws -> LocalChanges {
        try store.read { try Self.localChanges(in: $0, roster: trusted.roster, after: sequence) }
    }

    /// What committed after `sequence` (nil: unknown), as `snapshot` shows it.
    static func localChanges(in snapshot: StoreSnapshot, roster: [UInt8], after sequence: UInt64?) throws -> LocalChanges {
        LocalChanges(
            zones: try syncableZones(in: snapshot), roster: roster, sequence: try snapshot.sequence(),
            sources: try sequence.map { try snapshot.commitSources(after: $0) } ?? [:])
    }

    func holdings(for peer: DeviceID) throws -> [ZoneAdvert] {
        try store.read { snapshot in
            guard let access = try access(for: peer, in: snapshot) else { throw PeerNoLongerTrusted(peer: peer) }
            let held = try DatabaseScope.allCases.flatMap { try snapshot.zones(in: $0) }.filter { access.allows($0.key) && Self.syncable($0.key) }
            return try held.map { zone in
                ZoneAdvert(zone: zone.key, zoneState: zone.sync.zoneState, vector: try snapshot.vectorToTell(zone.sync, in: zone.key), resume: nil)
            }
        }
    }

    func applyCollected(zone: ZoneKey, zoneIncarnation: UInt64, records: [CollectedRecord], blocks: [WriteBlock], from peer: DeviceID) throws -> Int {
        try store.write { transaction in
            guard try access(for: peer, in: transaction)?.isAccount == true, zone.scope == .private else { throw PeerNoLongerTrusted(peer: peer) }
            // Another incarnation of the zone here: the zones' own merge settles which one lives, and its records with it.
            guard try transaction.syncState(of: zone)?.zoneState.causalLength == zoneIncarnation else { return 0 }
            return try transaction.takeCollected(records.map { ($0.name, $0.residue) }, blocks: blocks, in: zone)
        }
    }

    func produceBatch(_ request: BatchRequest, for peer: DeviceID) throws -> OutgoingBatch? {
        let mark = DeferredStream(peer: peer, zone: request.zone)
        // Only the account's devices can tell this store it lost writes of its own: a stranger's
        // vector may say anything, and a gap noted for it would change every peer's streams.
        guard access(for: peer)?.isAccount == true else {
            guard case .produced(let batch) = try store.read({ try produce(request, mark: mark, after: ChangeCursor(request.after), in: $0, unlessLost: nil) }) else { return nil }
            return batch
        }
        let told = request.peerVector[store.replica]
        // One short read in the common case: the peer's entry for this store is a head it holds.
        if case .produced(let batch) = try store.read({ try produce(request, mark: mark, after: ChangeCursor(request.after), in: $0, unlessLost: told) }) {
            return batch
        }
        // The peer holds writes of this store that it lost: it was restored
        // from an older copy. Its change sequence was rewound with it, so a
        // cursor into its stream from before (the peer's hello) would skip
        // what it wrote since; the stream starts again from the peer's
        // vector. Its next hello asks for its own writes back.
        let after = issuedCursors.withLockedValue({ $0[mark] }) == request.after ? ChangeCursor(request.after) : ChangeCursor(sequence: 0, row: 0)
        try store.write { transaction in
            if try transaction.ownGap(in: request.zone).map({ $0 < told }) ?? true { try transaction.noteOwnGap(told, in: request.zone) }
        }
        guard case .produced(let batch) = try store.read({ try produce(request, mark: mark, after: after, in: $0, unlessLost: nil) }) else { return nil }
        return batch
    }

    private enum Production {
        case produced(OutgoingBatch?)
        case ownWritesLost
    }

    /// The batch after `after`, or `ownWritesLost` when `told` (the peer's
    /// entry for this store) is a head of its own this store does not hold.
    private func produce(_ request: BatchRequest, mark: DeferredStream, after: ChangeCursor, in snapshot: StoreSnapshot, unlessLost told: HLCTimestamp?) throws -> Production {
        let access = try requireAccess(mark.peer, to: request.zone, in: snapshot)
        if request.zone.scope == .shared, !access.isAccount, let share = try snapshot.share(of: request.zone), !share.admits(accounts(of: mark.peer, in: snapshot)) {
            // Listed, no longer admitted: the share alone, so it learns where it stands.
            return .produced(try snapshot.shareBatch(for: request.zone, after: after, peerVector: request.peerVector).map {
                OutgoingBatch(bytes: $0.bytes, cursor: StreamCursor($0.cursor), final: false, records: $0.records, zoneState: $0.zoneState)
            })
        }
        if let told, try !snapshot.holdsOwnHead(told, in: request.zone) { return .ownWritesLost }
        guard let batch = try snapshot.streamBatch(
            for: request.zone, after: after, peerVector: request.peerVector, peerZoneState: request.peerZoneState,
            maximumRecords: request.maximumRecords, maximumBytes: request.maximumBytes, includingSchema: access.isAccount,
            elidingCoveredGhostsFor: request.elidesCoveredGhosts ? ReplicaID(device: mark.peer) : nil)
        else {
            // The peer holds all of the zone: its stream stands at the end of this snapshot's change order.
            guard let zone = try snapshot.syncState(of: request.zone) else { return .produced(nil) }
            return .produced(.nothing(upTo: .end(of: try snapshot.sequence()), zoneState: zone.zoneState))
        }
        let totals = request.wantsTotals ? try snapshot.streamTotals(for: request.zone, after: after, peerVector: request.peerVector) : nil
        issuedCursors.withLockedValue { cursors in
            // Strangers come and go: past a bound the record starts over (a cursor not found reads as a hello's).
            if cursors.count >= 4096 { cursors.removeAll() }
            cursors[mark] = StreamCursor(batch.cursor)
        }
        return .produced(OutgoingBatch(
            bytes: batch.bytes, cursor: StreamCursor(batch.cursor), final: batch.final, records: batch.records,
            zoneState: batch.zoneState, claimedTop: batch.claimedTop, totals: totals))
    }

    func applyBatch(_ batch: IncomingBatch, from peer: DeviceID) throws -> AppliedBatch {
        let isAccount = access(for: peer)?.isAccount == true
        // A share's participants are known accounts: what they write is the zone's, not a stranger's spam.
        if !isAccount, batch.zone.scope == .public {
            let host = strangerHosts.withLockedValue { $0[peer] } ?? peer.description
            try allowances.spend(batch.bytes.count, by: host)
        }
        let applied: AppliedBatch
        // What a peer tried is kept for `peers` and `doctor`: an account device's, and a share participant's
        // (a bounded number of those); a stranger's in the node's status alone (a row each would let strangers grow the store).
        let notes = isAccount || batch.zone.scope == .shared
        do { applied = try applyChecked(batch, from: peer, takingSchema: isAccount) } catch let error as WriteProofError {
            // The batch changed nothing.
            if notes { try? store.write { try $0.noteRefusedWrites(of: peer.description, reason: error.description, outsideAccount: !isAccount) } }
            throw error
        }
        if applied.recordsRefused > 0, notes {
            // The rest of the batch is applied; the refused records are counted.
            try? store.write { try $0.noteRefusedWrites(of: peer.description, reason: applied.refusal ?? "records refused", outsideAccount: !isAccount) }
        }
        return applied
    }

    private func applyChecked(_ batch: IncomingBatch, from peer: DeviceID, takingSchema: Bool) throws -> AppliedBatch {
        let mark = DeferredStream(peer: peer, zone: batch.zone)
        let alreadyDeferred = deferredStreams.withLockedValue { $0.contains(mark) }
        let applied = try store.write { transaction in
            try requireAccess(peer, to: batch.zone, in: transaction)
            // A zone this device does not replicate (a peer of an earlier version was not told): nothing of it is kept.
            if try transaction.isExcluded(batch.zone) { return AppliedBatch(vector: VersionVector(), recordsChanged: 0) }
            transaction.commitSource = peer.description
            let summary = try transaction.applyChangeSets(from: ArrayByteSource(batch.bytes), takingClaims: !alreadyDeferred, takingSchema: takingSchema)
            guard summary.changeSets == 1 else {
                throw ChangeSetError.malformed("a batch holds \(summary.changeSets) change sets; one of \(batch.zone) was announced")
            }
            try transaction.closeOwnGapIfFilled(in: batch.zone)
            let deferred = alreadyDeferred || summary.recordsDeferred > 0 || summary.zoneDeferred || summary.recordsRefused > 0
            // Strangers get no resume point (a row each, and anyone can make identities): their next
            // stream starts from their vector, which costs what they lack, by the checkpoints.
            // Nor after a revocation voided records here: the peer's next stream starts from the vector, lowered for them.
            if !deferred, summary.recordsVoided == 0, try transaction.peer(peer.description)?.trusted == true {
                try transaction.setResumePoint(ChangeCursor(batch.cursor), of: peer.description, for: batch.zone)
            }
            let vector = try transaction.syncState(of: batch.zone)?.vector ?? VersionVector()
            return AppliedBatch(
                vector: vector, recordsChanged: summary.recordsChanged,
                recordsDeferred: summary.zoneDeferred ? max(1, summary.recordsDeferred) : summary.recordsDeferred,
                recordsRefused: summary.recordsRefused, refusal: summary.refusal)
        }
        if applied.recordsDeferred > 0 || applied.recordsRefused > 0 { deferredStreams.withLockedValue { _ = $0.insert(mark) } }
        return applied
    }
}

extension StreamCursor {
    init(_ cursor: ChangeCursor) { self.init(sequence: cursor.sequence, row: cursor.row) }
}

extension ChangeCursor {
    init(_ cursor: StreamCursor) { self.init(sequence: cursor.sequence, row: cursor.row) }
}

extension Container {
    /// The store side of the sync protocol over this container, for tools that
    /// drive `SyncSession`s themselves (simulations, benchmarks). The node uses the same.
    /// Trust is read from the store now, and again only by `SyncNode`s.
    @_spi(Tools) public func syncDelegate(publicFrom: PublicSyncPolicy = .anyone) throws(LatticeError) -> any SyncDelegate {
        let trusted = TrustedDevices(store: store)
        _ = try LatticeError.wrap { try trusted.reload() }
        return StoreSyncAdapter(store: store, container: containerIdentifier, trusted: trusted, publicFrom: publicFrom)
    }

    /// This device's identity, for the handshake.
    @_spi(Tools) public var identity: Identity { store.identity }
}
