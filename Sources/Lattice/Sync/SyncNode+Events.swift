import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeNode
import LatticeStore
@_spi(Tools) import LatticeProtocol
import LatticeTransport
import NIOCore

extension SyncNode {
    /// A commit on the store, by any process (on the watcher's thread): sessions
    /// push it, and devices no longer trusted lose their sessions at once.
    func localCommit() {
        // The set first, then the connections: one registered after this
        // snapshot checks the new set itself (see `.authenticated`).
        do {
            try trustedDevices.reload()
        } catch {
            logger.warning("cannot read trust from the store; sessions keep the trust last read: \(error)")
        }
        let trusted = trustedDevices.all
        assetFetcher.refreshSoon()
        serveNodeRequests()
        if selectiveSyncChanged() { return }
        let connections = state.withLockedValue { $0.connections }
        let discovering = state.withLockedValue { $0.discovery.service != nil }
        guard !connections.isEmpty || discovering else { return }
        if discovering { trustChanged(trusted) }
        // Read once for every session: what committed, and which peers' batches made it.
        let changes = connections.isEmpty ? nil : readLocalChanges()
        func push(_ handle: ConnectionHandle) {
            if let changes { handle.localCommit(changes) } else { handle.localCommit() }
        }
        for verdict in connections.review({ access(for: $0, trusted: trusted) }) {
            switch verdict {
            case .push(let handle):
                push(handle)
            case .widen(let handle):
                handle.widen()
                push(handle)
            case .close(let handle, let peer):
                // Trust began or ended: the next session streams what the device may sync now.
                logger.notice("closing a session whose device's trust changed", metadata: ["peer": "\(peer)"])
                handle.close()
            }
        }
    }

    /// Whether the zones this device replicates changed (`lattice zone sync`):
    /// every session then closes, and the next ones start with a hello that
    /// says so (a zone turned on is fetched whole, one turned off is sent no more).
    private func selectiveSyncChanged() -> Bool {
        guard let replication = try? container.store.read({ try Replication($0) }) else { return false }
        let connections = state.withLockedValue { state -> [ConnectionHandle]? in
            guard state.replication != replication else { return nil }
            state.replication = replication
            return state.connections.all.map(\.connection)
        }
        guard let connections else { return false }
        logger.notice("the zones this device replicates changed: sessions start again", metadata: [
            "notReplicated": "\(replication.excluded.map(\.zoneID.description).sorted())",
            "onlyPrivate": "\(replication.only.map { $0.map(\.zoneID.description).sorted().description } ?? "all")",
        ])
        for connection in connections { connection.close() }
        return true
    }

