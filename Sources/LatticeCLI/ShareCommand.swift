import ArgumentParser
import Foundation
import Lattice

struct ShareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share", abstract: "Share a zone with another account, and take part in others' shares.",
        discussion: """
            A shared zone lives in the shared database of every account that holds it, named ZONE:OWNER (OWNER: the owner's account ID). \
            The owner writes anything; a read-write participant writes records; a read-only one reads. Every device checks every write it receives against the share, so a change relayed by a third device is judged alike.
            Example: lattice share Lists --with ABCDEFG-...            (read-write; --read-only for read-only)
                     lattice share invitations                          (on the other account's device)
                     lattice share accept Lists
                     lattice record save Lists/eggs --database shared --type Item title=Eggs
                     lattice share remove Lists --with ABCDEFG-...
            """,
        subcommands: [Add.self, Invitations.self, Accept.self, List.self, Remove.self, Leave.self], defaultSubcommand: Add.self)

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add", abstract: "Share a zone of this account with another account (again: change its permission).",
            discussion: """
                The owner keeps the zone in its private database under its own name, as in CloudKit; participants see it in their shared database as NAME:OWNER.
                ID is the other account's ID (its first device's ID: `lattice account` prints it as founder), or a device ID this store has seen write in a shared zone.
                Example: lattice share Lists --with ABCDEFG-... --read-only
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String
        @Option(name: .customLong("with"), help: ArgumentHelp("The account (or one of its devices) to share with.", valueName: "ID")) var participant: String
        @Flag(name: .customLong("read-only"), help: "The participant reads but does not write.") var readOnly = false

        func run() throws {
            let container = try options.openContainer()
            let permission: SharePermission = readOnly ? .readOnly : .readWrite
            let share = try library { try container.share(zone: zone, with: participant, permission: permission) }
            Output.emit(ShareAdded(share: SharesOutput.Share(share), participant: participant, permission: permission), json: options.json)
        }
    }

    struct Invitations: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "invitations", abstract: "Shares other accounts' devices offered this account, not accepted yet.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let container = try options.openContainer()
            let invitations = try library { try container.shareInvitations() }
            let formatter = ISO8601DateFormatter()
            Output.emit(InvitationsOutput(invitations: invitations.map {
                .init(zoneID: WebServicesZoneID($0.zone), offeredBy: $0.offeredBy, offeredAt: formatter.string(from: $0.offeredAt))
            }), json: options.json)
        }
    }

    struct Accept: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "accept",
            abstract: "Accept an invitation: the zone comes from the devices that offer it.",
            discussion: "Example: lattice share accept Lists    (or Lists:OWNER when two invitations name Lists)")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The invitation's zone: NAME, or NAME:OWNER.") var invitation: String

        func run() throws {
            let container = try options.openContainer()
            let zone = try library { try container.acceptShare(invitation) }
            Output.emit(ZonesOutput(zones: [WebServicesZone(zone)], event: .accepted), json: options.json)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "The shared zones held here: owner, participants and permissions.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let container = try options.openContainer()
            let shares = try library { try container.shares() }
            Output.emit(SharesOutput(shares: shares.map(SharesOutput.Share.init)), json: options.json)
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove",
            abstract: "Remove a participant from a share of this account.",
            discussion: "It receives nothing new, and its writes made after this are refused on every device. Example: lattice share remove Lists --with ABCDEFG-...")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String
        @Option(name: .customLong("with"), help: ArgumentHelp("The participant account (or one of its devices).", valueName: "ID")) var participant: String

        func run() throws {
            let container = try options.openContainer()
            try library { try container.removeParticipant(participant, fromZone: zone) }
            Output.emit(ParticipantRemoved(removed: participant, zone: zone), json: options.json)
        }
    }

    struct Leave: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "leave",
            abstract: "Leave a zone another account shares with this one.",
            discussion: "The owner's devices stop sending it, and this account's writes to it are refused; the copy held here stays, read-only. Example: lattice share leave Lists")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The zone: NAME, or NAME:OWNER.") var zone: String

        func run() throws {
            let container = try options.openContainer()
            let zoneID = try library { try container.sharedCloudDatabase.resolveZoneID(Zone.ID(zoneName: zone)) }
            try library { try container.leaveShare(zoneID) }
            Output.emit(ShareLeft(left: zoneID.description), json: options.json)
        }
    }
}

extension ShareInvitation {
    var offeredAt: Date { Date(timeIntervalSince1970: Double(receivedAt) / 1000) }
}

extension SharePermission {
    var words: String {
        switch self {
        case .readOnly: return "read-only"
        case .readWrite: return "read-write"
        case .removed: return "removed"
        }
    }

    /// The words for a permission as JSON names it (its raw value).
    static func words(_ rawValue: String) -> String { SharePermission(rawValue: rawValue)?.words ?? rawValue }
}

/// What `share add` prints. Its JSON is `share list`'s, with the one share.
struct ShareAdded: CommandOutput {
    var share: SharesOutput.Share
    /// The account (or device) as the command line named it, and the permission given it: people are shown both.
    var participant: String
    var permission: SharePermission

    func encode(to encoder: Encoder) throws { try SharesOutput(shares: [share]).encode(to: encoder) }

    var text: String {
        "shared \(share.zoneID.zoneName) (\(share.zoneID.displayName)) with \(participant), \(permission.words); it accepts with `lattice share accept \(share.zoneID.zoneName)`"
    }
}

/// What `share remove` prints.
struct ParticipantRemoved: CommandOutput {
    var removed: String
    /// The zone as the command line named it, which people are shown.
    var zone: String

    enum CodingKeys: String, CodingKey { case removed }

    var text: String { "removed \(removed) from \(zone)" }
}

/// What `share leave` prints.
struct ShareLeft: CommandOutput {
    /// The zone: NAME:OWNER.
    var left: String
    var text: String { "left \(left)" }
}

/// What `share list` prints.
struct SharesOutput: CommandOutput {
    struct Participant: Encodable {
        var account: String
        var permission: String
        var since: String
    }

    struct Share: Encodable {
        var zoneID: WebServicesZoneID
        var owner: Bool
        @Nullable var permission: String?
        var participants: [Participant]
        var records: Int

        init(_ share: ZoneShare) {
            let formatter = ISO8601DateFormatter()
            zoneID = WebServicesZoneID(share.zoneID)
            owner = share.isOwner
            permission = share.permission?.rawValue
            participants = share.participants.map { Participant(account: $0.account, permission: $0.permission.rawValue, since: formatter.string(from: $0.since)) }
            records = share.records
        }
    }

    var shares: [Share]

    /// A line per share, then a line per participant of it.
    var text: String {
        guard !shares.isEmpty else { return "no shared zones: share one with `lattice share ZONE --with ID`, or accept an invitation (`lattice share invitations`)" }
        var lines: [String] = []
        for share in shares {
            let role = share.owner ? "owned by this account" : "owned by \(share.zoneID.ownerName), \(share.permission.map(SharePermission.words) ?? "not a participant")"
            lines.append("\(share.zoneID.zoneName)\t\(role)\t\(Output.count(share.records, "record"))")
            for participant in share.participants {
                lines.append("  \(participant.account)\t\(SharePermission.words(participant.permission))")
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// What `share invitations` prints.
struct InvitationsOutput: CommandOutput {
    struct Invitation: Encodable {
        var zoneID: WebServicesZoneID
        var offeredBy: String
        var offeredAt: String
    }

    var invitations: [Invitation]

    var text: String {
        guard !invitations.isEmpty else { return "no invitations: a running node notes them as other accounts' devices offer their shares" }
        return Output.table(header: ["ZONE", "OWNER", "OFFERED BY", "AT"], rows: invitations.map { [$0.zoneID.zoneName, $0.zoneID.ownerName, $0.offeredBy, $0.offeredAt] })
    }
}
