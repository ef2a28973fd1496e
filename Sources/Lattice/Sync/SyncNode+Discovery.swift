import Foundation
import LatticeDiscovery
import LatticeNode
@_spi(Tools) import LatticeProtocol

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
            state.discovery.trusted = trusted
            state.discovery.service = discovery
            state.status.discovery = NodeStatus.Discovery(state: "running")
        }
        discovery.start()
    }

    /// Stops discovery, and dialing the devices it found (sessions with them stay).
    func stopDiscovery() {
        let (discovery, devices) = state.withLockedValue { state in
            defer { state.discovery.service = nil }
            return (state.discovery.service, state.dials.plan.devices)
        }
        discovery?.stop()
        updateDialPlan { plan, _ in
            for id in devices { plan.forget(id) }
            return []
        }
    }

    /// Whether this node syncs with the discovered device `id`: a trusted
    /// device, or any when the public database is open to strangers.
    func syncsWith(_ id: String, _ state: State) -> Bool {
        state.discovery.trusted.contains(id) || configuration.publicFrom == .anyone
    }

    /// Trust changed (any commit may carry that): dial newly trusted devices.
    func trustChanged(_ trusted: Set<String>) {
        let changed = state.withLockedValue { state in
            defer { state.discovery.trusted = trusted }
            return state.discovery.trusted != trusted
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
            return state.discovery.found.apply(event).sorted().map { id in
                guard let device = state.discovery.found.device(id) else { return .vanished(peer: id) }
                let problem = state.discovery.found.problem(device, trusted: state.discovery.trusted.contains(id))
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

    /// Updates the status's device list, and tells the dial plan which devices to dial at which addresses.
    func reviewDiscovered() {
        let dialable = state.withLockedValue { state -> [(id: String, addresses: [PeerAddress]?)]? in
            guard !state.runtime.stopped, state.discovery.service != nil else { return nil }
            let devices = state.discovery.found.devices
            // Every trusted device, and at most 100 others: anyone on the LAN can advertise.
            let shown = devices.filter { state.discovery.trusted.contains($0.deviceID) } + devices.filter { !state.discovery.trusted.contains($0.deviceID) }.prefix(100)
            state.status.discovery?.devices = shown.map { device in
                let trusted = state.discovery.trusted.contains(device.deviceID)
                let problem = state.discovery.found.problem(device, trusted: trusted)
                return NodeStatus.Device(
                    deviceID: device.deviceID, container: device.container,
                    protocolVersions: device.services.first?.txt["pv"], addresses: device.addresses.map(\.description),
                    port: device.services.first?.port ?? 0, interfaces: Set(device.services.map(\.interfaceIndex)).count,
                    trusted: trusted, problem: problem?.description, problemCause: problem?.cause,
                    dialError: state.dials.plan.dialErrors[device.deviceID])
            }
            // Devices planned that vanished or are no longer to be synced with are forgotten; strangers
            // are dialed too when the public database is open to them, a bounded number at once.
            let planned = Set(state.dials.plan.devices)
            var strangersDialed = planned.filter { !state.discovery.trusted.contains($0) }.count
            var dialable = planned.filter { state.discovery.found.device($0) == nil }.map { (id: $0, addresses: [PeerAddress]?.none) }
            for device in devices {
                let addresses = state.discovery.found.dialAddresses(device.deviceID, trusted: syncsWith(device.deviceID, state))
                if addresses != nil, !planned.contains(device.deviceID), !state.discovery.trusted.contains(device.deviceID) {
                    guard strangersDialed < configuration.maximumStrangersDialed else { continue }
                    strangersDialed += 1
                }
                dialable.append((device.deviceID, addresses))
            }
            return dialable
        }
        guard let dialable else { return }
        updateDialPlan { plan, now in
            for device in dialable {
                if let addresses = device.addresses { plan.dialable(device.id, at: addresses, now: now) } else { plan.forget(device.id) }
            }
            return []
        }
        publishStatus()
    }
}
