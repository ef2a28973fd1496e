import ArgumentParser
import Lattice

struct ZoneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "zone", abstract: "Create, delete and list zones.",
        subcommands: [Create.self, Delete.self, List.self, Assets.self, Sync.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Create a zone (or re-create a deleted one).", discussion: "Example: lattice zone create Movies")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String

        func run() throws {
            let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
            try library { try database.save(Zone(zoneName: zone)) }
            Output.emit(ZonesOutput(zones: [WebServicesZone(Zone.ID(zoneName: zone))], event: .created), json: options.json)
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a zone and all its records, on every replica.", discussion: "Example: lattice zone delete Movies")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String

        func run() throws {
            let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
            let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
            let exists = try library { try database.allRecordZones() }.contains { $0.zoneID == zoneID }
            guard exists else { throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "zone \(zone) does not exist (see `lattice zone list`)") }
            try library { try database.deleteZone(withID: zoneID) }
            Output.emit(ZonesOutput(zones: [WebServicesZone(zoneID, deleted: true)], event: .deleted(asNamed: zone)), json: options.json)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List zones with their record counts.", discussion: "Example: lattice zone list --json")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
            let zones = try library { try database.allRecordZones() }
            let counts = try zones.map { zone in try library { try database.recordCount(inZoneWith: zone.zoneID) } }
            Output.emit(ZonesOutput(zones: zip(zones, counts).map { WebServicesZone($0.zoneID, recordCount: $1) }, event: .listed), json: options.json)
        }
    }

    struct Assets: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "assets",
            abstract: "Show or set whether a zone's assets come with its records (eager) or when asked for (lazy).",
            discussion: """
                lazy (the default): assets up to 256 KiB come with their records, larger ones with `lattice asset fetch`. \
                eager: every asset comes as its record arrives. A choice of this device alone; it does not sync.
                Example: lattice zone assets Photos eager
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String
        @Argument(help: "eager or lazy (without it: print the zone's policy).") var policy: AssetPolicy?

        func run() throws {
            let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
            let zoneID = Zone.ID(zoneName: zone)
            if let policy { try library { try database.setAssetPolicy(policy, ofZone: zoneID) } }
            let now = try library { try database.assetPolicy(ofZone: zoneID) }
            Output.emit(ZoneAssetPolicy(zoneName: zone, assets: now.rawValue), json: options.json)
        }
    }
}

extension ZoneCommand {
    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sync",
            abstract: "Show or choose whether this device replicates a zone (selective sync).",
            discussion: """
                --off drops what this device holds of the zone (records, history, assets no other zone uses) and
                tells peers not to send it; reads of it then fail with zoneNotFound. --on fetches it whole again.
                A choice of this device alone; other devices keep syncing the zone among themselves.
                Example: lattice zone sync Photos --off
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String
        @Flag(help: "Replicate the zone here.") var on = false
        @Flag(help: "Stop replicating the zone here.") var off = false

        func validate() throws {
            if on && off { throw ValidationError("--on and --off cannot be combined") }
        }

        func run() throws {
            let database = try options.values.openContainer(forOneCommand: true).database(with: options.scope)
            let zoneID = Zone.ID(zoneName: zone)
            if on || off { try library { try database.setReplicated(zoneID, on) } }
            let replicated = try library { try database.isReplicated(zoneID) }
            Output.emit(ZoneSyncOutput(zoneName: zone, replicated: replicated), json: options.json)
        }
    }
}

/// What `zone sync` prints.
struct ZoneSyncOutput: CommandOutput {
    var zoneName: String
    var replicated: Bool
    var text: String { "\(zoneName): \(replicated ? "replicated on this device" : "not replicated on this device (lattice zone sync \(zoneName) --on)")" }
}

/// What `zone assets` prints: the zone's asset policy, eager or lazy.
struct ZoneAssetPolicy: CommandOutput {
    var zoneName: String
    var assets: String
    var text: String { "\(zoneName): assets \(assets)" }
}

extension AssetPolicy: ExpressibleByArgument {}
