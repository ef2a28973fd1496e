import ArgumentParser
import Foundation
import Lattice

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schema", abstract: "Show the schema, index fields, or deploy it to production.",
        subcommands: [Show.self, Index.self, Deploy.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Print record types and their fields.", discussion: "Example: lattice schema show --json")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let schema = try library { try options.openContainer(forOneCommand: true).schema() }
            let types = schema.recordTypes.sorted()
            if options.json {
                Output.json(SchemaOutput(
                    environment: schema.isProduction ? "production" : "development",
                    recordTypes: types.map { type in
                        .init(recordType: type, fields: schema.sortedFields.filter { $0.recordType == type }.map { field in
                            .init(fieldName: field.field, fieldType: field.type.description,
                                  indexes: schema.indexKinds(field.field, of: type).names.map { $0.uppercased() },
                                  removedHere: schema.removedIndexes[.init(recordType: type, field: field.field)]?.names.map { $0.uppercased() })
                        })
                    }))
            } else {
                Output.line("environment: \(schema.isProduction ? "production" : "development")")
                for type in types {
                    Output.line(type)
                    for field in schema.sortedFields where field.recordType == type {
                        let kinds = schema.indexKinds(field.field, of: type)
                        let removed = schema.removedIndexes[.init(recordType: type, field: field.field)] ?? []
                        Output.line("  \(field.field): \(field.type)" + (kinds.isEmpty ? "" : "  [\(kinds.names.joined(separator: ", "))]")
                            + (removed.isEmpty ? "" : "  (removed here: \(removed.names.joined(separator: ", ")))"))
                    }
                }
            }
        }
    }

    struct Index: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "index",
            abstract: "Index a field, or remove its index: queryable (filters), sortable (sort order), searchable (token searches).",
            discussion: """
                Every record of the type is indexed at once; every later save and merge keeps the index current, and the \
                index reaches other devices with the schema. Without a kind flag a field gets every kind its type can have: \
                queryable and sortable for strings, numbers, dates and booleans; queryable for lists (LIST_CONTAINS, \
                LIST_MEMBER_BEGINS_WITH) and locations (NEAR … WITHIN).
                --remove removes the kinds named (without a flag, all) on this device only: queries return the same \
                records, more slowly. Other devices keep their indexes, and a peer's schema does not bring the removed kinds \
                back here; indexing the field again here does.
                Examples: lattice schema index Movie title --sortable --searchable
                          lattice schema index Movie tags
                          lattice schema index Movie title --remove --searchable
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Record type.") var recordType: String
        @Argument(help: "Field of that type.") var field: String
        @Flag(help: "Filter on the field through an index.") var queryable = false
        @Flag(help: "Sort by the field through an index.") var sortable = false
        @Flag(help: "Token searches (TOKENS, ANYTOKENS) of a string field through an index.") var searchable = false
        @Flag(help: "Remove the kinds named (all without a kind flag) from this device's index of the field.") var remove = false

        func run() throws {
            var kinds: IndexKinds = []
            if queryable { kinds.insert(.queryable) }
            if sortable { kinds.insert(.sortable) }
            if searchable { kinds.insert(.searchable) }
            let container = try options.openContainer(forOneCommand: true)
            if remove {
                let removed = try library { try container.removeIndex(kinds.isEmpty ? .all : kinds, field: field, of: recordType) }
                let schema = try library { try container.schema() }
                let now = schema.indexKinds(field, of: recordType)
                let keptOff = schema.removedIndexes[.init(recordType: recordType, field: field)] ?? []
                if options.json {
                    Output.json(IndexOutput(recordType: recordType, fieldName: field, indexes: now.names.map { $0.uppercased() }, added: [],
                                            removed: removed.names.map { $0.uppercased() }, removedHere: keptOff.names.map { $0.uppercased() }))
                } else if removed.isEmpty {
                    Output.line("\(recordType).\(field) had no such index; \(keptOff.isEmpty ? "nothing changed" : "\(keptOff) stay off on this device")")
                } else {
                    Output.line("removed \(removed) from \(recordType).\(field) on this device" + (now.isEmpty ? "" : "; it keeps \(now)"))
                }
                return
            }
            if kinds.isEmpty {
                let type = try library { try container.schema() }.field(field, of: recordType)?.type
                kinds = type.map(IndexKinds.defaults(for:)) ?? [.queryable, .sortable]
                if kinds.isEmpty { kinds = [.queryable] } // the refusal then names what the type cannot have
            }
            let added = try library { try container.addIndex(kinds, field: field, of: recordType) }
            let now = try library { try container.schema() }.indexKinds(field, of: recordType)
            if options.json {
                Output.json(IndexOutput(recordType: recordType, fieldName: field, indexes: now.names.map { $0.uppercased() }, added: added.names.map { $0.uppercased() }))
            } else if added.isEmpty {
                Output.line("\(recordType).\(field) is already indexed: \(now)")
            } else {
                Output.line("indexed \(recordType).\(field): \(now)")
            }
        }
    }

    struct Deploy: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "deploy", abstract: "Move the container to production: new types and fields are rejected from now on.",
            discussion: "Example: lattice schema deploy")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            try library { try options.openContainer(forOneCommand: true).deploySchema() }
            if options.json { Output.json(["environment": "production"]) } else { Output.line("schema deployed: the container is in production mode") }
        }
    }
}

/// What `schema show --json` prints.
struct SchemaOutput: Encodable {
    struct RecordType: Encodable {
        struct Field: Encodable {
            var fieldName: String
            var fieldType: String
            var indexes: [String]
            /// Index kinds removed on this device (absent when none).
            var removedHere: [String]?
        }

        var recordType: String
        var fields: [Field]
    }

    var environment: String
    var recordTypes: [RecordType]
}

/// What `schema index --json` prints.
struct IndexOutput: Encodable {
    var recordType: String
    var fieldName: String
    var indexes: [String]
    var added: [String]
    /// With --remove: the kinds the field had and no longer has here.
    var removed: [String]? = nil
    /// With --remove: every kind kept off the field on this device.
    var removedHere: [String]? = nil
}
