/// What a participant of a shared zone may do, as CKShare's permissions.
public enum SharePermission: String, Sendable, Hashable, CaseIterable {
    case readOnly
    case readWrite
    /// No longer a participant: removed by the owner, or left.
    case removed
}

/// A zone's share as its owner wrote it: CKShare's owner and participants,
/// kept as a record of the zone itself (`cloudkit.zoneshare`, as CloudKit
/// names a zone-wide share), so it travels with the zone and every replica
/// judges the zone's writes by the same share (`WriteRights`). Only the
/// owner's account writes it.
///
/// A participant's field holds its permission's history as the owner set
/// it, each change with the time it was made ("readOnly@T;readWrite@U"),
/// so a write is judged by the permission its writer had when it made it:
/// writes a participant made while it could stay, whatever comes after.
/// Only the owner's account writes it. A participant that leaves writes a
/// field of its own (`left_…`), whose stamp is the time it left: it can say
/// it left, and nothing else (a participant that could rewrite the owner's
/// text could make itself read-write).
package struct Share: Sendable, Hashable {
    package static let recordName = "cloudkit.zoneshare"
    package static let recordType = "cloudkit_share"
    static let fieldPrefix = "participant_"
    static let leftPrefix = "left_"
    /// What a leave field holds: its stamp, not its value, says when.
    static let leftValue = "removed"

    package struct Change: Sendable, Hashable {
        package var permission: SharePermission
        package var time: HLCTimestamp
        /// Whether the participant itself made it (it left), not the owner.
        package var isLeave = false
    }

    /// The owner's account ID (the zone ID's owner name).
    package var owner: String
    /// Each participant account's permission history, oldest first.
    package var participants: [String: [Change]]
    /// The participants' writes the owner's devices vouch for (`VouchedWrites`).
    package var vouched: VouchedWrites
    /// Devices an account of the zone (the owner's or a participant's)
    /// removed from itself, by device then account, each with its removal's
    /// mark (the roster's `writesUpTo`): a device of that account writes
    /// it here, since other accounts never hold that account's roster; past
    /// the mark, the removed device's writes are not that account's.
    package var removedDevices: [ReplicaID: [String: HLCTimestamp]] = [:]

    package init(owner: String, participants: [String: [Change]] = [:], vouched: VouchedWrites = VouchedWrites()) {
        self.owner = owner
        self.participants = participants
        self.vouched = vouched
    }

    /// The share a live share record holds; nil for another record or a deleted one.
    package init?(_ state: RecordState, owner: String) {
        guard state.recordName == Self.recordName, state.isAlive else { return nil }
        self.owner = owner
        participants = [:]
        vouched = VouchedWrites()
        var leaves: [String: HLCTimestamp] = [:]
        var earlierBuildRemovals: [ReplicaID: HLCTimestamp] = [:]
        for register in state.fields {
            if let removal = Self.removalField(register.name) {
                if case .string(let text)? = register.value, let raw = UInt64(text) {
                    if let account = removal.account {
                        removedDevices[removal.device, default: [:]][account] = HLCTimestamp(rawValue: raw)
                    } else {
                        earlierBuildRemovals[removal.device] = HLCTimestamp(rawValue: raw)
                    }
                }
                continue
            }
            if VouchedWrites.isField(register.name) {
                // An unreadable list vouches for nothing: the writes it meant wait for a readable one.
                if case .bytes(let bytes)? = register.value, let list = try? VouchedWrites(decoding: bytes) { vouched.formUnion(list) }
                continue
            }
            guard register.value != nil, let (account, isLeave) = Self.participantField(register.name) else { continue }
            if isLeave {
                leaves[account] = register.winner.stamp.time
            } else if case .string(let text)? = register.value {
                participants[account] = Self.history(text)
            }
        }
        // An earlier build's field of the owner's removal of a device counts where this build's does not name it:
        // the owner's devices write this build's, whose register alone keeps its last writer's mark.
        for (device, mark) in earlierBuildRemovals where removedDevices[device]?[owner] == nil {
            removedDevices[device, default: [:]][owner] = mark
        }
        // A leave after the owner's last word ends the participation; the owner's later word starts it again.
        for (account, time) in leaves {
            participants[account, default: []].append(Change(permission: .removed, time: time, isLeave: true))
            participants[account]!.sort { $0.time < $1.time }
        }
    }

    /// The share a zone holds as `state` (its share record, or nil): none outside the shared database.
    package static func held(_ state: RecordState?, in zone: ZoneKey) -> Share? {
        guard zone.scope == .shared, let state else { return nil }
        return Share(state, owner: zone.zoneID.ownerName)
    }

    /// The accounts (of `replica`'s, `of`) a write `replica` stamped
    /// `time` is no longer of: those that removed it before then.
    package func accountsLeft(by replica: ReplicaID, at time: HLCTimestamp, of: Set<String>) -> Set<String> {
        guard let marks = removedDevices[replica] else { return [] }
        return of.filter { account in marks[account].map { time > $0 } ?? false }
    }

    /// The permission `account` had at `time`: its last change at or before then.
    package func permission(of account: String, at time: HLCTimestamp) -> SharePermission? {
        participants[account]?.last(where: { $0.time <= time })?.permission
    }

    /// Whether a write `account` stamped `time` in its read-write time counts
    /// only if vouched for: the owner downgraded or removed the account after
    /// that stamp. A leave does not end it here: its stamp is the
    /// participant's word, and a leave backdated to before a write would
    /// otherwise free that write from the owner's revocation.
    package func requiresVouching(_ account: String, at time: HLCTimestamp) -> Bool {
        participants[account]?.contains { $0.time > time && !$0.isLeave && $0.permission != .readWrite } ?? false
    }

    /// How a write stamped `time` by a device of `accounts` stands.
    package enum Standing: Equatable, Sendable {
        /// None of them was read-write then.
        case notReadWrite
        case readWrite
        /// Read-write then, in a time the owner has since ended: it counts only if vouched for.
        case readWriteSinceEnded
    }

    package func standing(of accounts: Set<String>, at time: HLCTimestamp) -> Standing {
        let writable = accounts.filter { permission(of: $0, at: time) == .readWrite }
        if writable.isEmpty { return .notReadWrite }
        return writable.allSatisfy { requiresVouching($0, at: time) } ? .readWriteSinceEnded : .readWrite
    }

    /// Accounts whose read-write time the owner ended (a downgrade or a
    /// removal after a read-write grant): whose writes may need vouching.
    package var revokedAccounts: Set<String> {
        Set(participants.filter { _, history in
            guard let granted = history.first(where: { $0.permission == .readWrite })?.time else { return false }
            return history.contains { !$0.isLeave && $0.permission != .readWrite && $0.time > granted }
        }.keys)
    }

    /// The permission `account` has now.
    package func currentPermission(of account: String) -> SharePermission? {
        participants[account]?.last?.permission
    }

    /// Accounts whose permission now is read-only or read-write.
    package var currentParticipants: [String: SharePermission] {
        participants.compactMapValues { $0.last?.permission }.filter { $0.value != .removed }
    }

    /// Whether the share ever named one of `accounts`: a removed participant
    /// still gets the share, to learn it was removed.
    package func lists(_ accounts: Set<String>) -> Bool {
        accounts.contains(owner) || accounts.contains { participants[$0] != nil }
    }

    /// Whether one of `accounts` may read the zone now: the owner or a participant.
    package func admits(_ accounts: Set<String>) -> Bool {
        accounts.contains(owner) || accounts.contains { currentParticipants[$0] != nil }
    }

    // MARK: The record's fields

    /// The field that holds `account`'s history: account IDs have dashes, which field names do not.
    package static func field(of account: String) -> String {
        fieldPrefix + account.filter { $0 != "-" }
    }

    static let removedPrefix = "removed_"

    /// The field that holds the mark of `replica`'s removal from
    /// `account` (the owner's or a participant's): only a device of that
    /// account (or the owner's) writes it.
    package static func removedField(of replica: ReplicaID, from account: String) -> String {
        removedPrefix + account.filter { $0 != "-" } + "_" + replica.description
    }

    /// The device and account a removal field names, or nil for another
    /// field or another spelling than `removedField`'s (one device's removal
    /// has one field per account). The field a build before accounts were
    /// named in it wrote, `removed_REPLICA`, names no account: the owner's.
    static func removalField(_ name: String) -> (device: ReplicaID, account: String?)? {
        guard name.hasPrefix(removedPrefix) else { return nil }
        let rest = name.dropFirst(removedPrefix.count)
        if let device = ReplicaID(canonicalHex: rest) { return (device, nil) }
        guard rest.count == fieldAccountLength + 1 + 32, rest.dropLast(32).last == "_", let device = ReplicaID(canonicalHex: rest.suffix(32)),
              let account = account(inField: rest.prefix(fieldAccountLength)), removedField(of: device, from: account) == name else { return nil }
        return (device, account)
    }

    /// The field in which `account` says it left.
    package static func leftField(of account: String) -> String {
        leftPrefix + account.filter { $0 != "-" }
    }

    /// The account a share field is about, and whether it is the account's
    /// own leave field (else the owner's history of it); nil for another field.
    static func participantField(_ name: String) -> (account: String, isLeave: Bool)? {
        for (prefix, isLeave) in [(fieldPrefix, false), (leftPrefix, true)] where name.hasPrefix(prefix) {
            return account(inField: name.dropFirst(prefix.count)).map { ($0, isLeave) }
        }
        return nil
    }

    /// An account ID's length in a field name, without its dashes.
    static let fieldAccountLength = 56

    /// The account ID a field name spells without dashes (seven groups of seven, and one).
    static func account(inField plain: Substring) -> String? {
        let characters = Array(plain)
        guard characters.count == fieldAccountLength else { return nil }
        return stride(from: 0, to: fieldAccountLength, by: 7).map { String(characters[$0..<$0 + 7]) }.joined(separator: "-")
    }

    /// A history as its field holds it; unreadable parts are skipped.
    static func history(_ text: String) -> [Change] {
        text.split(separator: ";").compactMap { part in
            let pieces = part.split(separator: "@")
            guard pieces.count == 2, let permission = SharePermission(rawValue: String(pieces[0])),
                  let raw = UInt64(pieces[1]) else { return nil }
            return Change(permission: permission, time: HLCTimestamp(rawValue: raw))
        }.sorted { $0.time < $1.time }
    }

    /// The field's text once `permission` is appended at `time`.
    package static func appending(_ permission: SharePermission, at time: HLCTimestamp, to text: String?) -> String {
        let entry = "\(permission.rawValue)@\(time.rawValue)"
        guard let text, !text.isEmpty else { return entry }
        return text + ";" + entry
    }
}
