import Foundation
import LatticeDiscovery
import LatticeProtocol

/// What the node needs from discovery: `ServiceDiscovery` over DNS-SD, or a fake in tests.
public protocol PeerDiscovery: Sendable {
    func start()
    func stop()
}

extension ServiceDiscovery: PeerDiscovery {}

extension SyncNode {
    /// Advertises this node on `port` and dials trusted devices of its container as they appear.
    func startDiscovery(port: Int) {
        let advertisement = ServiceDiscovery.Advertisement(
            name: container.deviceID, port: port,
            txt: LatticeService.txt(deviceID: container.deviceID, container: container.containerIdentifier, versions: SyncWire.versions))
        let discovery = configuration.makeDiscovery(advertisement) { [weak self] event in self?.discoveryEvent(event) }
        let trusted = Set(((try? container.peers()) ?? []).filter(\.trusted).map(\.deviceID))
        state.withLockedValue { state in
            state.trusted = trusted
            state.discovery = discovery
            state.status.discovery = NodeStatus.Discovery(state: "running")
        }
        discovery.start()
    }

    /// Stops discovery; returns the dial loops to wait for.
    func stopDiscovery() -> [Task<Void, Never>] {
        let (discovery, dialers) = state.withLockedValue { state in
            defer {
                state.discovery = nil
                state.discoveryDialers.removeAll()
            }
            return (state.discovery, Array(state.discoveryDialers.values))
        }
        discovery?.stop()
        for dialer in dialers { dialer.cancel() }
        return dialers
    }

    /// Whether this node syncs with the discovered device `id`: a trusted
    /// device, or any when the public database is open to strangers.
    func syncsWith(_ id: String, _ state: State) -> Bool {
        state.trusted.contains(id) || configuration.publicFrom == .anyone
    }

    /// Trust changed (any commit may carry that): dial newly trusted devices.
    func trustChanged(_ trusted: Set<String>) {
        let changed = state.withLockedValue { state in
            defer { state.trusted = trusted }
            return state.trusted != trusted
        }
        if changed { reviewDiscovered() }
    }

    private func discoveryEvent(_ event: DiscoveryEvent) {
        let reports = state.withLockedValue { state -> [Event] in
            switch event {
            case .registered(let name): state.status.discovery?.advertisedAs = name
            case .unavailable(let error):
                state.status.discovery?.state = "unavailable"
                state.status.discovery?.problem = error.message
                state.status.discovery?.advertisedAs = nil
            case .available:
                state.status.discovery?.state = "running"
                state.status.discovery?.problem = nil
            case .found, .lost: break
            }
            return state.discovered.apply(event).sorted().map { id in
                guard let device = state.discovered.device(id) else { return .vanished(peer: id) }
                let problem = state.discovered.problem(device, trusted: state.trusted.contains(id))
                return .discovered(peer: id, addresses: device.addresses.map(\.description), problem: problem?.description)
            }
        }
        switch event {
        case .unavailable(let error):
            // Info, not warning: serve prints the one line a user needs from the event.
            logger.info("mDNS discovery is unavailable", metadata: ["reason": "\(error.message)"])
            continuation.yield(.discoveryUnavailable(reason: error.message))
        case .available:
            logger.notice("mDNS discovery works again")
            continuation.yield(.discoveryAvailable)
        default: break
        }
        for report in reports { continuation.yield(report) }
        reviewDiscovered()
    }

