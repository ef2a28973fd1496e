import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore

/// A point in a whole database's history on one store, as CloudKit's
/// database change token: zones changed after it are those
/// `databaseChanges(since:)` lists, and a zone's own token at the same
/// point is `changeToken(inZoneWith:at:)`.
public struct DatabaseChangeToken: Hashable, Sendable, CustomStringConvertible {
    let storeID: [UInt8]
    /// The store's commit sequence: every record change after it has a higher one.
    let sequence: UInt64

    public var description: String {
        var writer = BinaryWriter()
        writer.raw(storeID)
        writer.varint(sequence)
        return "D" + Base64URL.encode(writer.bytes)
    }

    /// Reads the printed form; anything else is invalidArguments.
    public init(stringValue: String) throws(LatticeError) {
        guard stringValue.hasPrefix("D"), let bytes = Base64URL.decode(String(stringValue.dropFirst())), bytes.count > 16 else {
            throw LatticeError(.invalidArguments, "\"\(stringValue)\" is not a database change token")
        }
        var reader = BinaryReader(bytes)
        guard let id = try? reader.raw(16), let sequence = try? reader.varint(), reader.isAtEnd else {
            throw LatticeError(.invalidArguments, "\"\(stringValue)\" is not a database change token")
        }
        self.init(storeID: Array(id), sequence: sequence)
    }

    init(storeID: [UInt8], sequence: UInt64) {
        self.storeID = storeID
        self.sequence = sequence
    }

    /// The earlier of two tokens of one store: a stream of several zones resumes from there and misses nothing.
    public static func earlier(_ lhs: DatabaseChangeToken, _ rhs: DatabaseChangeToken) -> DatabaseChangeToken {
        lhs.sequence <= rhs.sequence ? lhs : rhs
    }
}

/// The zones of a database whose records changed since a token.
public struct DatabaseChanges: Sendable {
    /// Zones with records changed or deleted since the token (every zone without one).
    public var changedZones: [Zone.ID]
    /// Zones deleted since (or, without a token, gone).
    public var deletedZones: [Zone.ID]
    public var changeToken: DatabaseChangeToken
}

extension ChangeToken {
    /// The database token at the same point of the store's history.
    public var databaseToken: DatabaseChangeToken { DatabaseChangeToken(storeID: storeID, sequence: sequence) }
}

extension Database {
    /// A token for "now" in this database.
    public func currentDatabaseChangeToken() throws(LatticeError) -> DatabaseChangeToken {
        try LatticeError.wrap { DatabaseChangeToken(storeID: store.storeID, sequence: try store.read { try $0.sequence() }) }
    }

    /// A zone's change token at the point `token` names: `recordZoneChanges` from it lists what the zone got since.
    public func changeToken(inZoneWith zoneID: Zone.ID, at token: DatabaseChangeToken) throws(LatticeError) -> ChangeToken {
        try checkStore(of: token)
        var zoneToken = try currentChangeToken(inZoneWith: zoneID)
        zoneToken.sequence = min(zoneToken.sequence, token.sequence)
        return zoneToken
    }

    /// The zones whose records changed since `token` (all zones when nil), as
    /// CloudKit's `changes/database` lists them; their records come from
    /// `recordZoneChanges(inZoneWith:since:)` with `changeToken(inZoneWith:at:)`.
    /// A zone created empty since the token is not listed until a record is saved in it.
    public func databaseChanges(since token: DatabaseChangeToken?) throws(LatticeError) -> DatabaseChanges {
        if let token { try checkStore(of: token) }
        let now = try currentDatabaseChangeToken()
        let zones = try allRecordZones().map(\.zoneID)
        guard let token else { return DatabaseChanges(changedZones: zones, deletedZones: [], changeToken: now) }
        var changed: [Zone.ID] = []
        for zoneID in zones {
            let since = try changeToken(inZoneWith: zoneID, at: token)
            let changes: ZoneChanges
            do {
                changes = try recordZoneChanges(inZoneWith: zoneID, since: since, resultsLimit: 1)
            } catch let error where error.code == .changeTokenExpired {
                changed.append(zoneID) // re-created or collected since: the caller fetches it whole
                continue
            }
            if !changes.modifications.isEmpty || !changes.deletions.isEmpty { changed.append(zoneID) }
        }
        let deleted = try LatticeError.wrap {
            try store.read { snapshot in
                try snapshot.zones(in: databaseScope).filter { try !$0.sync.zoneState.exists && !snapshot.records(changedAfter: token.sequence, in: $0.key, limit: 1).isEmpty }
                    .map(\.key.zoneID)
            }
        }
        return DatabaseChanges(changedZones: changed, deletedZones: deleted, changeToken: now)
    }

    private func checkStore(of token: DatabaseChangeToken) throws(LatticeError) {
        guard token.storeID == store.storeID else {
            throw LatticeError(.changeTokenExpired, "the database change token comes from another store; fetch all changes again (no token)")
        }
    }
}

extension Container {
    /// Wakes at every commit to the store, from this process or any other,
    /// until the consumer stops (several commits may wake it once). Where the
    /// store's path is too long for a Unix socket, it wakes every `interval` seconds instead.
    public func commits(interval: Double = 0.05) -> AsyncStream<Void> {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        if let watcher = try? CommitWatcher(store: directory, onCommit: { wake.yield(()) }) {
            wake.onTermination = { _ in watcher.stop() }
        } else {
            let poller = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
                    wake.yield(())
                }
            }
            wake.onTermination = { _ in poller.cancel() }
        }
        return wakes
    }
}
