import Foundation
import LatticeCrypto
import LatticeProtocol
import LatticeStore
import LatticeTransport

/// How a pairing ended: the device now trusted, and the verifier both screens show.
public struct PairedDevice: Sendable, Hashable {
    public var deviceID: String
    public var name: String
    public var verifier: String
}

extension Container {
    /// Offers `code` on `host:port` (0: any free port) until a device joins
    /// with it, then trusts that device. Fails when the code expires or wrong
    /// attempts spend it; `listening` is told the port, `attemptFailed` each
    /// failed attempt. Works whether or not a node runs on this store: a
    /// running node reads the new trust on the commit's wake-up.
    public func invite(
        code: PairingCode, host: String = "0.0.0.0", port: Int = 0,
        lifetimeMilliseconds: UInt64 = PairingOffer.defaultLifetimeMilliseconds,
        listening: @escaping @Sendable (Int) -> Void = { _ in }, attemptFailed: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(LatticeError) -> PairedDevice {
        let identity = store.identity
        let name = (try? deviceName()) ?? nil
        let container = containerIdentifier
        let offer = PairingOffer(code: code, now: RecordStore.systemWallClock(), lifetimeMilliseconds: lifetimeMilliseconds)
        let outcome = try Self.pairing {
            try PairingEndpoint.invite(
                offer: offer, makeInviter: { PairingInviter(code: code, identity: identity, name: name ?? "", container: container) },
                host: host, port: port, wallClock: { RecordStore.systemWallClock() }, listening: listening,
                attemptFailed: { attemptFailed($0.description) })
        }
        return try adopt(outcome)
    }

    /// Joins the device offering `code` at `host:port` and trusts it.
    public func join(code: PairingCode, host: String, port: Int) throws(LatticeError) -> PairedDevice {
        let name = (try? deviceName()) ?? nil
        let outcome = try Self.pairing {
            try PairingEndpoint.join(try PairingJoiner(code: code, identity: store.identity, name: name ?? "", container: containerIdentifier), host: host, port: port)
        }
        return try adopt(outcome)
    }

    private func adopt(_ outcome: PairingOutcome) throws(LatticeError) -> PairedDevice {
        let name = outcome.peer.name.isEmpty ? nil : String(outcome.peer.name.prefix(64))
        try trust(deviceID: outcome.deviceID.description, name: name)
        return PairedDevice(deviceID: outcome.deviceID.description, name: name ?? "", verifier: outcome.verifier)
    }

    private static func pairing(_ body: () throws -> PairingOutcome) throws(LatticeError) -> PairingOutcome {
        do { return try body() } catch let failure as PairingFailure {
            switch failure {
            case .wrongCode, .tooManyAttempts: throw LatticeError(.permissionFailure, failure.description)
            case .expired: throw LatticeError(.networkUnavailable, failure.description)
            case .containerMismatch: throw LatticeError(.badContainer, failure.description)
            case .refusedByPeer, .malformed, .ownDevice: throw LatticeError(.networkUnavailable, failure.description)
            }
        } catch let error as LatticeError {
            throw error
        } catch {
            throw LatticeError(.networkUnavailable, "cannot reach the other device: \(error)")
        }
    }
}
