import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

/// A point in a zone's history on one store, as `CKServerChangeToken`.
public struct ChangeToken: Hashable, Sendable, CustomStringConvertible {
    let storeID: [UInt8]
    /// The zone it belongs to, so a token is never read against another zone.
    let zone: String
    let zoneIncarnation: UInt64
    var sequence: UInt64

    /// A printable form that `init(stringValue:)` reads back.
    public var description: String {
        var writer = BinaryWriter()
        writer.raw(storeID)
        writer.string(zone)
        writer.varint(zoneIncarnation)
        writer.varint(sequence)
        return Base64URL.encode(writer.bytes)
    }

    public init(stringValue: String) throws(LatticeError) {
        guard let bytes = Base64URL.decode(stringValue), bytes.count > 16 else {
            throw LatticeError(.invalidArguments, "\"\(stringValue)\" is not a change token")
        }
        var reader = BinaryReader(bytes)
        guard let id = try? reader.raw(16), let zone = try? reader.string(), let incarnation = try? reader.varint(),
              let sequence = try? reader.varint(), reader.isAtEnd else {
            throw LatticeError(.invalidArguments, "\"\(stringValue)\" is not a change token")
        }
        self.init(storeID: Array(id), zone: zone, zoneIncarnation: incarnation, sequence: sequence)
    }

    init(storeID: [UInt8], zone: ZoneKey, zoneIncarnation: UInt64, sequence: UInt64) {
        self.init(storeID: storeID, zone: zone.description, zoneIncarnation: zoneIncarnation, sequence: sequence)
    }

    private init(storeID: [UInt8], zone: String, zoneIncarnation: UInt64, sequence: UInt64) {
        self.storeID = storeID
        self.zone = zone
        self.zoneIncarnation = zoneIncarnation
        self.sequence = sequence
    }
}

/// What changed in a zone since a token, as `recordZoneChanges(inZoneWith:since:)` returns.
public struct ZoneChanges: Sendable {
    public var modifications: [Record]
    public var deletions: [(recordID: Record.ID, recordType: String)]
    public var changeToken: ChangeToken
    /// More changes follow: call again with `changeToken`.
    public var moreComing: Bool
}

extension Database {
    /// Records changed and deleted in a zone since `token` (everything when nil).
    /// A token from another store, another incarnation of the zone or from
    /// before a compaction fails with changeTokenExpired.
    public func recordZoneChanges(inZoneWith zoneID: Zone.ID, since token: ChangeToken?, resultsLimit: Int = 10_000) throws(LatticeError) -> ZoneChanges {
        try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(zoneID, in: snapshot)
                let sync = try snapshot.syncState(of: zone)
                guard zoneID.isDefault || sync?.zoneState.exists == true else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist") }
                let incarnation = sync?.zoneState.causalLength ?? 1
                if let token {
                    guard token.storeID == store.storeID else {
                        throw LatticeError(.changeTokenExpired, "the change token comes from another store; fetch all changes again (no token)")
                    }
                    guard token.zone == zone.description else {
                        throw LatticeError(.invalidArguments, "the change token belongs to zone \(token.zone), not \(zone)")
                    }
                    guard token.zoneIncarnation == incarnation else {
                        throw LatticeError(.changeTokenExpired, "zone \(zoneID) was deleted and re-created since the token; fetch all changes again")
                    }
                    guard token.sequence >= (try snapshot.horizon()) else {
                        throw LatticeError(.changeTokenExpired, "the store was compacted after the token was issued; fetch all changes again, without a token")
                    }
                    guard token.sequence >= (try snapshot.collectionHorizon(in: zone)) else {
                        throw LatticeError(.changeTokenExpired, "records deleted after the token was issued had their tombstones collected, so their deletions cannot be listed; fetch all changes of zone \(zoneID.zoneName) again, without a token")
                    }
                }
                let since = token?.sequence ?? 0
                let changed = try snapshot.records(changedAfter: since, in: zone, limit: resultsLimit + 1)
                let more = changed.count > resultsLimit
                let page = changed.prefix(resultsLimit)
                // Rows share a sequence per commit: never cut a commit in half.
                let boundary = more ? changed[resultsLimit].sequence : UInt64.max
                var complete = Array(page.filter { $0.sequence < boundary })
                if more, complete.isEmpty {
                    // One commit larger than the limit: deliver it whole rather than cut it or fail.
                    complete = try snapshot.records(committedAt: changed[0].sequence, in: zone)
                }
                let end = more ? complete.last!.sequence : max(since, try snapshot.sequence())
                // In the public database, another creator's record of a name this device reads elsewhere keeps its stored name.
                let name = { (state: RecordState) throws in try snapshot.appRecordName(of: state.recordName, in: zone) }
                return ZoneChanges(
                    modifications: try complete.filter { $0.state.isAlive }.map { Record(state: $0.state, zoneID: zoneID, recordName: try name($0.state)) },
                    deletions: try complete.filter { !$0.state.isAlive }.map { (Record.ID(recordName: try name($0.state), zoneID: zoneID), $0.state.recordType) },
                    changeToken: ChangeToken(storeID: store.storeID, zone: zone, zoneIncarnation: incarnation, sequence: end),
                    moreComing: more)
            }
        }
    }

    /// A token for "now" in a zone: changes after it are those still to come.
    public func currentChangeToken(inZoneWith zoneID: Zone.ID) throws(LatticeError) -> ChangeToken {
        try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(zoneID, in: snapshot)
                let sync = try snapshot.syncState(of: zone)
                guard zoneID.isDefault || sync?.zoneState.exists == true else { throw LatticeError(.zoneNotFound, "zone \(zoneID) does not exist") }
                return ChangeToken(storeID: store.storeID, zone: zone, zoneIncarnation: sync?.zoneState.causalLength ?? 1, sequence: try snapshot.sequence())
            }
        }
    }

    // MARK: Conflicts

    /// Losing values of concurrent writes to the record's fields. They are part
    /// of the record, the same on every replica holding it, and stay until a
    /// write to the field or `clearConflicts` resolves them.
    public func conflicts(for recordID: Record.ID) throws(LatticeError) -> [FieldConflict] {
        try LatticeError.wrap {
            try store.read { snapshot in
                let zone = try key(recordID.zoneID, in: snapshot)
                return try snapshot.conflicts(of: snapshot.storedRecordName(recordID.recordName, in: zone, writing: false), in: zone)
            }
        }
    }

    /// Resolves the record's conflicts as they stand: a write that reaches
    /// every replica like any other. Returns false when there were none.
    @discardableResult
    public func clearConflicts(for recordID: Record.ID) throws(LatticeError) -> Bool {
        try LatticeError.wrap {
            try store.write { transaction in
                guard try zoneExists(recordID.zoneID, in: transaction) else {
                    throw LatticeError(.zoneNotFound, "zone \(recordID.zoneID) does not exist")
                }
                let zone = try key(recordID.zoneID, in: transaction)
                let target = try transaction.record(reaching: recordID.recordName, in: zone, writing: true)
                guard target.state?.isAlive == true else { throw LatticeError(.unknownItem, "record \(recordID) does not exist") }
                return try transaction.clearConflicts(of: target.name, in: zone)
            }
        }
    }
}
