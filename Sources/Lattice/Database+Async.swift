import Dispatch
import Foundation
@_spi(Tools) import LatticeCore

/// The record calls apps use, in `async` form as CloudKit's are: the store
/// work runs on a background queue, never on the caller's thread or actor.
extension Database {
    private static let work = DispatchQueue(label: "lattice.database", qos: .userInitiated, attributes: .concurrent)

    private func offCaller<T: Sendable>(_ body: @escaping @Sendable () throws(LatticeError) -> T) async throws(LatticeError) -> T {
        let result: Result<T, LatticeError> = await withCheckedContinuation { continuation in
            Self.work.async {
                do throws(LatticeError) { continuation.resume(returning: .success(try body())) } catch { continuation.resume(returning: .failure(error)) }
            }
        }
        return try result.get()
    }

    @discardableResult
    public func save(_ record: Record, savePolicy: SavePolicy = .ifServerRecordUnchanged) async throws(LatticeError) -> Record {
        try await offCaller { () throws(LatticeError) in try self.save(record, savePolicy: savePolicy) }
    }

    public func record(for recordID: Record.ID) async throws(LatticeError) -> Record {
        try await offCaller { () throws(LatticeError) in try self.record(for: recordID) }
    }

    @discardableResult
    public func deleteRecord(withID recordID: Record.ID) async throws(LatticeError) -> Record.ID {
        try await offCaller { () throws(LatticeError) in try self.deleteRecord(withID: recordID) }
    }

    public func records(matching query: Query, inZoneWith zoneID: Zone.ID = .default, resultsLimit: Int = Database.maximumResults) async throws(LatticeError) -> (matchResults: [Record], queryCursor: Query.Cursor?) {
        try await offCaller { () throws(LatticeError) in try self.records(matching: query, inZoneWith: zoneID, resultsLimit: resultsLimit) }
    }

    public func modifyRecords(
        saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
        savePolicy: SavePolicy = .ifServerRecordUnchanged, atomically: Bool = true
    ) async throws(LatticeError) -> ModifyResults {
        try await offCaller { () throws(LatticeError) in
            try self.modifyRecords(saving: recordsToSave, deleting: recordIDsToDelete, savePolicy: savePolicy, atomically: atomically)
        }
    }

    @discardableResult
    public func save(_ zone: Zone) async throws(LatticeError) -> Zone {
        try await offCaller { () throws(LatticeError) in try self.save(zone) }
    }

    public func recordZoneChanges(inZoneWith zoneID: Zone.ID, since token: ChangeToken?) async throws(LatticeError) -> ZoneChanges {
        try await offCaller { () throws(LatticeError) in try self.recordZoneChanges(inZoneWith: zoneID, since: token) }
    }
}
