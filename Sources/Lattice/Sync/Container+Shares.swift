import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// A shared zone as this device holds it, as CKShare describes one: its
/// owner, and each participant account with its permission.
public struct ZoneShare: Sendable, Hashable {
    public struct Participant: Sendable, Hashable {
        /// The participant's account ID.
        public var account: String
        public var permission: SharePermission
        /// When the permission was last set, by the writer's clock.
        public var since: Date
    }

    /// The zone in the shared database: its name and its owner's account ID.
    public var zoneID: ZoneID
    /// Whether this device's account owns it.
    public var isOwner: Bool
    /// Every account the owner ever shared it with, removed ones too.
    public var participants: [Participant]
    /// This account's permission when it is a participant (removed once it left).
    public var permission: SharePermission?
    /// Live records held here, the share itself aside.
    public var records: Int
}

extension Container {
    /// This device's account ID: the ID of the account's first device (`lattice account` shows it as the founder).
    public var accountID: String {
        get throws(LatticeError) { try LatticeError.wrap { try store.read { try $0.accountID() } } }
    }

    /// Shares the zone `zoneName` with another account, read-write or
    /// read-only; sharing again changes the permission. A zone has one owner
    /// and one identity, `zoneName:ACCOUNT` in every participant's shared
    /// database; the owner's devices keep seeing it in their private database
    /// under its own name, as CloudKit's owner does (the store holds it once,
    /// in the shared database: its records are written there again by this
    /// device when first shared, and the private copy deleted on every device
    /// of the account).
    ///
    /// `participant` is an account ID, or a device ID this store has seen
    /// write in a shared zone (its account is then taken).
    @discardableResult
    public func share(zone zoneName: String, with participant: String, permission: SharePermission = .readWrite) throws(LatticeError) -> ZoneShare {
        guard permission != .removed else { throw LatticeError(.invalidArguments, "remove a participant with removeParticipant") }
        let account = try resolveAccount(participant)
        let key: ZoneKey = try LatticeError.wrap {
            try store.write { transaction in
                let own = try transaction.accountID()
                guard account != own else {
                    throw LatticeError(.invalidArguments, "\(participant) is this device's own account; share with another account's ID (its first device's, `lattice account` prints it as founder)")
                }
                let key = ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: zoneName, ownerName: own))
                if try transaction.syncState(of: key)?.zoneState.exists != true {
                    try moveToSharedDatabase(zoneName, to: key, in: transaction)
                }
                try transaction.setSharePermission(permission, of: account, in: key)
                return key
            }
        }
        return try zoneShare(key)
    }

    /// Removes a participant account from a share of this account: it
    /// receives nothing new, and its writes after this are refused everywhere.
    public func removeParticipant(_ participant: String, fromZone zoneName: String) throws(LatticeError) {
        let account = try resolveAccount(participant)
        try LatticeError.wrap {
            try store.write { transaction in
                let key = ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: zoneName, ownerName: try transaction.accountID()))
                guard let share = try transaction.share(of: key) else {
                    throw LatticeError(.zoneNotFound, "this account shares no zone named \(zoneName); `lattice share list` shows the shares")
                }
                guard let current = share.currentPermission(of: account), current != .removed else {
                    throw LatticeError(.unknownItem, "account \(account) is not a participant of \(zoneName)")
                }
                try transaction.setSharePermission(.removed, of: account, in: key)
            }
        }
    }

    /// Leaves a zone another account shared with this one: the owner's
    /// devices stop sending it, and this account's writes to it are refused.
    /// The copy held here stays, read-only.
    public func leaveShare(_ zoneID: ZoneID) throws(LatticeError) {
        try LatticeError.wrap {
            try store.write { transaction in
                let key = ZoneKey(scope: .shared, zoneID: zoneID)
                let own = try transaction.accountID()
                guard zoneID.ownerName != own else {
                    throw LatticeError(.invalidArguments, "this account owns \(zoneID.zoneName); remove its participants instead (`lattice share remove`)")
                }
                guard let share = try transaction.share(of: key) else {
                    if try transaction.shareInvitations(accepted: true).contains(where: { $0.zone == zoneID }) {
                        try transaction.removeShareInvitation(zoneID)
                        return
                    }
                    throw LatticeError(.zoneNotFound, "no shared zone \(zoneID) is held here; `lattice share list` shows them")
                }
                guard let current = share.currentPermission(of: own), current != .removed else {
                    throw LatticeError(.invalidArguments, "this account is not a participant of \(zoneID) any more")
                }
                try transaction.setSharePermission(.removed, of: own, in: key)
                try transaction.removeShareInvitation(zoneID)
            }
        }
    }

    /// Shares offered to this account by other accounts' devices, not accepted yet.
    public func shareInvitations() throws(LatticeError) -> [ShareInvitation] {
        try LatticeError.wrap { try store.read { try $0.shareInvitations() } }
    }

    /// Accepts an invitation, by zone name (when one invitation has it) or
    /// `NAME:OWNER`: the zone is taken from the devices that offer it, and
    /// shows in the shared database once it arrives.
    @discardableResult
    public func acceptShare(_ text: String) throws(LatticeError) -> ZoneID {
        try LatticeError.wrap {
            try store.write { transaction in
                let invitations = try transaction.shareInvitations()
                let matches = invitations.filter { Self.names($0.zone, text) }
                guard !matches.isEmpty else {
                    throw LatticeError(.unknownItem, "no invitation to \(text); `lattice share invitations` lists them (a running node notes them as other accounts' devices offer their shares)")
                }
                guard matches.count == 1 else {
                    throw LatticeError(.invalidArguments, "\(matches.count) invitations to zones named \(text); name one as ZONE:OWNER (\(matches.map(\.zone.description).joined(separator: ", ")))")
                }
                try transaction.acceptShareInvitation(matches[0].zone)
                return matches[0].zone
            }
        }
    }

    /// Whether `text` names `zone`: its name, or `NAME:OWNER` with the owner's account ID or a prefix of it.
    static func names(_ zone: ZoneID, _ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":") else { return zone.zoneName == text }
        let owner = text[text.index(after: colon)...].uppercased()
        return zone.zoneName == text[..<colon] && !owner.isEmpty && zone.ownerName.hasPrefix(owner)
    }

    /// The shared zones this device holds (its account's and others'), with their shares.
    public func shares() throws(LatticeError) -> [ZoneShare] {
        let keys = try LatticeError.wrap { try store.read { try $0.zones(in: .shared).filter { $0.sync.zoneState.exists }.map(\.key) } }
        var shares: [ZoneShare] = []
        for key in keys { shares.append(try zoneShare(key)) }
        return shares.sorted { $0.zoneID.description < $1.zoneID.description }
    }

    func zoneShare(_ key: ZoneKey) throws(LatticeError) -> ZoneShare {
        try LatticeError.wrap {
            try store.read { snapshot in
                let own = try snapshot.accountID()
                let share = try snapshot.share(of: key) ?? Share(owner: key.zoneID.ownerName)
                let participants = share.participants.compactMap { account, history in
                    history.last.map { ZoneShare.Participant(account: account, permission: $0.permission, since: Date(timeIntervalSince1970: Double($0.time.milliseconds) / 1000)) }
                }.sorted { $0.account < $1.account }
                let live = try snapshot.liveRecordCount(in: key) - (try snapshot.record(Share.recordName, in: key)?.isAlive == true ? 1 : 0)
                return ZoneShare(
                    zoneID: key.zoneID, isOwner: key.zoneID.ownerName == own, participants: participants,
                    permission: share.currentPermission(of: own), records: live)
            }
        }
    }

    /// An account ID from an account or device ID: a device this store knows
    /// to be of one other account stands for it.
    func resolveAccount(_ text: String) throws(LatticeError) -> String {
        let id = try Self.parseDeviceID(text)
        let accounts = try LatticeError.wrap {
            try store.read { snapshot in snapshot.accounts(of: ReplicaID(device: id)).subtracting([try snapshot.accountID()]) }
        }
        guard accounts.count <= 1 else {
            throw LatticeError(.invalidArguments, "device \(id) is listed by \(accounts.count) accounts (\(accounts.sorted().joined(separator: ", "))); name the account")
        }
        return accounts.first ?? id.description
    }

    /// Moves a private zone into the shared database under this account's
    /// name: its live records are written there again, and it is deleted.
    private func moveToSharedDatabase(_ zoneName: String, to key: ZoneKey, in transaction: StoreTransaction) throws {
        let source = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: zoneName))
        guard !source.zoneID.isDefault else {
            throw LatticeError(.invalidArguments, "the default zone cannot be shared, as in CloudKit: share a zone of its own (`lattice zone create`)")
        }
        guard try transaction.syncState(of: source)?.zoneState.exists == true else {
            throw LatticeError(.zoneNotFound, "zone \(zoneName) does not exist in the private database; create it (`lattice zone create \(zoneName)`) and share it")
        }
        try transaction.createZone(key)
        for (state, _) in try transaction.records(changedAfter: 0, in: source) where state.isAlive {
            try transaction.save(state.recordName, type: state.recordType, in: key, changes: state.presentFields.map { ($0.name, $0.value) })
        }
        try transaction.deleteZone(source)
    }
}