    func handle(_ event: ConnectionEvent) {
        switch event {
        case .authenticated(let peer, let address, let handle):
            let id = peer.description
            let (registration, planned) = state.withLockedValue { state -> (ConnectionTable<ConnectionHandle>.Registration, [DialPlan<PeerAddress>.Action]) in
                // What trust grants now is read under the lock: a commit's sweep of the sessions either
                // sees this one, or ran after the trust this reads (`localCommit` reloads trust first).
                let registration = state.connections.authenticated(handle, peer: id, accessNow: access(for: id, trusted: trustedDevices.all))
                guard registration.verdict == .runs || registration.verdict == .duplicate else { return (registration, []) }
                if let dialed = state.dials.inHandshake[handle.connectionID] { state.dials.plan.learned(dialed.address, is: id) }
                updatePeer(&state, id) { $0.connected = true; $0.address = address; $0.access = handle.access.description; $0.lastError = nil; $0.lastErrorCause = nil }
                return (registration, state.dials.plan.connected(id))
            }
            for connection in registration.closing { connection.close() }
            for action in planned { carryOut(action) }
            switch registration.verdict {
            case .alreadyClosed: return
            case .trustChanged:
                logger.notice("closing a session whose device's trust changed", metadata: ["peer": "\(id)"])
                publishStatus()
                return
            case .duplicate:
                publishStatus()
                return
            case .runs: break
            }
            state.withLockedValue { _ = $0.sessions.deferredThisSession.remove(id) }
            // Remembered as strangers are (bounded, at most once a minute in the store), so a person can trust one.
            if !handle.access.isAccount { noteStranger(.publicOnly, address: PeerAddress(address)?.host ?? address, deviceID: id) }
            logger.info("connected", metadata: ["peer": "\(id)", "address": "\(address)"])
            continuation.yield(.connected(peer: id, address: address))
            assetFetcher.connectionsChanged()
        case .refused(let peer, let address):
            if peer.description == container.deviceID {
                continuation.yield(.unreachable(address: address, reason: "that address is this device itself"))
            } else {
                noteStranger(.untrusted, address: address, deviceID: peer.description)
                if announcesRefusal() { continuation.yield(.refused(peer: peer.description, address: address)) }
            }
        case .turnedAway(let address, let tooManyStrangers):
            noteStranger(tooManyStrangers ? .tooManyStrangers : .tooManyConnections, address: address)
        case .closed(let peer, let address, let closeReason):
            var reason = closeReason.map(Disconnection.init)
            if peer == nil, case .transport(let error) = closeReason, error.isHandshakeFailure {
                noteStranger(.handshakeFailed, address: PeerAddress(address)?.host ?? address)
            }
            if let peer {
                let id = peer.description
                let stillConnected = state.withLockedValue { state in
                    let (ended, connected) = state.connections.closed(peer: id)
                    for connection in ended { state.publishing.pastTraffic[id, default: Traffic()] += connection.traffic }
                    // Two devices that dialed each other at once both close the same one of the
                    // two connections; the other side's close looks like a refusal, but is not.
                    if connected, reason?.cause == .notTrustedByPeer { reason = .duplicateClosed }
                    // A stranger that synced the public database leaves the status with its session:
                    // identities cost nothing, so the list would grow with each (`peers` keeps the recent ones).
                    if !connected, !trustedDevices.all.contains(id) {
                        state.status.peers.removeAll { $0.deviceID == id }
                        return connected
                    }
                    // Only devices that had a session are shown: strangers are in `peers`, bounded.
                    guard state.status.peers.contains(where: { $0.deviceID == id }) else { return connected }
                    updatePeer(&state, id) { status in
                        status.connected = connected
                        if let reason, !connected {
                            status.lastError = reason.description
                            status.lastErrorCause = reason.cause
                        }
                        if !connected { for index in status.zones.indices { status.zones[index].state = "idle" } }
                    }
                    return connected
                }
                if !stillConnected { updateDialPlan { plan, now in plan.disconnected(id, at: now, jitter: Self.jitter()); return [] } }
            }
            if let peer { connectionEnded(peer.description) }
            if let peer { state.withLockedValue { state in state.collection.toldCollected = state.collection.toldCollected.filter { !$0.hasPrefix(peer.description + " ") } } }
            if peer != nil { assetFetcher.connectionsChanged() }
            // A refused stranger had its `refused` event (or its count in the status): no second one.
            if closeReason?.isRefusalOfStranger != true {
                continuation.yield(.disconnected(peer: peer?.description, address: address, reason: reason))
            }
        case .session(let peer, let sessionEvent):
            handleSession(peer.description, sessionEvent)
        }
        publishStatus()
    }

