import Foundation
import Lattice

extension WebServicesAPI {
    /// `records/query`: a page of records matching a query, and where the next starts.
    func query(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(QueryRequest.self, from: body, what: "records/query")
        try Self.checkCost(of: request.query.filterBy ?? [])
        if request.zoneWide == true, request.zoneID == nil {
            throw WebError.badRequest("zoneWide queries (every zone at once) are not served yet; name the zone with zoneID")
        }
        let zoneID = try zone(request.zoneID, in: database)
        let predicate = try library { try WebServicesFilter.predicate(request.query.filterBy ?? []) }
        let sorts = try library { try (request.query.sortBy ?? []).map { sort in try sort.sort() } }
        let query = Query(recordType: request.query.recordType, predicate: predicate, sortDescriptors: sorts)
        let limit = try Self.limit(request.resultsLimit, default: Database.maximumResults, maximum: Self.maximumOperations)
        let page = try library {
            if let marker = request.continuationMarker {
                return try database.records(continuingMatchFrom: try Query.Cursor(stringValue: marker, query: query, zoneID: zoneID), resultsLimit: limit)
            }
            return try database.records(matching: query, inZoneWith: zoneID, resultsLimit: limit)
        }
        let shaping = RecordShaping(desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings ?? false)
        let marker = page.queryCursor?.stringValue
        return .records(page.matchResults.map { .record(shaping.shape($0, container: container)) }, before: { json in
            if let marker {
                json.key("continuationMarker", first: true)
                json.string(marker)
                json.raw(",")
            }
        })
    }

    /// `records/lookup`: records by name; one not found is its entry's error.
    func lookup(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(LookupRequest.self, from: body, what: "records/lookup")
        guard !request.records.isEmpty else { throw WebError.badRequest("records/lookup needs at least one record") }
        guard request.records.count <= Self.maximumOperations else {
            throw WebError(.limitExceeded, "records/lookup takes at most \(Self.maximumOperations) records, not \(request.records.count)")
        }
        let shaping = RecordShaping(desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings ?? false)
        var entries: [RecordEntry] = []
        for reference in request.records {
            let id = Record.ID(recordName: reference.recordName, zoneID: try zone(reference.zoneID ?? request.zoneID, in: database))
            do {
                entries.append(.record(shaping.shape(try database.record(for: id), container: container)))
            } catch let error where error.code == .unknownItem || error.code == .zoneNotFound {
                entries.append(.error(RecordError(recordName: reference.recordName, error)))
            } catch {
                throw WebError.from(error)
            }
        }
        return .records(entries)
    }

    /// `records/modify`: creates, updates, replaces and deletes in one commit
    /// per zone. `atomic` (the default for custom zones) applies all of a
    /// zone's operations or none; the default zone is never atomic, as in CloudKit.
    func modify(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try ModifyRequest.fast(body) ?? RequestBody.decode(ModifyRequest.self, from: body, what: "records/modify")
        guard !request.operations.isEmpty else { throw WebError.badRequest("records/modify needs at least one operation") }
        guard request.operations.count <= Self.maximumOperations else {
            throw WebError(.limitExceeded, "records/modify takes at most \(Self.maximumOperations) operations, not \(request.operations.count)")
        }
        // Every operation is read before any is applied: one malformed operation refuses the request.
        var writes: [BatchWrite] = []
        for (index, operation) in request.operations.enumerated() {
            writes.append(try write(operation, number: index + 1, zoneID: request.zoneID, in: database))
        }
        var outcomes = [Result<Record?, LatticeError>?](repeating: nil, count: writes.count)
        var byZone: [Zone.ID: [Int]] = [:]
        for (index, write) in writes.enumerated() { byZone[write.record.recordID.zoneID, default: []].append(index) }
        // One commit per zone, as CloudKit's atomicity is per zone: a zone whose commit fails
        // (the store, not a check) is its operations' error, and the other zones' writes stand.
        for (zoneID, indices) in byZone.sorted(by: { $0.key.zoneName < $1.key.zoneName }) {
            let atomically = (request.atomic ?? true) && !zoneID.isDefault
            do {
                let results = try database.applyBatch(indices.map { writes[$0] }, atomically: atomically)
                for (index, result) in zip(indices, results) { outcomes[index] = result }
            } catch {
                for index in indices { outcomes[index] = .failure(error) }
            }
        }
        let entries = zip(request.operations, zip(writes, outcomes)).map { operation, pair -> RecordEntry in
            let (write, outcome) = pair
            let shaping = RecordShaping(desiredKeys: operation.desiredKeys ?? request.desiredKeys, numbersAsStrings: request.numbersAsStrings ?? false)
            switch outcome! {
            case .success(let record?): return .record(shaping.shape(record, container: container))
            case .success(nil): return .deleted(WebServicesDeletedRecord(recordName: write.record.recordID.recordName, zoneID: write.record.recordID.zoneID))
            case .failure(let error):
                return .error(RecordError(recordName: write.record.recordID.recordName, error, serverRecord: error.serverRecord.map { shaping.shape($0, container: container) }))
            }
        }
        return .records(entries)
    }

    private func write(_ operation: ModifyRequest.Operation, number: Int, zoneID: WebServicesZoneID?, in database: Database) throws -> BatchWrite {
        guard let kind = BatchWrite.Operation(rawValue: operation.operationType) else {
            throw WebError.badRequest("operation \(number): operationType \"\(operation.operationType)\" is none of \(BatchWrite.Operation.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let input = operation.record
        let zone = try self.zone(input.zoneID ?? zoneID, in: database)
        switch kind {
        case .delete, .forceDelete:
            guard let name = input.recordName else { throw WebError.badRequest("operation \(number): a delete needs the record's recordName") }
            return BatchWrite(kind, Record(recordType: input.recordType ?? "_", recordName: name, zoneID: zone), tag: input.recordChangeTag)
        default:
            guard let type = input.recordType else { throw WebError.badRequest("operation \(number): \(kind.rawValue) needs the record's recordType") }
            let name = input.recordName ?? UUID().uuidString
            let record = WebServicesRecord(recordName: name, recordType: type, fields: input.fields ?? [:])
            do {
                return BatchWrite(kind, try record.record(in: zone), tag: input.recordChangeTag)
            } catch {
                throw WebError(.badRequest, "operation \(number): \(error.message)")
            }
        }
    }
}

extension WebServicesAPI {
    /// A query's cost grows with its records times its conditions: both bounded, as CloudKit bounds them.
    static let maximumFilters = 100
    static let maximumListValues = 1_000

    static func checkCost(of filters: [WebServicesFilter]) throws {
        guard filters.count <= maximumFilters else {
            throw WebError(.limitExceeded, "a query takes at most \(maximumFilters) filters, not \(filters.count)")
        }
        for filter in filters {
            if case .array(let values) = filter.fieldValue.value, values.count > maximumListValues {
                throw WebError(.limitExceeded, "a filter's list takes at most \(maximumListValues) values, not \(values.count) (field \(filter.fieldName))")
            }
        }
    }
}

/// A record, a deletion or an error, in a response's `records` (in request order).
enum RecordEntry: Encodable {
    case record(WebServicesRecord)
    case deleted(WebServicesDeletedRecord)
    case error(RecordError)

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .record(let record): try record.encode(to: encoder)
        case .deleted(let deletion): try deletion.encode(to: encoder)
        case .error(let error): try error.encode(to: encoder)
        }
    }
}
