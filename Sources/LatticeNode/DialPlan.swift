import NIOCore

/// Whom the node dials, and when: the addresses it was given (`--peer`) and
/// the devices discovery found. A value with time as an input: the node tells
/// it what happened (a device found or gone, a dial's end, a session up or
/// down), asks it what is due at `nextWake`, and carries out the dials it
/// returns; tests drive it on a manual clock (`DialPlanTests`).
///
/// A dial holds its target until the connection it made ends: one connection
/// per target at a time. A target whose device is connected by another way
/// (it dialed this node) waits until that session ends.
package struct DialPlan<Address: Hashable & Sendable>: Sendable {
    /// What is dialed: a given address, or a discovered device at its addresses, one after another.
    package enum Target: Hashable, Sendable {
        case address(Address)
        case device(String)
    }

    /// What the node does for the plan.
    package enum Action: Hashable, Sendable {
        /// Connect to the address for the target; report the end with `dialEnded`.
        case dial(Address, for: Target)
        /// Nobody answered at the address: worth an event (a discovered device that stays unreachable is reported once).
        case unreachable(Address, reason: String)
        /// Why dialing a discovered device fails changed (nil: it works again): the status shows it.
        case dialErrorChanged(device: String, error: String?)
    }

    /// How a dial ended.
    package enum Outcome: Hashable, Sendable {
        /// A connection was made, and ended after this many seconds.
        case ended(after: Double)
        /// No connection could be made, for this reason in a few words.
        case unreachable(String)
    }

    /// When the larger of two IDs that find each other at once dials: the
    /// smaller dials at once, and a LAN handshake takes milliseconds, so one
    /// handshake usually suffices (a race is settled by `ConnectionTable`). Short,
    /// because a restarted node sees the others at once (its daemon's cache)
    /// while they see it only after its name probe (~0.8 s).
    package static var largerIDWaits: TimeAmount { .milliseconds(250) }

    private enum Phase: Hashable, Sendable {
        case waiting(until: NIODeadline)
        case dialing(Address)
        /// Its device has a session this plan did not dial: wait for it to end.
        case connectedElsewhere
    }

    private struct Plan: Sendable {
        var phase: Phase
        var backoff: DialBackoff
        /// A device's addresses, as discovery last told them.
        var addresses: [Address] = []
        /// Addresses not yet tried in this round, and why the tried ones failed.
        var untried: [Address] = []
        var failures: [String] = []
        /// Forgotten while a dial ran: dropped when it ends.
        var forgotten = false
    }

    package let ownDeviceID: String
    /// Whether given addresses are dialed again after their connection ends (`sync --once`: no).
    package let reconnects: Bool
    private var plans: [Target: Plan] = [:]
    /// Which device answered at an address, once a session there proved it.
    package private(set) var peerOfAddress: [Address: String] = [:]
    /// Devices with a session, however it was made.
    private var connected: Set<String> = []
    /// Why the last round of dials to a discovered device failed, until one succeeds.
    package private(set) var dialErrors: [String: String] = [:]
    private var stopped = false

    package init(ownDeviceID: String, reconnects: Bool = true) {
        self.ownDeviceID = ownDeviceID
        self.reconnects = reconnects
    }

    /// Discovered devices with a plan (each dialed, waiting, or connected).
    package var devices: [String] {
        plans.keys.compactMap { if case .device(let id) = $0 { id } else { nil } }
    }

    /// The earliest time something is due: call `due(at:)` then.
    package var nextWake: NIODeadline? {
        plans.values.compactMap { if case .waiting(let until) = $0.phase { until } else { nil } }.min()
    }

    // MARK: Inputs

    /// Dial `address` from now on (again whenever its connection ends, if the plan reconnects).
    package mutating func add(_ address: Address, at now: NIODeadline) {
        guard !stopped, plans[.address(address)] == nil else { return }
        plans[.address(address)] = Plan(phase: .waiting(until: now), backoff: DialBackoff())
    }

    /// Discovery says the node should sync with device `id`, at these addresses.
    package mutating func dialable(_ id: String, at addresses: [Address], now: NIODeadline) {
        guard !stopped else { return }
        if plans[.device(id)] != nil {
            plans[.device(id)]!.addresses = addresses
            plans[.device(id)]!.forgotten = false
            return
        }
        let start = ownDeviceID > id ? now + Self.largerIDWaits : now
        plans[.device(id)] = Plan(phase: .waiting(until: start), backoff: DialBackoff(cap: 5), addresses: addresses)
    }

    /// The device vanished, or is no longer one to sync with: no more dials (one running ends as its connection does).
    package mutating func forget(_ id: String) {
        guard let plan = plans[.device(id)] else { return }
        if case .dialing = plan.phase {
            plans[.device(id)]!.forgotten = true
        } else {
            plans[.device(id)] = nil
        }
    }

    /// A session proved that device `peer` answers at `address` (a connection this node dialed).
    package mutating func learned(_ address: Address, is peer: String) {
        peerOfAddress[address] = peer
    }

    /// Device `peer` has a session now (however it was made: whatever kept this node's dials from reaching it is past).
    package mutating func connected(_ peer: String) -> [Action] {
        connected.insert(peer)
        guard dialErrors.removeValue(forKey: peer) != nil else { return [] }
        return [.dialErrorChanged(device: peer, error: nil)]
    }

    /// Device `peer` has no session any more: targets that waited for it are dialed shortly (`jitter` scales the wait).
    package mutating func disconnected(_ peer: String, at now: NIODeadline, jitter: Double = 1) {
        guard connected.remove(peer) != nil else { return }
        for (target, plan) in plans where plan.phase == .connectedElsewhere && device(of: target) == peer {
            plans[target]!.phase = .waiting(until: now + Self.seconds(DialBackoff.first * jitter))
        }
    }

    /// A dial the plan asked for ended; returns what to do next (for a device, the dial of its next address at once).
    package mutating func dialEnded(_ target: Target, at address: Address, _ outcome: Outcome, now: NIODeadline, jitter: Double = 1) -> [Action] {
        guard var plan = plans[target], plan.phase == .dialing(address) else { return [] }
        if stopped || plan.forgotten {
            plans[target] = nil
            return []
        }
        switch target {
        case .address:
            var actions: [Action] = []
            let wait: Double
            switch outcome {
            case .ended(let lasted):
                wait = plan.backoff.attemptEnded(.ended(after: lasted))
            case .unreachable(let reason):
                actions.append(.unreachable(address, reason: reason))
                wait = plan.backoff.attemptEnded(.unreachable)
            }
            guard reconnects else {
                plans[target] = nil
                return actions
            }
            plan.phase = .waiting(until: now + Self.seconds(wait * jitter))
            plans[target] = plan
            return actions
        case .device(let id):
            var actions: [Action] = []
            switch outcome {
            case .unreachable(let reason):
                if plan.failures.isEmpty, dialErrors[id] == nil { actions.append(.unreachable(address, reason: reason)) }
                plan.failures.append("\(address): \(reason)")
            case .ended(let lasted):
                // Anyone can advertise any device ID: only a session with that device counts. Another
                // device at the address (a stale or forged advertisement) must not keep the real one's
                // other addresses from being tried.
                if peerOfAddress[address] == id {
                    plan.backoff.connectionEnded(after: lasted)
                    plan.failures = []
                    plan.untried = []
                } else {
                    plan.failures.append("\(address): another device answers there")
                }
            }
            if let next = plan.untried.first {
                plan.untried.removeFirst()
                plan.phase = .dialing(next)
                plans[target] = plan
                return actions + [.dial(next, for: target)]
            }
            let failed = plan.failures.isEmpty ? nil : plan.failures.joined(separator: "; ")
            if dialErrors[id] != failed {
                dialErrors[id] = failed
                actions.append(.dialErrorChanged(device: id, error: failed))
            }
            // Liveness comes from the connection (keepalives), never from mDNS: a cut peer stays
            // discovered for an hour, so it is tried again, at most every few seconds.
            plan.phase = .waiting(until: now + Self.seconds(plan.backoff.nextWait() * jitter))
            plans[target] = plan
            return actions
        }
    }

    /// The dials due at `now`. A target whose device has a session waits for it to end instead.
    package mutating func due(at now: NIODeadline) -> [Action] {
        guard !stopped else { return [] }
        var actions: [Action] = []
        for (target, var plan) in plans {
            guard case .waiting(let until) = plan.phase, until <= now else { continue }
            if let peer = device(of: target), connected.contains(peer) {
                plan.backoff.reset()
                plan.phase = .connectedElsewhere
            } else if case .address(let address) = target {
                plan.phase = .dialing(address)
                actions.append(.dial(address, for: target))
            } else if let first = plan.addresses.first {
                plan.untried = Array(plan.addresses.dropFirst())
                plan.failures = []
                plan.phase = .dialing(first)
                actions.append(.dial(first, for: target))
            } else {
                plan.phase = .waiting(until: now + Self.seconds(plan.backoff.nextWait()))
            }
            plans[target] = plan
        }
        return actions
    }

    /// Nothing more is dialed (connections of dials still running are the node's to close).
    package mutating func stop() {
        stopped = true
        plans.removeAll()
    }

    // MARK: Helpers

    /// The device a target reaches, when known.
    private func device(of target: Target) -> String? {
        switch target {
        case .device(let id): id
        case .address(let address): peerOfAddress[address]
        }
    }

    private static func seconds(_ value: Double) -> TimeAmount { .nanoseconds(Int64(value * 1e9)) }
}