    func handleSession(_ peer: String, _ event: SyncSession.SessionEvent) {
        switch event {
        case .started(let granted):
            // A device this node trusts that does not trust it back syncs the public database only.
            if !granted.isAccount, trustedDevices.all.contains(peer) {
                continuation.yield(.publicOnly(peer: peer))
            }
            assetFetcher.connectionsChanged() // it may now sync zones whose assets are wanted
            // Shared zones widen a session after its start: the status shows what it has now.
            state.withLockedValue { state in
                guard let access = state.connections[peer]?.first?.access else { return }
                updatePeer(&state, peer) { $0.access = access.description }
            }
            // Strangers come and go by the thousand in a flood: only relaying sessions change the lists.
            if state.withLockedValue({ $0.connections[peer]?.contains { $0.relays } ?? false }) { neighborsChanged() }
        case .receiving(let zone, let records, let bytes):
            streamsRun(peer)
            startStream(peer, zone, .receiving, records, bytes)
        case .sending(let zone, let records, let bytes):
            streamsRun(peer)
            startStream(peer, zone, .sending, records, bytes)
        case .received(let zone, let records, let bytes, let final):
            streamsRun(peer)
            advance(peer, zone, .receiving, records, bytes, final)
            if records > 0 { assetFetcher.refreshSoon() }
        case .assetReply(let reply):
            assetFetcher.received(reply, from: peer)
        case .reconcileReply: break // the connection's reconciliation takes it
        case .neighbors(let devices):
            peerNeighbors(peer, devices)
        case .peerExcludes(let zones, let only):
            // A zone the peer does not replicate is not waited for, and its old acknowledgements are void.
            // Kept for the account's devices alone: a stranger's word names zones it has no part in.
            let account = trustedDevices.all.contains(peer)
            var kept: Set<ZoneKey> = account ? zones.filter { $0.scope != .public } : []
            // A list of the private zones it replicates alone leaves out every other this device holds.
            if account, let only, let held = try? container.store.read({ try $0.zones(in: .private).map(\.key) }) {
                kept.formUnion(held.filter { !only.contains($0) })
            }
            state.withLockedValue { state in
                for zone in kept { state.collection.peerHolds[peer]?[zone] = nil }
                updatePeer(&state, peer) { $0.notReplicated = kept.isEmpty ? nil : kept.map(\.zoneID.description).sorted() }
            }
            if account {
                do { try container.store.write { try $0.setPeerExclusions(kept, of: peer) } } catch {
                    logger.warning("could not note the zones a peer does not replicate", metadata: ["peer": "\(peer.prefix(12))", "error": "\(error)"])
                }
            }
        case .peerHolds(let zone, let vector):
            // Only the private zones' acknowledgements are used (tombstone and asset collection): the public
            // database's strangers' went into memory and into every pass's store write, a second under a flood.
            guard zone.scope == .private else { break }
            state.withLockedValue { state in
                let before = state.collection.peerHolds[peer]?[zone] ?? VersionVector()
                guard !before.dominates(vector) else { return }
                state.collection.peerHolds[peer, default: [:]][zone] = before.joined(with: vector)
                state.collection.peerHoldsChanged = true
            }
            tellCollectedIfAway(peer, zone: zone, holding: vector)
        case .delivered(let zone, let records, let bytes, let final):
            streamsRun(peer)
            advance(peer, zone, .sending, records, bytes, final)
        case .quiescent:
            state.withLockedValue { state in
                if !state.sessions.deferredThisSession.contains(peer) {
                    state.sessions.deferrals[peer] = nil
                    updatePeer(&state, peer) { $0.clockSkew = nil }
                }
            }
            continuation.yield(.caughtUp(peer: peer))
            verifySoon(peer)
        case .deferred(let zone, let records):
            state.withLockedValue { state in
                if state.sessions.deferredThisSession.insert(peer).inserted { state.sessions.deferrals[peer, default: 0] += 1 }
                updatePeer(&state, peer) { $0.clockSkew = true }
            }
            logger.warning("records deferred: the peer's clock is ahead of this one's by more than the skew bound", metadata: ["peer": "\(peer)", "zone": "\(zone)", "records": "\(records)"])
            continuation.yield(.deferred(peer: peer, zone: zone, records: records))
        case .refused(let zone, let records, let reason):
            state.withLockedValue { state in
                updatePeer(&state, peer) { status in
                    status.refusedRecords = (status.refusedRecords ?? 0) + records
                    status.lastRefusal = reason
                }
            }
            logger.warning("records refused", metadata: ["peer": "\(peer)", "zone": "\(zone)", "records": "\(records)", "reason": "\(reason)"])
            continuation.yield(.writesRefused(peer: peer, zone: zone, records: records, reason: reason))
        }
    }
}
