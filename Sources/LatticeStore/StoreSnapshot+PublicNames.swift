import GRDB
@_spi(Tools) import LatticeCore

extension StoreSnapshot {
    /// The stored names of public record `name` in `key` (`PublicRecordName`):
    /// the plain name of an earlier build and those qualified by a creator,
    /// in the order this store first held them, with their states.
    package func storedRecordNames(qualifying name: String, in key: ZoneKey) throws -> [(name: String, state: RecordState?)] {
        guard let zone = try zoneRow(key) else { return [] }
        let range = PublicRecordName.qualifiedRange(of: name)
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT name, state FROM records WHERE zone = ? AND (name = ? OR (name >= ? AND name < ?)) ORDER BY id
            """), arguments: [zone.id, name, range.lower, range.upper])
        return try rows.compactMap { row in
            let stored: String = row[0]
            // The range also holds longer plain names that start with `name/`; none is stored, but a
            // qualified name of another plain name (`name/x/REPLICA`) would be.
            guard stored == name || PublicRecordName.parts(of: stored).name == name else { return nil }
            return (stored, try decode(row[1]))
        }
    }

    /// The name an app knows the record stored as `stored` by: its plain
    /// name where that reads this record here (`storedRecordName`), else
    /// the stored name itself (another creator's record of a name this
    /// device reads elsewhere), which reads it back.
    package func appRecordName(of stored: String, in key: ZoneKey) throws -> String {
        guard key.scope == .public, case let plain = String(PublicRecordName.parts(of: stored).name), plain != stored else { return stored }
        return try storedRecordName(plain, in: key, writing: false) == stored ? plain : stored
    }

    /// The record a local read or write (`writing`) of record `name` of
    /// `key` reaches: its stored name and its state (tombstones included;
    /// nil if never seen). Outside the public database, `name` itself; there,
    /// the one `PublicRecordName.resolve` picks among those this store holds.
    package func record(reaching name: String, in key: ZoneKey, writing: Bool) throws -> (name: String, state: RecordState?) {
        guard key.scope == .public, PublicRecordName.parts(of: name).creator == nil else { return (name, try record(name, in: key)) }
        let own = store.replica
        let held = try storedRecordNames(qualifying: name, in: key)
        let chosen = PublicRecordName.resolve(name, among: held, writer: own, isOwn: { $0 == own }, writing: writing)
        return (chosen, held.first { $0.name == chosen }?.state)
    }

    /// The stored name a local read or write (`writing`) of record `name`
    /// of `key` takes (`record(reaching:in:writing:)`).
    package func storedRecordName(_ name: String, in key: ZoneKey, writing: Bool) throws -> String {
        guard key.scope == .public, PublicRecordName.parts(of: name).creator == nil else { return name }
        return try record(reaching: name, in: key, writing: writing).name
    }
}
