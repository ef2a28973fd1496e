import Foundation
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// A device this one knows of: trusted (part of the account) or only seen.
public struct Peer: Sendable, Hashable {
    public var deviceID: String
    public var name: String?
    public var trusted: Bool
    /// A member of this device's account (its roster), trusted on every device of it.
    public var member: Bool = false
    /// Removed from the account: refused, whatever else says.
    public var removed: Bool = false
    /// Where it last connected from or was reached at.
    public var address: String?
    /// When it last completed a handshake with this device.
    public var lastSeen: Date?
    /// Batches from it refused because their writes were not what their writers
    /// signed (a forged or tampered write, a claim beyond a signed head).
    public var refusedWrites: Int = 0
    /// Why the last one was refused.
    public var lastRefusedWrite: String?
}

extension Container {
    /// Trusts a device by hand, on this device alone: once it trusts this one
    /// too, both sync the private database. The account's roster (`lattice
    /// pair`) is what makes every device trust a new one; this is for one-off
    /// cases. A device removed from the account cannot be trusted again.
    /// Re-trusting renames it.
    public func trust(deviceID text: String, name: String? = nil) throws(LatticeError) {
        let id = try Self.parseDeviceID(text)
        if let row = try LatticeError.wrap({ try store.read { try $0.peer(id.description) } }), row.removed {
            throw LatticeError(.permissionFailure, "device \(id) was removed from this account; it can join again only as a new device (a new store, then `lattice pair`)")
        }
        guard id.description != deviceID else { throw LatticeError(.invalidArguments, "\(id) is this device's own ID; trust the other device's ID (it prints it with `lattice id`)") }
        if let name, name.isEmpty || name.count > 100 || name.contains(where: \.isNewline) {
            throw LatticeError(.invalidArguments, "a device name has 1 to 100 characters on one line")
        }
        try LatticeError.wrap { try store.write { try $0.upsertPeer(id.description, name: name, trusted: true) } }
    }

    /// Stops trusting a device trusted by hand: it is refused from its next
    /// connection on. A member of the account is removed with `removeDevice`.
    public func untrust(deviceID text: String) throws(LatticeError) {
        let id = try Self.parseDeviceID(text)
        if let row = try LatticeError.wrap({ try store.read { try $0.peer(id.description) } }), row.member {
            throw LatticeError(.invalidArguments, "device \(id) is a member of this account; `lattice account remove \(id)` removes it from every device of the account (untrust only undoes `lattice trust`)")
        }
        let known = try LatticeError.wrap { try store.write { try $0.untrustPeer(id.description) } }
        if !known { throw LatticeError(.unknownItem, "device \(id) is not known here; `lattice peers` lists the known ones") }
    }

    public func peers() throws(LatticeError) -> [Peer] {
        try LatticeError.wrap {
            try store.read { try $0.peers() }.map { row in
                Peer(deviceID: row.deviceID, name: row.name, trusted: row.trusted, member: row.member, removed: row.removed, address: row.address,
                     lastSeen: row.lastSeen.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                     refusedWrites: row.refusedWrites, lastRefusedWrite: row.lastRefusedWrite)
            }
        }
    }

    static func parseDeviceID(_ text: String) throws(LatticeError) -> DeviceID {
        guard let id = DeviceID(text) else {
            throw LatticeError(.invalidArguments, "\"\(text)\" is not a device ID: expected eight groups of seven letters and digits as `lattice id` prints them (a typo fails the check characters)")
        }
        return id
    }
}
