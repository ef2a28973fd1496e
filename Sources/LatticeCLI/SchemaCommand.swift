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
            Output.emit(SchemaOutput(
                environment: schema.isProduction ? "production" : "development",
                recordTypes: types.map { type in
                    .init(recordType: type, fields: schema.sortedFields.filter { $0.recordType == type }.map { field in
                        .init(fieldName: field.field, fieldType: field.type.description,
                              indexes: schema.indexKinds(field.field, of: type).names.map { $0.uppercased() },
                              removedHere: schema.removedIndexes[.init(recordType: type, field: field.field)]?.names.map { $0.uppercased() })
                    })
                }), json: options.json)
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
                Output.emit(IndexOutput(recordType: recordType, fieldName: field, indexes: now.names.map { $0.uppercased() }, added: [],
                                        removed: removed.names.map { $0.uppercased() }, removedHere: keptOff.names.map { $0.uppercased() }), json: options.json)
                return
            }
            if kinds.isEmpty {
                let type = try library { try container.schema() }.field(field, of: recordType)?.type
                kinds = type.map(IndexKinds.defaults(for:)) ?? [.queryable, .sortable]
                if kinds.isEmpty { kinds = [.queryable] } // the refusal then names what the type cannot have
            }
            let added = try library { try container.addIndex(kinds, field: field, of: recordType) }
            let now = try library { try container.schema() }.indexKinds(field, of: recordType)
            Output.emit(IndexOutput(recordType: recordType, fieldName: field, indexes: now.names.map { $0.uppercased() }, added: added.names.map { $0.uppercased() }),
                        json: options.json)
        }
    }

    struct Deploy: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "deploy", abstract: "Move the container to production: new types and fields are rejected from now on.",
            discussion: "Example: lattice schema deploy")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            try library { try options.openContainer(forOneCommand: true).deploySchema() }
            Output.emit(SchemaDeployed(), json: options.json)
        }
    }
}

/// What `schema show` prints.
struct SchemaOutput: CommandOutput {
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

    /// The environment, then each type and its fields, with their index kinds.
    var text: String {
        var lines = ["environment: \(environment)"]
        for type in recordTypes {
            lines.append(type.recordType)
            for field in type.fields {
                let removed = field.removedHere ?? []
                lines.append("  \(field.fieldName): \(field.fieldType)" + (field.indexes.isEmpty ? "" : "  [\(IndexOutput.words(field.indexes))]")
                    + (removed.isEmpty ? "" : "  (removed here: \(IndexOutput.words(removed)))"))
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// What `schema index` prints.
struct IndexOutput: CommandOutput {
    var recordType: String
    var fieldName: String
    var indexes: [String]
    var added: [String]
    /// With --remove: the kinds the field had and no longer has here.
    var removed: [String]? = nil
    /// With --remove: every kind kept off the field on this device.
    var removedHere: [String]? = nil

    var text: String {
        let now = Self.words(indexes)
        guard let removed else {
            return added.isEmpty ? "\(recordType).\(fieldName) is already indexed: \(now)" : "indexed \(recordType).\(fieldName): \(now)"
        }
        guard !removed.isEmpty else {
            let keptOff = removedHere ?? []
            return "\(recordType).\(fieldName) had no such index; \(keptOff.isEmpty ? "nothing changed" : "\(Self.words(keptOff)) stay off on this device")"
        }
        return "removed \(Self.words(removed)) from \(recordType).\(fieldName) on this device" + (indexes.isEmpty ? "" : "; it keeps \(now)")
    }

    /// Index kinds as people read and type them (`IndexKinds.description`): "queryable, sortable".
    static func words(_ kinds: [String]) -> String { kinds.map { $0.lowercased() }.joined(separator: ", ") }
}

/// What `schema deploy` prints.
struct SchemaDeployed: CommandOutput {
    var environment = "production"
    var text: String { "schema deployed: the container is in production mode" }
}
