import Foundation
import Lattice

/// A zone's changes: `{"zoneID","records","syncToken","moreComing"}`, or its error.
struct ZoneChangesEntry: Encodable {
    var zoneID: WebServicesZoneID
    var records: [RecordEntry]?
    var syncToken: String?
    var moreComing: Bool?
    var serverErrorCode: String?
    var reason: String?
    var uuid: String?
}

struct DatabaseChangesResponse: Encodable {
    var zones: [ZoneEntry]
    var syncToken: String
    var moreComing: Bool
}

extension WebServicesAPI {
    /// `records/changes`: a zone's records changed and deleted since a token.
    func recordChanges(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(ZoneChangesRequest.self, from: body, what: "records/changes")
        let entry = try changes(request, in: database)
        return .records(entry.records ?? [], before: { json in
            json.key("moreComing", first: true)
            json.bool(entry.moreComing ?? false)
            json.raw(",")
        }, after: { json in
            json.key("syncToken")
            json.string(entry.syncToken ?? "")
            json.key("zoneID")
            json.zoneID(entry.zoneID)
        })
    }

    /// `changes/zone`: several zones' changes at once; a zone that fails is its entry's error.
    func zonesChanges(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(ZonesChangesRequest.self, from: body, what: "changes/zone")
        guard !request.zones.isEmpty else { throw WebError.badRequest("changes/zone needs at least one zone") }
        guard request.zones.count <= Self.maximumOperations else {
            throw WebError(.limitExceeded, "changes/zone takes at most \(Self.maximumOperations) zones, not \(request.zones.count)")
        }
        var entries: [ZoneChangesEntry] = []
        for zoneRequest in request.zones {
            do {
                entries.append(try changes(zoneRequest, in: database))
            } catch let error as WebError where error.code != .badRequest {
                entries.append(ZoneChangesEntry(zoneID: zoneRequest.zoneID, serverErrorCode: error.code.rawValue, reason: error.reason, uuid: UUID().uuidString))
            }
        }
        return .json(["zones": entries])
    }

    private func changes(_ request: ZoneChangesRequest, in database: Database) throws -> ZoneChangesEntry {
        let zoneID = try zone(request.zoneID, in: database)
        let token = try request.syncToken.map { text in try library { try ChangeToken(stringValue: text) } }
        let limit = try Self.limit(request.resultsLimit, default: 200, maximum: 2_000)
        let changes = try library { try database.recordZoneChanges(inZoneWith: zoneID, since: token, resultsLimit: limit) }
        let shaping = RecordShaping(desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings ?? false)
        let records = changes.modifications.map { RecordEntry.record(shaping.shape($0, container: container)) }
            + changes.deletions.map { RecordEntry.deleted(WebServicesDeletedRecord(recordName: $0.recordID.recordName, recordType: $0.recordType, zoneID: zoneID)) }
        return ZoneChangesEntry(zoneID: WebServicesZoneID(zoneID), records: records, syncToken: changes.changeToken.description, moreComing: changes.moreComing)
    }

    /// `changes/database` (`zones/changes`): the zones changed since a database token.
    func databaseChanges(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(DatabaseChangesRequest.self, from: body, what: "changes/database")
        let token = try request.syncToken.map { text in try library { try DatabaseChangeToken(stringValue: text) } }
        _ = try Self.limit(request.resultsLimit, default: 200, maximum: 10_000)
        let changes = try library { try database.databaseChanges(since: token) }
        let zones = changes.changedZones.map { ZoneEntry(zoneID: WebServicesZoneID($0), atomic: !$0.isDefault) }
            + changes.deletedZones.map { ZoneEntry(zoneID: WebServicesZoneID($0), deleted: true) }
        return .json(DatabaseChangesResponse(zones: zones, syncToken: changes.changeToken.description, moreComing: false))
    }

    /// `users/caller`: who the node's store belongs to.
    func caller() throws -> WebResponse {
        struct Caller: Encodable {
            var userRecordName: String
            var deviceID: String
            var deviceName: String?
        }
        return .json(Caller(userRecordName: try library { try container.accountID }, deviceID: container.deviceID, deviceName: try library { try container.deviceName() }))
    }
}
