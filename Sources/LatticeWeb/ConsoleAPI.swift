import Foundation
import Lattice

/// What the console in the browser reads besides CloudKit's operations
/// (`/api/…`): the node and its peers, the account and its shares, the
/// schema, a record with who wrote each field, and queries in the CLI's
/// predicate language with the planner's explanation.
struct ConsoleAPI: Sendable {
    let container: Container

    struct NodeSummary: Encodable {
        struct Device: Encodable { var deviceID: String; var name: String?; var isThisDevice: Bool }
        struct Removed: Encodable { var deviceID: String; var name: String?; var removedAt: Date }
        struct Share: Encodable {
            struct Participant: Encodable { var account: String; var permission: String }
            var zoneName: String
            var ownerName: String
            var isOwner: Bool
            var permission: String?
            var records: Int
            var participants: [Participant]
        }

        var deviceID: String
        var deviceName: String?
        var accountID: String
        var container: String
        var storeBytes: Int64
        var devices: [Device]
        var removedDevices: [Removed]
        var shares: [Share]
        /// What the running node last reported (peers, discovery, refusals, asset transfers).
        var status: NodeStatus?
    }

    /// `GET /api/node`.
    func node() throws -> WebResponse {
        let account = try container.account()
        let shares = try container.shares()
        return .json(NodeSummary(
            deviceID: container.deviceID, deviceName: try container.deviceName(), accountID: try container.accountID,
            container: container.containerIdentifier, storeBytes: NodeMetrics.storeBytes(of: container.directory).total,
            devices: account.devices.map { .init(deviceID: $0.deviceID, name: $0.name, isThisDevice: $0.isThisDevice) },
            removedDevices: account.removed.map { .init(deviceID: $0.deviceID, name: $0.name, removedAt: $0.removedAt) },
            shares: shares.map { share in
                .init(zoneName: share.zoneID.zoneName, ownerName: share.zoneID.ownerName, isOwner: share.isOwner, permission: share.permission?.rawValue,
                      records: share.records, participants: share.participants.map { .init(account: $0.account, permission: $0.permission.rawValue) })
            },
            status: NodeStatus.read(store: container.directory)))
    }

    struct SchemaSummary: Encodable {
        struct RecordType: Encodable {
            struct Field: Encodable { var fieldName: String; var fieldType: String; var indexes: [String] }
            var recordType: String
            var fields: [Field]
        }

        var environment: String
        var recordTypes: [RecordType]
    }

    /// `GET /api/schema`: record types, their fields and index kinds, as `lattice schema show --json`.
    func schema() throws -> WebResponse {
        let schema = try container.schema()
        return .json(SchemaSummary(environment: schema.isProduction ? "production" : "development", recordTypes: schema.recordTypes.sorted().map { type in
            .init(recordType: type, fields: schema.sortedFields.filter { $0.recordType == type }.map { field in
                .init(fieldName: field.field, fieldType: field.type.description, indexes: schema.indexKinds(field.field, of: type).names.map { $0.uppercased() })
            })
        }))
    }

    struct RecordDetail: Encodable {
        struct Write: Encodable { var field: String; var timestamp: Int64; var replica: String; var removed: Bool }
        struct Conflict: Encodable {
            var field: String
            var losingValue: WebServicesField?
            var losingWrite: WebServicesTimestamp
            var winningWrite: WebServicesTimestamp
        }

        var record: WebServicesRecord
        var fieldWrites: [Write]
        var conflicts: [Conflict]
    }

    /// `GET /api/record?database=&zone=&name=`: a record, the last write of each field, and its conflicts' losing values.
    func record(_ request: WebRequest) throws -> WebResponse {
        let database = container.database(with: try DatabaseScope(webName: request.query["database"] ?? "private"))
        guard let name = request.query["name"], !name.isEmpty else { throw WebError.badRequest("name the record: ?zone=ZONE&name=NAME") }
        let zoneID = try database.resolveZoneID(Zone.ID(zoneName: request.query["zone"] ?? Zone.ID.defaultZoneName))
        let id = Record.ID(recordName: name, zoneID: zoneID)
        let record = try database.record(for: id)
        let writes = try database.fieldWrites(for: id)
        let conflicts = try database.conflicts(for: id)
        return .json(RecordDetail(
            record: WebServicesRecord(record, assetURL: { container.fileURL(for: $0) }),
            fieldWrites: writes.map { .init(field: $0.field, timestamp: $0.milliseconds, replica: $0.replica.description, removed: $0.removed) },
            conflicts: conflicts.map { conflict in
                .init(field: conflict.field, losingValue: conflict.losingValue.map { WebServicesField($0) },
                      losingWrite: WebServicesTimestamp(timestamp: Int64(conflict.losingStamp.time.milliseconds), deviceID: conflict.losingStamp.replica.description),
                      winningWrite: WebServicesTimestamp(timestamp: Int64(conflict.winningStamp.time.milliseconds), deviceID: conflict.winningStamp.replica.description))
            }))
    }

