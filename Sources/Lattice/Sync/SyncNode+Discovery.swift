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

    /// Trust changed (any commit may carry that): dial newly trusted devices.
    func trustChanged(_ trusted: Set<String>) {
        let changed = state.withLockedValue { state in
            defer { state.trusted = trusted }
            return state.trusted != trusted
        }
        if changed { reviewDiscovered() }
    }

    private func discoveryEvent(_ event: DiscoveryEvent) {
        let (changed, devices) = state.withLockedValue { state in
            let changed = state.discovered.apply(event)
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
            return (changed, state.discovered.devices)
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
        for id in changed.sorted() {
            if let device = devices.first(where: { $0.deviceID == id }) {
                continuation.yield(.discovered(peer: id, addresses: device.addresses.map(\.description), problem: problem(device)))
            } else {
                continuation.yield(.vanished(peer: id))
            }
        }
        reviewDiscovered()
    }

    private func problem(_ device: DiscoveredDevice) -> String? {
        let trusted = state.withLockedValue { $0.trusted.contains(device.deviceID) }
        return device.problem(container: container.containerIdentifier, versions: SyncWire.versions, trusted: trusted)
    }

    /// Updates the status's device list and starts a dial loop for each device to sync with that has none.
    private func reviewDiscovered() {
        let ours = container.containerIdentifier
        state.withLockedValue { state in
            guard !state.stopped, state.discovery != nil else { return }
            let devices = state.discovered.devices
            // Every trusted device, and at most 100 others: anyone on the LAN can advertise.
            let shown = devices.filter { state.trusted.contains($0.deviceID) } + devices.filter { !state.trusted.contains($0.deviceID) }.prefix(100)
            state.status.discovery?.devices = shown.map { device in
                let trusted = state.trusted.contains(device.deviceID)
                return NodeStatus.Device(
                    deviceID: device.deviceID, container: device.container,
                    protocolVersions: device.services.first?.txt["pv"], addresses: device.addresses.map(\.description),
                    port: device.services.first?.port ?? 0, interfaces: Set(device.services.map(\.interfaceIndex)).count,
                    trusted: trusted, problem: device.problem(container: ours, versions: SyncWire.versions, trusted: trusted),
                    dialError: state.discoveryDialErrors[device.deviceID])
            }
            for device in devices where state.discoveryDialers[device.deviceID] == nil
                && device.problem(container: ours, versions: SyncWire.versions, trusted: state.trusted.contains(device.deviceID)) == nil {
                // Made under the lock, so two reviews at once cannot start two loops for one device.
                state.discoveryDialers[device.deviceID] = Task { [weak self] in await self?.discoveredDialLoop(device.deviceID) }
            }
        }
        publishStatus()
    }

    /// The addresses to dial `id` at while discovery sees it and this node should sync with it; nil otherwise.
    private func dialableAddresses(_ id: String, state: inout State) -> [PeerAddress]? {
        guard !state.stopped, let device = state.discovered.device(id),
              device.problem(container: container.containerIdentifier, versions: SyncWire.versions, trusted: state.trusted.contains(id)) == nil
        else { return nil }
        return device.dialAddresses(container: container.containerIdentifier, versions: SyncWire.versions)
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
        var delay = 0.25
        while !Task.isCancelled {
            let next = state.withLockedValue { state -> (addresses: [PeerAddress], connected: Bool)? in
                guard let addresses = dialableAddresses(id, state: &state) else {
                    state.discoveryDialers[id] = nil
                    return nil
                }
                return (addresses, (state.connections[id] ?? []).contains { $0.isActive })
            }
            guard let next else { return }
            if next.connected {
                delay = 0.25
                try? await Task.sleep(nanoseconds: 250_000_000)
                continue
            }
            var failures: [String] = []
            for address in next.addresses {
                // A device that stays unreachable is reported once, not every few seconds.
                let lasted = await dial(address) { reason in
                    failures.append("\(address): \(reason)")
                    return self.state.withLockedValue { $0.discoveryDialErrors[id] == nil }
                }
                guard let lasted else { continue }
                // Anyone can advertise any device ID: only a session with that device
                // counts. Another device at the address (a stale or forged advertisement)
                // must not keep the real one's other addresses from being tried.
                let reached = state.withLockedValue { $0.peerOfAddress[address] == id }
                guard reached else {
                    failures.append("\(address): another device answers there")
                    continue
                }
                if lasted > 5 { delay = 0.25 }
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
            await backOff(&delay, cap: 5)
        }
    }
}
