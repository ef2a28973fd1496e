@_spi(Tools) import LatticeCrypto
import LatticeStore
@_spi(Tools) import LatticeProtocol
import LatticeTransport
import NIOCore

/// Relaying at the cost of one link per commit (`SyncSession+Relay`): the
/// node tells its account's peers which devices it has sessions with, and
/// tells each session which peers stream to that session's device themselves.
extension SyncNode {
    /// A session started or ended: the account's peers hear the new list soon
    /// (once for a burst of changes, as when a whole LAN starts).
    func neighborsChanged() {
        let schedule = state.withLockedValue { state -> Bool in
            guard !state.relay.neighborsScheduled, !state.runtime.stopped else { return false }
            state.relay.neighborsScheduled = true
            return true
        }
        guard schedule else { return }
        group.next().scheduleTask(in: .milliseconds(100)) { [weak self] in self?.tellNeighbors() }
    }

    /// The account's devices this node has a relaying session with (both
    /// sides relay and stream the account's databases to each other).
    private func relayingHandles(_ state: State) -> [(peer: String, handle: ConnectionHandle)] {
        state.connections.byPeer.compactMap { peer, handles in
            handles.first { $0.isActive && $0.relays }.map { (peer, $0) }
        }
    }

    private func tellNeighbors() {
        // Handed to the sessions under the lock: each connection's loop takes
        // them in that order, so an older list never lands after a newer one.
        state.withLockedValue { state in
            state.relay.neighborsScheduled = false
            let handles = relayingHandles(state)
            let devices = handles.compactMap { DeviceID($0.peer) }
            for (_, handle) in handles { handle.tellNeighbors(devices) }
        }
        coverRelays() // sessions that started since hear who covers them
    }

    /// `peer` said which devices it has sessions with.
    func peerNeighbors(_ peer: String, _ devices: Set<String>) {
        state.withLockedValue { $0.relay.neighborsOf[peer] = devices }
        coverRelays()
    }

    /// A connection ended: if it was the device's last, the devices that
    /// relied on its streams lose them, and the others hear the new list.
    func connectionEnded(_ peer: String) {
        // Only a device of the account can have relayed (strangers come and go by the thousand in a flood).
        guard trustedDevices.all.contains(peer) else { return }
        let gone = state.withLockedValue { state -> Bool in
            guard (state.connections[peer] ?? []).isEmpty else { return false }
            state.relay.neighborsOf[peer] = nil
            return true
        }
        guard gone else { return }
        coverRelays()
        neighborsChanged()
    }

    /// Tells each session which connected peers stream to its device themselves.
    private func coverRelays() {
        // Under the lock, as `tellNeighbors`: a plan made on stale lists never overrides a newer one.
        state.withLockedValue { state in
            let handles = relayingHandles(state)
            let connected = Set(handles.map(\.peer))
            for (peer, handle) in handles {
                handle.coverRelays(from: Set(state.relay.neighborsOf.filter { connected.contains($0.key) && $0.value.contains(peer) }.keys))
            }
        }
    }

    /// What committed since the last read, read once for all sessions: the
    /// zones, the roster, the sequence, and the sources of recent commits
    /// (kept in memory, so each read takes only the new ones). Nil when the
    /// store cannot be read: sessions then read for themselves.
    func readLocalChanges() -> LocalChanges? {
        let after = state.withLockedValue { $0.relay.feedSequence }
        let roster = trustedDevices.roster
        guard var changes = try? container.store.read({ try StoreSyncAdapter.localChanges(in: $0, roster: roster, after: after) }) else { return nil }
        state.withLockedValue { state in
            let now = changes.sequence ?? 0
            if let after, now >= after {
                state.relay.feedSources.merge(changes.sources) { $1 }
                if state.relay.feedSources.count > 1024 { state.relay.feedSources = state.relay.feedSources.filter { $0.key + 1024 > now } }
            } else {
                state.relay.feedSources = changes.sources
            }
            state.relay.feedSequence = changes.sequence
            changes.sources = state.relay.feedSources
        }
        return changes
    }

    /// Copies the connections' message counts into the status (under the state's lock).
    /// Messages to and from `peer` in this node's run: its ended connections' and its open ones'.
    func totalTraffic(_ peer: String, _ state: State) -> Traffic {
        (state.connections[peer] ?? []).reduce(into: state.publishing.pastTraffic[peer] ?? Traffic()) { $0 += $1.traffic }
    }

    func countTraffic(_ state: inout State) {
        var totals = state.publishing.pastTraffic
        for peer in state.connections.peers { totals[peer] = totalTraffic(peer, state) }
        for (peer, traffic) in totals where state.status.peers.contains(where: { $0.deviceID == peer }) {
            updatePeer(&state, peer) { status in
                status.messagesSent = traffic.sent
                status.messagesReceived = traffic.received
            }
        }
        state.publishing.trafficShown = totals
    }

    /// Every second, the status is written again if message counts changed
    /// without an event that wrote it (a relay skipped, a caught-up sent).
    func startTrafficTicker() {
        guard configuration.publishesStatus else { return }
        let ticker = group.next().scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [weak self] _ in
            guard let self else { return }
            let changed = self.state.withLockedValue { state -> Bool in
                state.connections.peers.contains { self.totalTraffic($0, state) != state.publishing.trafficShown[$0] }
            }
            if changed { self.publishStatus() }
        }
        state.withLockedValue { $0.publishing.ticker = ticker }
    }
}
