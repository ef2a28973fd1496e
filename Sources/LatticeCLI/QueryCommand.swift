import ArgumentParser
import Foundation
import Lattice

struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query", abstract: "Query records of a type.",
        discussion: """
            --where takes the predicate language (see below) or, starting with '[', a CloudKit Web Services filterBy array.
            --sort FIELD or -FIELD (descending), repeatable, or a sortBy JSON array.
            Predicates: rating >= 4 AND (title BEGINSWITH "Toy" OR director == "Lasseter"); NOT genre IN ["a","b"];
            tags CONTAINS "x"; tags CONTAINSANY [..]; tags CONTAINSALL [..]; tags ANYBEGINSWITH "p"; title TOKENS "toy story";
            title ANYTOKENS "up coco"; self CONTAINS "word"; place NEAR (37.3, -122.0) WITHIN 5000; released > @2020-01-01T00:00:00Z.
            Example: lattice query Movie --zone Movies --where 'rating >= 4' --sort -rating --limit 50
            """)

    @OptionGroup var options: GlobalOptions
    @Argument(help: "Record type.") var recordType: String
    @Option(help: "Zone (default _defaultZone).") var zone: String = Zone.ID.defaultZoneName
    @Option(name: .customLong("where"), help: "Predicate, or a filterBy JSON array.") var predicate: String?
    @Option(parsing: .unconditionalSingleValue, help: "Sort key: FIELD or -FIELD; repeatable; or a sortBy JSON array.") var sort: [String] = []
    @Option(help: "Records per page.") var limit: Int = 100
    @Option(parsing: .unconditional, help: "Continue from a cursor (continuationMarker) printed by an earlier page.") var cursor: String?
    @Flag(help: "Run the query and say how it was read (which index, how many records) instead of printing the records.") var explain = false

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let predicate = try predicate.map { text in
            text.trimmingCharacters(in: .whitespaces).hasPrefix("[") ? try WebServicesInput.predicate(fromFilterBy: text) : try PredicateParser.parse(text)
        } ?? .all
        var sorts: [QuerySort] = []
        for key in sort {
            if key.hasPrefix("[") { sorts += try WebServicesInput.sorts(fromSortBy: key); continue }
            guard let parsed = QuerySort(parsing: key) else { throw CLIError.usage("--sort needs a field name") }
            sorts.append(parsed)
        }
        let container = try options.openContainer(forOneCommand: true)
        let database = container.database(with: options.scope)
        let query = Query(recordType: recordType, predicate: predicate, sortDescriptors: sorts)
        let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
        if explain {
            let explanation = try library {
                try database.explain(query, inZoneWith: zoneID, after: cursor.map { text throws(LatticeError) in try Query.Cursor(stringValue: text, query: query, zoneID: zoneID) }, resultsLimit: limit)
            }
            Output.emit(ExplainOutput(
                plan: explanation.plan, recordsRead: explanation.recordsRead, recordsReturned: explanation.recordsReturned, rowsRead: explanation.rowsRead,
                estimates: explanation.estimates.map { ExplainOutput.Estimate(plan: $0.way, rows: $0.rows, atLeast: $0.atLeast) },
                suggestions: explanation.suggestions), json: options.json)
            return
        }
        let page = try library {
            if let cursor {
                return try database.records(continuingMatchFrom: Query.Cursor(stringValue: cursor, query: query, zoneID: zoneID), resultsLimit: limit)
            }
            return try database.records(matching: query, inZoneWith: zoneID, resultsLimit: limit)
        }
        Output.emit(QueryPageOutput(records: page.matchResults, continuationMarker: page.queryCursor?.stringValue, container: container), json: options.json)
    }
}

/// What `query` prints: a page of records, and where the next one starts.
/// Its JSON is CloudKit Web Services' query response.
struct QueryPageOutput: CommandOutput {
    var records: [Record]
    var continuationMarker: String?
    /// Where the records' asset content is (`downloadURL`).
    var container: Container

    func encode(to encoder: Encoder) throws {
        try WebServicesQueryResponse(records: records.map { WebServicesRecord($0, container: container) }, continuationMarker: continuationMarker).encode(to: encoder)
    }

    /// Each record as `record get` shows it, then how many and where the next page starts.
    var text: String {
        (records.map(Output.text) + [Output.count(records.count, "record") + (continuationMarker.map { "; more with --cursor \($0)" } ?? "")])
            .joined(separator: "\n")
    }
}

/// What `query --explain` prints: how the query was read.
struct ExplainOutput: CommandOutput {
    struct Estimate: Encodable {
        var plan: String
        var rows: Int
        var atLeast: Bool
    }

    var plan: String
    var recordsRead: Int
    var recordsReturned: Int
    var rowsRead: Int
    /// The ways of reading weighed, the one taken first.
    var estimates: [Estimate]
    var suggestions: [String]

    var text: String {
        var lines = ["plan: \(plan)"]
        for (index, estimate) in estimates.enumerated() {
            lines.append("  \(index == 0 ? "taken" : "weighed"): \(estimate.plan), estimated to read \(estimate.atLeast ? "at least " : "")\(Output.count(estimate.rows, "row"))")
        }
        let rows = rowsRead != recordsRead ? " (\(Output.count(rowsRead, "index entry", plural: "index entries")) passed)" : ""
        lines.append("read \(Output.count(recordsRead, "record"))\(rows) to return \(recordsReturned)")
        for suggestion in suggestions { lines.append("an index would help: \(suggestion)") }
        return lines.joined(separator: "\n")
    }
}
