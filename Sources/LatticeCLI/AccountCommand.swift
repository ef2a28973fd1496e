import ArgumentParser
import Foundation
import Lattice

struct AccountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "The devices of this device's account, and removing one from all of them.",
        discussion: """
            An account is the devices that sync one private database. Its roster (who added whom, removals) is signed by the devices that changed it and syncs to every member, so a device added by `lattice pair` on any member is trusted by all of them.
            `lattice trust` is for one-off cases: it trusts a device on this device alone and puts nothing in the roster.
            Example: lattice account
                     lattice account remove ABCDEFG-...
            """,
        subcommands: [ListAccount.self, RemoveDevice.self], defaultSubcommand: ListAccount.self)
}

struct ListAccount: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the account's devices and the removed ones.")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let account = try library { try container.account() }
        let formatter = ISO8601DateFormatter()
        Output.emit(AccountOutput(
            founder: account.founder,
            devices: account.devices.map {
                .init(deviceID: $0.deviceID, name: $0.name, thisDevice: $0.isThisDevice, addedBy: $0.addedBy, addedAt: $0.addedAt.map(formatter.string))
            },
            removed: account.removed.map {
                .init(deviceID: $0.deviceID, name: $0.name, removedBy: $0.removedBy, removedAt: formatter.string(from: $0.removedAt))
            }), json: options.json)
    }
}

struct RemoveDevice: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a device from the account, on every device of it.",
        discussion: """
            Signs a roster entry that every member takes on its next sync (a running node tells connected members at once). Members then refuse the device's connections, and its writes stamped after the latest one this device holds of it. The device can join again only as a new device (a new store).
            Example: lattice account remove ABCDEFG-...
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The device's ID, as `lattice account` prints it.") var deviceID: String

    func run() throws {
        let container = try options.openContainer()
        try asUsage { try container.removeDevice(deviceID) }
        Output.emit(DeviceRemoved(removed: deviceID), json: options.json)
    }
}

/// What `account remove` prints.
struct DeviceRemoved: CommandOutput {
    var removed: String
    var text: String { "removed \(removed) from the account; members refuse it from their next sync" }
}

/// What `account` prints: the roster's members and removed devices.
struct AccountOutput: CommandOutput {
    struct Member: Encodable {
        var deviceID: String
        @Nullable var name: String?
        var thisDevice: Bool
        @Nullable var addedBy: String?
        @Nullable var addedAt: String?
    }

    struct Removed: Encodable {
        var deviceID: String
        @Nullable var name: String?
        var removedBy: String
        var removedAt: String
    }

    var founder: String
    var devices: [Member]
    var removed: [Removed]

    /// A table of the members, a line per removed device, and a hint for a device alone.
    var text: String {
        let names = Dictionary(devices.map { ($0.deviceID, $0.name ?? String($0.deviceID.prefix(7))) } + removed.map { ($0.deviceID, $0.name ?? String($0.deviceID.prefix(7))) },
                               uniquingKeysWith: { first, _ in first })
        var lines = [Output.table(
            header: ["NAME", "DEVICE ID", "ADDED BY", "ADDED"],
            rows: devices.map { device in
                [(device.name ?? "-") + (device.thisDevice ? " (this device)" : ""), device.deviceID, device.addedBy.map { names[$0] ?? $0 } ?? "founder", device.addedAt ?? "-"]
            })]
        for device in removed {
            lines.append("removed: \(device.name ?? "-") \(device.deviceID), by \(names[device.removedBy] ?? device.removedBy) at \(device.removedAt)")
        }
        if devices.count == 1 { lines.append("this device is alone in its account: add one with `lattice pair` here and `lattice pair CODE --peer ...` there") }
        return lines.joined(separator: "\n")
    }
}