    /// Updates the status's device list and starts a dial loop for each device to sync with that has none.
    private func reviewDiscovered() {
        state.withLockedValue { state in
            guard !state.stopped, state.discovery != nil else { return }
            let devices = state.discovered.devices
            // Every trusted device, and at most 100 others: anyone on the LAN can advertise.
            let shown = devices.filter { state.trusted.contains($0.deviceID) } + devices.filter { !state.trusted.contains($0.deviceID) }.prefix(100)
            state.status.discovery?.devices = shown.map { device in
                let trusted = state.trusted.contains(device.deviceID)
                let problem = state.discovered.problem(device, trusted: trusted)
                return NodeStatus.Device(
                    deviceID: device.deviceID, container: device.container,
                    protocolVersions: device.services.first?.txt["pv"], addresses: device.addresses.map(\.description),
                    port: device.services.first?.port ?? 0, interfaces: Set(device.services.map(\.interfaceIndex)).count,
                    trusted: trusted, problem: problem?.description, problemCause: problem?.cause,
                    dialError: state.discoveryDialErrors[device.deviceID])
            }
            // Strangers too when the public database is open to them, a bounded number at once.
            var strangersDialed = state.discoveryDialers.keys.filter { !state.trusted.contains($0) }.count
            for device in devices where state.discoveryDialers[device.deviceID] == nil
                && state.discovered.problem(device, trusted: syncsWith(device.deviceID, state)) == nil {
                if !state.trusted.contains(device.deviceID) {
                    guard strangersDialed < configuration.maximumStrangersDialed else { continue }
                    strangersDialed += 1
                }
                // Made under the lock, so two reviews at once cannot start two loops for one device.
                state.discoveryDialers[device.deviceID] = NodeTask.start { [weak self] in await self?.discoveredDialLoop(device.deviceID) }
            }
        }
        publishStatus()
    }

    /// Dials a discovered device until it vanishes (or is no longer to be synced
    /// with), trying each of its addresses, while no connection to it runs.
    private func discoveredDialLoop(_ id: String) async {
        // When both see each other at once, the smaller ID dials and the larger waits a
        // moment (a LAN handshake takes milliseconds), so one handshake usually suffices;
        // a race is settled by the dedup rule. Short, because a node that restarts sees
        // the others at once (its daemon's cache) while they see it only after its name
        // probe (~0.8 s): it should not wait long for them.
        if container.deviceID > id { try? await Task.sleep(nanoseconds: 250_000_000) }
        var backoff = DialBackoff(cap: 5)
        while !Task.isCancelled {
            let next = state.withLockedValue { state -> (addresses: [PeerAddress], connected: Bool)? in
                guard !state.stopped, let addresses = state.discovered.dialAddresses(id, trusted: syncsWith(id, state)) else {
                    state.discoveryDialers[id] = nil
                    return nil
                }
                return (addresses, (state.connections[id] ?? []).contains { $0.isActive })
            }
            guard let next else { return }
            if next.connected {
                // Checked once a second: a node with many peers has a loop per peer.
                backoff.reset()
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                continue
            }
            var failures: [String] = []
            for address in next.addresses {
                let lasted: TimeInterval
                switch await dial(address) {
                case .ended(let after): lasted = after
                case .unreachable(let reason):
                    // A device that stays unreachable is reported once, not every few seconds.
                    if failures.isEmpty, state.withLockedValue({ $0.discoveryDialErrors[id] == nil }) {
                        continuation.yield(.unreachable(address: address.description, reason: reason))
                    }
                    failures.append("\(address): \(reason)")
                    continue
                }
                // Anyone can advertise any device ID: only a session with that device
                // counts. Another device at the address (a stale or forged advertisement)
                // must not keep the real one's other addresses from being tried.
                guard state.withLockedValue({ $0.peerOfAddress[address] == id }) else {
                    failures.append("\(address): another device answers there")
                    continue
                }
                backoff.connectionEnded(after: lasted)
                failures = []
                break
            }
            let failed = failures.isEmpty ? nil : failures.joined(separator: "; ")
            let changed = state.withLockedValue { state in
                defer { state.discoveryDialErrors[id] = failed }
                return state.discoveryDialErrors[id] != failed
            }
            if changed { reviewDiscovered() }
            // Liveness comes from the connection (keepalives), never from mDNS: a cut
            // peer stays discovered for an hour, so keep trying it, at most every few seconds.
            await sleepWithJitter(backoff.nextWait())
        }
    }
}
