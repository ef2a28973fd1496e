import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeDiscovery
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeTransport
import NIOConcurrencyHelpers

/// How a pairing ended: the other device, the verifier both screens show,
/// and how many devices the account has now.
public struct PairedDevice: Sendable, Hashable {
    public var deviceID: String
    public var name: String
    public var verifier: String
    public var accountDevices: Int
}

extension Container {
    /// How long an invitation's code works unless `invite` is told otherwise: two minutes.
    public static let pairingCodeLifetimeMilliseconds: UInt64 = PairingOffer.defaultLifetimeMilliseconds

    /// Offers `code` on `host:port` (0: any free port) until a device joins
    /// with it, then adds that device to the account's roster (signed by this
    /// device), which the joiner receives whole and every member learns on
    /// its next sync. Fails when the code expires or wrong
    /// attempts spend it; `listening` is told the port, `attemptFailed` each
    /// failed attempt. Works whether or not a node runs on this store: a
    /// running node reads the new trust on the commit's wake-up. With
    /// `advertise`, the offer is on mDNS while it lives (see `join`).
    public func invite(
        code: PairingCode, host: String = "0.0.0.0", port: Int = 0, advertise: Bool = true,
        lifetimeMilliseconds: UInt64 = Container.pairingCodeLifetimeMilliseconds,
        listening: @escaping @Sendable (Int) -> Void = { _ in }, attemptFailed: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(LatticeError) -> PairedDevice {
        let identity = store.identity
        let name = (try? deviceName()) ?? nil
        let container = containerIdentifier
        let offer = PairingOffer(code: code, now: RecordStore.systemWallClock(), lifetimeMilliseconds: lifetimeMilliseconds)
        let store = self.store
        let signed = NIOLockedValueBox<AccountRoster?>(nil)
        // Once the joiner is known: the roster with it added, told to it inside the sealed exchange.
        let rosterAdding: @Sendable (PairingIntroduction) throws -> [UInt8] = { joiner in
            var roster = try store.read { try $0.roster() }
            let state = roster.state
            if let removal = state.removed[joiner.publicKey] {
                let by = (try? DeviceID(publicKey: removal.removedBy).description) ?? "?"
                throw PairingFailure.notAllowed("this device was removed from the account (by \(by)); it can join again only as a new device (a new store, `lattice init`)")
            }
            guard state.members[identity.publicKey] != nil else {
                throw PairingFailure.notAllowed("the inviting device was removed from its account and cannot add devices")
            }
            if state.members[joiner.publicKey] == nil {
                do {
                    try roster.sign(.add(name: RosterEntry.name(fitting: joiner.name)), subject: joiner.publicKey, by: identity, at: RecordStore.systemWallClock())
                } catch let error as RosterError {
                    throw PairingFailure.notAllowed("this account cannot add a device now: \(error)")
                }
            }
            signed.withLockedValue { $0 = roster }
            // The joiner's chain and the inviter's first; the rest, past a message, comes when the joiner first syncs.
            return roster.encoded(fitting: PairingMessage.maximumIntroductionLength - 16 * 1024, first: [joiner.publicKey, identity.publicKey])
        }
        let advertisement = NIOLockedValueBox<ServiceDiscovery?>(nil)
        defer { advertisement.withLockedValue { $0 }?.stop() }
        let deviceID = self.deviceID
        let outcome = try Self.pairing {
            try PairingEndpoint.invite(
                offer: offer, makeInviter: { PairingInviter(code: code, identity: identity, name: name ?? "", container: container, extra: rosterAdding) },
                host: host, port: port, wallClock: { RecordStore.systemWallClock() },
                listening: { port in
                    if advertise {
                        let discovery = PairingDiscovery.advertise(code: code, port: port, deviceID: deviceID, container: container)
                        advertisement.withLockedValue { $0 = discovery }
                    }
                    listening(port)
                },
                attemptFailed: { attemptFailed($0.description) })
        }
        guard let roster = signed.withLockedValue({ $0 }) else { throw LatticeError(.internalError, "the pairing ended without a roster") }
        return try adopt(outcome, roster: roster, joining: false)
    }

    /// Joins the device offering `code` at `host:port`: this device takes
    /// that device's account (its roster, which now adds this device) and
    /// leaves the one it had.
    public func join(code: PairingCode, host: String, port: Int) throws(LatticeError) -> PairedDevice {
        try join(code: code, addresses: [host], port: port)
    }

    /// Joins the device that offers `code` on this network, found by mDNS
    /// within `timeout` seconds. The offer's TXT record carries the code's
    /// hint, which anyone can advertise too: every offer with the hint is
    /// tried until one pairs, so a device that answers first with a wrong
    /// key cannot make the pairing fail while the real offer is there.
    public func join(code: PairingCode, searchingFor timeout: Double = 10) throws(LatticeError) -> PairedDevice {
        let offers = try PairingDiscovery.find(code: code, container: containerIdentifier, timeout: timeout)
        var failures: [LatticeError] = []
        for offer in offers {
            do { return try join(code: code, addresses: offer.addresses, port: offer.port) } catch { failures.append(error) }
        }
        // The real offer answers a right code; of the rest, a wrong code says the most.
        throw failures.first { $0.code == .permissionFailure } ?? failures.last!
    }

    /// Tries each address in turn until one answers: an answer, even a
    /// refusal (a wrong code), ends it; only a connection that fails moves on.
    private func join(code: PairingCode, addresses: [String], port: Int) throws(LatticeError) -> PairedDevice {
        let name = (try? deviceName()) ?? nil
        let outcome = try Self.pairing {
            var unreachable: Error = PairingEndpointError.noAddress
            for host in addresses {
                do {
                    let joiner = try PairingJoiner(code: code, identity: store.identity, name: name ?? "", container: containerIdentifier)
                    return try PairingEndpoint.join(joiner, host: host, port: port)
                } catch let failure as PairingFailure {
                    throw failure
                } catch {
                    unreachable = error
                }
            }
            throw unreachable
        }
        let roster: AccountRoster
        do {
            roster = try AccountRoster(decoding: outcome.peer.extra)
        } catch {
            throw LatticeError(.networkUnavailable, "the other device sent an account roster that does not hold: \(error)")
        }
        let members = roster.state.members
        guard members[store.identity.publicKey] != nil, members[outcome.peer.publicKey] != nil else {
            throw LatticeError(.networkUnavailable, "the other device's roster does not add this device to its account")
        }
        return try adopt(outcome, roster: roster, joining: true)
    }

    private func adopt(_ outcome: PairingOutcome, roster: AccountRoster, joining: Bool) throws(LatticeError) -> PairedDevice {
        let name = outcome.peer.name.isEmpty ? nil : String(outcome.peer.name.prefix(64))
        let members = try LatticeError.wrap {
            try store.write { transaction in
                try transaction.adoptRoster(roster, joining: joining)
                if let name { try transaction.upsertPeer(outcome.deviceID.description, name: name, trusted: nil) }
                return try transaction.roster().state.members.count
            }
        }
        return PairedDevice(deviceID: outcome.deviceID.description, name: name ?? "", verifier: outcome.verifier, accountDevices: members)
    }

    private static func pairing(_ body: () throws -> PairingOutcome) throws(LatticeError) -> PairingOutcome {
        do { return try body() } catch let failure as PairingFailure {
            switch failure {
            case .wrongCode, .tooManyAttempts: throw LatticeError(.permissionFailure, failure.description)
            case .expired: throw LatticeError(.networkUnavailable, failure.description)
            case .containerMismatch: throw LatticeError(.badContainer, failure.description)
            case .notAllowed: throw LatticeError(.permissionFailure, failure.description)
            case .refusedByPeer, .malformed, .ownDevice, .busy, .timedOut: throw LatticeError(.networkUnavailable, failure.description)
            }
        } catch let error as LatticeError {
            throw error
        } catch {
            throw LatticeError(.networkUnavailable, "cannot reach the other device: \(error)")
        }
    }
}

/// No address was given to reach the inviting device at.
private enum PairingEndpointError: Error, CustomStringConvertible {
    case noAddress
    var description: String { "no address to reach it at" }
}
