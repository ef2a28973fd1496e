import Foundation
import LatticeNode
import LatticeTransport
import NIOCore
import NIOPosix

extension SyncNode {
    /// Changes the dial plan, then carries out what it says is due now, and
    /// wakes when it next has something due. Every input to the plan goes through here.
    func updateDialPlan(_ change: (inout DialPlan<PeerAddress>, NIODeadline) -> [DialPlan<PeerAddress>.Action] = { _, _ in [] }) {
        let now = NIODeadline.now()
        let (actions, wake) = state.withLockedValue { state -> ([DialPlan<PeerAddress>.Action], NIODeadline?) in
            guard !state.runtime.stopped else { return ([], nil) }
            let actions = change(&state.dials.plan, now) + state.dials.plan.due(at: now)
            guard let next = state.dials.plan.nextWake, state.dials.wakeAt.map({ next < $0 }) ?? true else { return (actions, nil) }
            state.dials.wakeAt = next
            return (actions, next)
        }
        if let wake {
            group.next().scheduleTask(deadline: wake) { [weak self] in
                guard let self else { return }
                self.state.withLockedValue { state in if state.dials.wakeAt == wake { state.dials.wakeAt = nil } }
                self.updateDialPlan()
            }
        }
        for action in actions { carryOut(action) }
    }

    var isStopped: Bool { state.withLockedValue { $0.runtime.stopped } }

    func carryOut(_ action: DialPlan<PeerAddress>.Action) {
        switch action {
        case .dial(let address, let target):
            // Recorded under the lock the task takes to remove itself: it cannot end before it is recorded.
            state.withLockedValue { state in
                state.dials.made += 1
                let id = state.dials.made
                state.dials.running[id] = NodeTask.start { [weak self] in
                    guard let self else { return }
                    let outcome = await self.dial(address)
                    self.state.withLockedValue { _ = $0.dials.running.removeValue(forKey: id) }
                    self.updateDialPlan { plan, now in plan.dialEnded(target, at: address, outcome, now: now, jitter: Self.jitter()) }
                }
            }
        case .unreachable(let address, let reason):
            continuation.yield(.unreachable(address: address.description, reason: reason))
        case .dialErrorChanged:
            reviewDiscovered()
        }
    }

    /// A wait's factor, 0.8–1.2: peers that lost each other at once do not all dial at once.
    static func jitter() -> Double { Double.random(in: 0.8...1.2) }

    /// Connects to `address` and waits until that connection ends.
    func dial(_ address: PeerAddress) async -> DialPlan<PeerAddress>.Outcome {
        let began = NIODeadline.now()
        do {
            let channel = try await endpoint.connect(host: address.host, port: address.port)
            let key = ObjectIdentifier(channel as AnyObject)
            let stopped = state.withLockedValue { state -> Bool in
                guard !state.runtime.stopped else { return true }
                state.dials.inHandshake[key] = (channel, address)
                // Its session may have started already: then learn whose address this is here.
                if let peer = state.connections.all.first(where: { $0.connection.connectionID == key })?.peer {
                    state.dials.plan.learned(address, is: peer)
                }
                return false
            }
            if stopped { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            state.withLockedValue { _ = $0.dials.inHandshake.removeValue(forKey: key) }
            return .ended(after: Double((NIODeadline.now() - began).nanoseconds) / 1e9)
        } catch {
            let reason = Self.describe(error)
            logger.info("cannot reach peer", metadata: ["address": "\(address)", "reason": "\(reason)"])
            return .unreachable(reason)
        }
    }

    /// A connection failure in a few words ("connection refused", "cannot resolve the host name").
    static func describe(_ error: Error) -> String {
        if let error = error as? NIOConnectionError {
            if let io = error.connectionErrors.lazy.compactMap({ $0.error as? IOError }).first { return describe(io) }
            if let first = error.connectionErrors.first { return "\(first.error)" }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve the host name \(error.host)" }
            return "no address found for \(error.host)"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        return "\(error)"
    }
}
