import ArgumentParser
import Lattice

struct ZoneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "zone", abstract: "Create, delete and list zones.",
        subcommands: [Create.self, Delete.self, List.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a zone (or re-create a deleted one).", discussion: "Example: lattice zone create Movies")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String

        func run() throws {
            let database = try options.openContainer().database(with: options.scope)
            try library { try database.save(Zone(zoneName: zone)) }
            if options.json { Output.json(ZonesOutput(zones: [WebServicesZone(Zone.ID(zoneName: zone))])) } else { Output.line("created zone \(zone)") }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a zone and all its records, on every replica.", discussion: "Example: lattice zone delete Movies")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone name.") var zone: String

        func run() throws {
            let database = try options.openContainer().database(with: options.scope)
            let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
            let exists = try library { try database.allRecordZones() }.contains { $0.zoneID == zoneID }
            guard exists else { throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "zone \(zone) does not exist (see `lattice zone list`)") }
            try library { try database.deleteZone(withID: zoneID) }
            if options.json { Output.json(ZonesOutput(zones: [WebServicesZone(zoneID, deleted: true)])) } else { Output.line("deleted zone \(zone)") }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List zones with their record counts.", discussion: "Example: lattice zone list --json")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let database = try options.openContainer().database(with: options.scope)
            let zones = try library { try database.allRecordZones() }
            let counts = try zones.map { zone in try library { try database.recordCount(inZoneWith: zone.zoneID) } }
            if options.json {
                Output.json(ZonesOutput(zones: zip(zones, counts).map { WebServicesZone($0.zoneID, recordCount: $1) }))
            } else {
                for (zone, count) in zip(zones, counts) { Output.line("\(zone.zoneID.description)\t\(Output.count(count, "record"))") }
            }
        }
    }
}
