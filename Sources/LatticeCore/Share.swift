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
/// A participant's field holds its permission's history, each change with
/// the time it was made ("readOnly@T;readWrite@U"), so a write is judged by
/// the permission its writer had when it made it: writes a participant made
/// while it could stay, whatever comes after.
public struct Share: Sendable, Hashable {
    public static let recordName = "cloudkit.zoneshare"
    public static let recordType = "cloudkit_share"
    static let fieldPrefix = "participant_"

    public struct Change: Sendable, Hashable {
        public var permission: SharePermission
        public var time: HLCTimestamp
    }

    /// The owner's account ID (the zone ID's owner name).
    public var owner: String
    /// Each participant account's permission history, oldest first.
    public var participants: [String: [Change]]

    public init(owner: String, participants: [String: [Change]] = [:]) {
        self.owner = owner
        self.participants = participants
    }

    /// The share a live share record holds; nil for another record or a deleted one.
    public init?(_ state: RecordState, owner: String) {
        guard state.recordName == Self.recordName, state.isAlive else { return nil }
        self.owner = owner
        participants = [:]
        for (name, value) in state.presentFields {
            guard name.hasPrefix(Self.fieldPrefix), case .string(let text) = value,
                  let account = Self.account(fromField: name) else { continue }
            participants[account] = Self.history(text)
        }
    }

    /// The share a zone holds as `state` (its share record, or nil): none outside the shared database.
    public static func held(_ state: RecordState?, in zone: ZoneKey) -> Share? {
        guard zone.scope == .shared, let state else { return nil }
        return Share(state, owner: zone.zoneID.ownerName)
    }

    /// The permission `account` had at `time`: its last change at or before then.
    public func permission(of account: String, at time: HLCTimestamp) -> SharePermission? {
        participants[account]?.last(where: { $0.time <= time })?.permission
    }

    /// The permission `account` has now.
    public func currentPermission(of account: String) -> SharePermission? {
        participants[account]?.last?.permission
    }

    /// Accounts whose permission now is read-only or read-write.
    public var currentParticipants: [String: SharePermission] {
        participants.compactMapValues { $0.last?.permission }.filter { $0.value != .removed }
    }

    /// Whether the share ever named one of `accounts`: a removed participant
    /// still gets the share, to learn it was removed.
    public func lists(_ accounts: Set<String>) -> Bool {
        accounts.contains(owner) || accounts.contains { participants[$0] != nil }
    }

    /// Whether one of `accounts` may read the zone now: the owner or a participant.
    public func admits(_ accounts: Set<String>) -> Bool {
        accounts.contains(owner) || accounts.contains { currentParticipants[$0] != nil }
    }

    // MARK: The record's fields

    /// The field that holds `account`'s history: account IDs have dashes, which field names do not.
    public static func field(of account: String) -> String {
        fieldPrefix + account.filter { $0 != "-" }
    }

    /// An account ID from its field's name: eight groups of seven.
    static func account(fromField name: String) -> String? {
        guard name.hasPrefix(fieldPrefix) else { return nil }
        let plain = Array(name.dropFirst(fieldPrefix.count))
        guard plain.count == 56 else { return nil }
        return stride(from: 0, to: 56, by: 7).map { String(plain[$0..<$0 + 7]) }.joined(separator: "-")
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
    public static func appending(_ permission: SharePermission, at time: HLCTimestamp, to text: String?) -> String {
        let entry = "\(permission.rawValue)@\(time.rawValue)"
        guard let text, !text.isEmpty else { return entry }
        return text + ";" + entry
    }
}
