import Foundation
import Lattice

/// A zone as responses carry it: `{"zoneID","syncToken"?,"atomic","deleted"?}`, or its error.
struct ZoneEntry: Encodable {
    var zoneID: WebServicesZoneID
    var syncToken: String?
    var atomic: Bool?
    /// Lattice's addition in `zones/list`: how many records the zone holds.
    var recordCount: Int?
    var deleted: Bool?
    var serverErrorCode: String?
    var reason: String?
    var uuid: String?

    static func error(_ zoneID: WebServicesZoneID, _ error: LatticeError) -> ZoneEntry {
        ZoneEntry(zoneID: zoneID, serverErrorCode: WebError.code(of: error.code).rawValue, reason: error.message, uuid: UUID().uuidString)
    }
}

struct ZonesResponse: Encodable {
    var zones: [ZoneEntry]
}

extension WebServicesAPI {
    /// `zones/list`: every zone of the database, with its current change token.
    func listZones(in database: Database) throws -> WebResponse {
        let zones = try library { try database.allRecordZones() }
        return .json(ZonesResponse(zones: try zones.map { zone in
            ZoneEntry(zoneID: WebServicesZoneID(zone.zoneID), syncToken: try library { try database.currentChangeToken(inZoneWith: zone.zoneID).description },
                      atomic: !zone.zoneID.isDefault, recordCount: try library { try database.recordCount(inZoneWith: zone.zoneID) })
        }))
    }

    /// `zones/lookup`: the zones named; one that does not exist is its entry's ZONE_NOT_FOUND.
    func lookupZones(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(ZonesLookupRequest.self, from: body, what: "zones/lookup")
        guard !request.zones.isEmpty else { throw WebError.badRequest("zones/lookup needs at least one zone") }
        let existing = Set(try library { try database.allRecordZones() }.map(\.zoneID))
        return .json(ZonesResponse(zones: try request.zones.map { named in
            let zoneID = try zone(named, in: database)
            guard existing.contains(zoneID) else {
                return .error(named, LatticeError(.zoneNotFound, "zone \(zoneID) does not exist"))
            }
            return ZoneEntry(zoneID: WebServicesZoneID(zoneID), syncToken: try library { try database.currentChangeToken(inZoneWith: zoneID).description },
                             atomic: !zoneID.isDefault)
        }))
    }

    /// `zones/modify`: creates and deletes zones, each on its own.
    func modifyZones(_ body: [UInt8], in database: Database) throws -> WebResponse {
        let request = try RequestBody.decode(ZonesModifyRequest.self, from: body, what: "zones/modify")
        guard !request.operations.isEmpty else { throw WebError.badRequest("zones/modify needs at least one operation") }
        guard request.operations.count <= Self.maximumOperations else {
            throw WebError(.limitExceeded, "zones/modify takes at most \(Self.maximumOperations) operations, not \(request.operations.count)")
        }
        for (index, operation) in request.operations.enumerated() where operation.operationType != "create" && operation.operationType != "delete" {
            throw WebError.badRequest("zone operation \(index + 1): operationType \"\(operation.operationType)\" is neither create nor delete")
        }
        var entries: [ZoneEntry] = []
        for operation in request.operations {
            // Each zone on its own: one that cannot be resolved is its entry's error, after the others are done.
            let zoneID: Zone.ID
            do throws(LatticeError) {
                zoneID = try database.resolveZoneID(operation.zoneID.zoneID)
            } catch {
                entries.append(.error(operation.zoneID, error))
                continue
            }
            do throws(LatticeError) {
                if operation.operationType == "create" {
                    try database.save(Zone(zoneID: zoneID))
                    entries.append(ZoneEntry(zoneID: WebServicesZoneID(zoneID), atomic: !zoneID.isDefault))
                } else {
                    guard try database.allRecordZones().contains(where: { $0.zoneID == zoneID }) else {
                        throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist")
                    }
                    try database.deleteZone(withID: zoneID)
                    entries.append(ZoneEntry(zoneID: WebServicesZoneID(zoneID), deleted: true))
                }
            } catch {
                entries.append(.error(WebServicesZoneID(zoneID), error))
            }
        }
        return .json(ZonesResponse(zones: entries))
    }
}
