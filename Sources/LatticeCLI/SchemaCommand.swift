import ArgumentParser
import Foundation
import Lattice

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schema", abstract: "Show the schema, or deploy it to production.",
        subcommands: [Show.self, Deploy.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print record types and their fields.", discussion: "Example: lattice schema show --json")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let schema = try library { try options.openContainer().schema() }
            let types = schema.recordTypes.sorted()
            if options.json {
                Output.json([
                    "environment": schema.isProduction ? "production" : "development",
                    "recordTypes": types.map { type in
                        ["recordType": type, "fields": schema.sortedFields.filter { $0.recordType == type }.map { ["fieldName": $0.field, "fieldType": $0.type.description] }] as [String: Any]
                    },
                ])
            } else {
                Output.line("environment: \(schema.isProduction ? "production" : "development")")
                for type in types {
                    Output.line(type)
                    for field in schema.sortedFields where field.recordType == type { Output.line("  \(field.field): \(field.type)") }
                }
            }
        }
    }

    struct Deploy: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Move the container to production: new types and fields are rejected from now on.",
            discussion: "Example: lattice schema deploy")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            try library { try options.openContainer().deploySchema() }
            if options.json { Output.json(["environment": "production"]) } else { Output.line("schema deployed: the container is in production mode") }
        }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Store, device, zones and schema at a glance.", discussion: "Example: lattice status")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let database = container.database(with: options.scope)
        let zones = try library { try database.allRecordZones() }
        let counts = try zones.map { zone in try library { try database.recordCount(inZoneWith: zone.zoneID) } }
        let schema = try library { try container.schema() }
        let sequence = try library { try container.commitSequence() }
        let name = try library { try container.deviceName() }
        if options.json {
            Output.json([
                "store": container.directory.path, "deviceID": container.deviceID, "name": name.map { $0 as Any } ?? NSNull(),
                "database": options.scope.description, "commitSequence": sequence,
                "environment": schema.isProduction ? "production" : "development",
                "zones": zip(zones, counts).map { ["zoneID": WebServicesJSON.zone($0.zoneID), "recordCount": $1] },
                "sync": "not available yet: network sync is not built",
            ])
        } else {
            Output.line("store      \(container.directory.path)")
            Output.line("device     \(container.deviceID)\(name.map { " (\($0))" } ?? "")")
            Output.line("database   \(options.scope)  schema: \(schema.isProduction ? "production" : "development")  commits: \(sequence)")
            for (zone, count) in zip(zones, counts) { Output.line("zone       \(zone.zoneID.zoneName): \(count) records") }
            Output.line("sync       not available yet (network sync is not built; use `lattice bundle`)")
        }
    }
}