    /// `POST /api/query`: `{"database"?,"zone"?,"recordType","where"?,"sort"?:["-rating"],"limit"?,"cursor"?,"explain"?}`.
    struct QueryInput: Decodable {
        var database: String?
        var zone: String?
        var recordType: String
        var `where`: String?
        var sort: [String]?
        var limit: Int?
        var cursor: String?
        var explain: Bool?

        init(from decoder: any Decoder) throws {
            try decoder.requireKnownKeys(["database", "zone", "recordType", "where", "sort", "limit", "cursor", "explain"], in: "a console query")
            let container = try decoder.container(keyedBy: AnyKey.self)
            database = try container.optional("database")
            zone = try container.optional("zone")
            recordType = try container.required("recordType")
            self.where = try container.optional("where")
            sort = try container.optional("sort")
            limit = try container.optional("limit")
            cursor = try container.optional("cursor")
            explain = try container.optional("explain")
        }
    }

    struct QueryOutput: Encodable {
        struct Explanation: Encodable {
            struct Estimate: Encodable { var plan: String; var rows: Int; var atLeast: Bool }
            var plan: String
            var recordsRead: Int
            var recordsReturned: Int
            var rowsRead: Int
            var estimates: [Estimate]
            var suggestions: [String]
        }

        var records: [WebServicesRecord]
        var continuationMarker: String?
        var explanation: Explanation?
    }

    func query(_ body: [UInt8]) throws -> WebResponse {
        let input = try RequestBody.decode(QueryInput.self, from: body, what: "a console query")
        // The cost grows with records times conditions: a predicate is bounded (8 KB holds hundreds of conditions).
        guard (input.where ?? "").utf8.count <= 8_192 else {
            throw WebError(.limitExceeded, "a predicate takes at most 8,192 bytes, not \((input.where ?? "").utf8.count)")
        }
        let database = container.database(with: try DatabaseScope(webName: input.database ?? "private"))
        let predicate: QueryPredicate
        do {
            predicate = try input.where.map { $0.trimmingCharacters(in: .whitespaces).isEmpty ? .all : try PredicateParser.parse($0) } ?? .all
        } catch let error as PredicateSyntaxError {
            throw WebError.badRequest(error.description)
        }
        let sorts = try (input.sort ?? []).map { key -> QuerySort in
            guard let sort = QuerySort(parsing: key) else { throw WebError.badRequest("a sort key needs a field name") }
            return sort
        }
        let limit = try WebServicesAPI.limit(input.limit, default: 50, maximum: WebServicesAPI.maximumOperations)
        let query = Query(recordType: input.recordType, predicate: predicate, sortDescriptors: sorts)
        let zoneID = try database.resolveZoneID(Zone.ID(zoneName: input.zone ?? Zone.ID.defaultZoneName))
        let cursor = try input.cursor.map { try Query.Cursor(stringValue: $0, query: query, zoneID: zoneID) }
        let page = try cursor.map { try database.records(continuingMatchFrom: $0, resultsLimit: limit) }
            ?? database.records(matching: query, inZoneWith: zoneID, resultsLimit: limit)
        var explanation: QueryOutput.Explanation?
        if input.explain == true {
            let explained = try database.explain(query, inZoneWith: zoneID, after: cursor, resultsLimit: limit)
            explanation = .init(plan: explained.plan, recordsRead: explained.recordsRead, recordsReturned: explained.recordsReturned, rowsRead: explained.rowsRead,
                                estimates: explained.estimates.map { .init(plan: $0.way, rows: $0.rows, atLeast: $0.atLeast) }, suggestions: explained.suggestions)
        }
        return .json(QueryOutput(records: page.matchResults.map { WebServicesRecord($0, assetURL: { container.fileURL(for: $0) }) },
                                 continuationMarker: page.queryCursor?.stringValue, explanation: explanation))
    }
}
