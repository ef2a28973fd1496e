import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// An account as this device's roster has it: who is in it, who was removed.
public struct Account: Sendable, Hashable {
    public struct Device: Sendable, Hashable {
        public var deviceID: String
        public var name: String?
        public var isThisDevice: Bool
        /// The device that added it; nil for the founder.
        public var addedBy: String?
        public var addedAt: Date?
    }

    public struct RemovedDevice: Sendable, Hashable {
        public var deviceID: String
        public var name: String?
        public var removedBy: String
        public var removedAt: Date
    }

    /// The device that founded the account.
    public var founder: String
    public var devices: [Device]
    public var removed: [RemovedDevice]
}

extension Container {
    /// This device's account: the devices its roster lists, oldest first, and the removed ones.
    public func account() throws(LatticeError) -> Account {
        try LatticeError.wrap {
            let (roster, peers) = try store.read { (try $0.roster(), try $0.peers()) }
            // The roster names a device as its adder called it; a name given here wins, and the founder has none there.
            var names = Dictionary(peers.compactMap { peer in peer.name.map { (peer.deviceID, $0) } }, uniquingKeysWith: { first, _ in first })
            names[deviceID] = (try? deviceName()) ?? nil
            let state = roster.state
            let own = store.identity.publicKey
            func id(_ key: [UInt8]) throws -> String { try DeviceID(publicKey: key).description }
            func date(_ milliseconds: UInt64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
            let devices = try state.members.values.sorted { ($0.addedAt ?? 0, $0.seniority) < ($1.addedAt ?? 0, $1.seniority) }.map { member in
                Account.Device(
                    deviceID: try id(member.publicKey), name: try names[id(member.publicKey)] ?? (member.name.isEmpty ? nil : member.name), isThisDevice: member.publicKey == own,
                    addedBy: try member.addedBy.map(id), addedAt: member.addedAt.map(date))
            }
            let removed = try state.removed.values.sorted { $0.removedAt < $1.removedAt }.map { removal in
                Account.RemovedDevice(deviceID: try id(removal.publicKey), name: try names[id(removal.publicKey)] ?? (removal.name.isEmpty ? nil : removal.name), removedBy: try id(removal.removedBy), removedAt: date(removal.removedAt))
            }
            return Account(founder: try id(roster.founder), devices: devices, removed: removed)
        }
    }

    /// Removes a device from the account: a signed roster entry that every
    /// member takes on its next sync (a running node tells connected members
    /// at once). From then on members refuse the device's connections, and
    /// its writes stamped after the latest one this device holds.
    public func removeDevice(_ text: String) throws(LatticeError) {
        let id = try Self.parseDeviceID(text)
        guard id.description != deviceID else {
            throw LatticeError(.invalidArguments, "\(id) is this device; remove it from another device of the account")
        }
        try LatticeError.wrap {
            try store.write { transaction in
                let state = try transaction.roster().state
                guard state.members[store.identity.publicKey] != nil else {
                    throw LatticeError(.permissionFailure, "this device was removed from its account and cannot remove others")
                }
                if state.removed.keys.contains(where: { (try? DeviceID(publicKey: $0)) == id }) {
                    throw LatticeError(.invalidArguments, "device \(id) was removed from the account already")
                }
                guard let member = state.members.values.first(where: { (try? DeviceID(publicKey: $0.publicKey)) == id }) else {
                    throw LatticeError(.unknownItem, "device \(id) is not in this account; `lattice account` lists the devices (a device trusted by hand is untrusted with `lattice untrust`)")
                }
                let held = try transaction.heldWrites(of: try WriteBlock.replica(of: member.publicKey))
                _ = try transaction.signRosterEntry(.remove(writesUpTo: held), subject: member.publicKey)
            }
        }
    }
}
