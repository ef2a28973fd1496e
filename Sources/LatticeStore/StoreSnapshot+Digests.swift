import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// A zone's digest set as the store holds it: the zone's state as the item
/// with the empty key, then each record's (`record_digests`). Read after
/// `RecordStore.refreshDigests`: records changed since are not in it yet.
extension StoreSnapshot: DigestSource {
    package func digestSum(of zone: ZoneKey, in range: DigestRange) throws -> DigestSum {
        guard let row = try zoneRow(zone) else { return DigestSum() }
        var sum: DigestSum
        if range == .all, let whole = try Row.fetchOne(db.cachedStatement(sql: "SELECT sum, count FROM zone_digests WHERE zone = ?"), arguments: [row.id]) {
            sum = DigestSum(bytes: [UInt8](whole[0] as Data), count: whole[1])
        } else {
            sum = DigestSum()
            try forEachRecordItem(zone: row.id, in: range) { _, hash in sum.add(hash) }
        }
        if range.contains([]) { sum.add(try row.sync.zoneState.digestHash()) }
        return sum
    }

    package func digestItems(of zone: ZoneKey, in range: DigestRange) throws -> [DigestItem] {
        guard let row = try zoneRow(zone) else { return [] }
        var items: [DigestItem] = range.contains([]) ? [try DigestItem(row.sync.zoneState)] : []
        try forEachRecordItem(zone: row.id, in: range) { items.append(DigestItem(key: $0, hash: $1)) }
        return items
    }

    package func digestParts(of zone: ZoneKey, in range: DigestRange, parts: Int) throws -> [DigestPart] {
        guard let row = try zoneRow(zone) else { return [DigestPart(upper: range.upper, sum: DigestSum())] }
        let hasZoneItem = range.contains([])
        let (clause, arguments) = Self.rangeClause(zone: row.id, range)
        let records = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM record_digests WHERE \(clause)"), arguments: arguments) ?? 0
        var splitter = DigestSplitter(total: records + (hasZoneItem ? 1 : 0), parts: parts, range: range)
        if hasZoneItem { splitter.add(key: [], hash: try row.sync.zoneState.digestHash()) }
        try forEachRecordItem(zone: row.id, in: range) { splitter.add(key: $0, hash: $1) }
        return splitter.finish()
    }

    private func forEachRecordItem(zone: Int64, in range: DigestRange, _ body: ([UInt8], [UInt8]) throws -> Void) throws {
        let (clause, arguments) = Self.rangeClause(zone: zone, range)
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT key, hash FROM record_digests WHERE \(clause) ORDER BY key"), arguments: arguments)
        while let row = try rows.next() {
            try body([UInt8](row[0] as Data), [UInt8](row[1] as Data))
        }
    }

    /// Keys are BLOBs, so SQLite compares them as bytes (memcmp), as `digestKeyPrecedes` does.
    private static func rangeClause(zone: Int64, _ range: DigestRange) -> (String, StatementArguments) {
        switch range.upper {
        case .some(let upper): return ("zone = ? AND key >= ? AND key < ?", [zone, Data(range.lower), Data(upper)])
        case .none: return ("zone = ? AND key >= ?", [zone, Data(range.lower)])
        }
    }
}

/// A record row's digest item, hashed in a read snapshot: taken in a short
/// write only if the row is still what was hashed.
package struct DigestWork: Sendable {
    var key: Data
    /// The row's state as hashed; nil when the row is gone.
    var blob: Data?
    var hash: [UInt8]?
}

extension StoreSnapshot {
    /// Up to `limit` rows noted as written or removed since the last refresh,
    /// hashed here (a read: writers do not wait for the hashing).
    func digestWork(for key: ZoneKey, limit: Int) throws -> [DigestWork] {
        guard let zone = try zoneRow(key)?.id else { return [] }
        let keys = try Data.fetchAll(db.cachedStatement(sql: "SELECT key FROM digest_dirty WHERE zone = ? LIMIT ?"), arguments: [zone, limit])
        let current = try db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND name = ?")
        return try keys.map { key in
            guard let name = String(data: key, encoding: .utf8), let blob = try Data.fetchOne(current, arguments: [zone, name]) else {
                return DigestWork(key: key, blob: nil, hash: nil)
            }
            return DigestWork(key: key, blob: blob, hash: try decode(blob).digestHash())
        }
    }
}

extension StoreTransaction {
    /// Takes hashed rows into the zone's digest items and sum: each whose row
    /// is still what was hashed (else it stays noted, for the next refresh).
    /// Takes no change sequence (a digest is derived state). Returns how many were taken.
    func takeDigestWork(_ work: [DigestWork], for key: ZoneKey) throws -> Int {
        guard let zone = try zoneRow(key)?.id, !work.isEmpty else { return 0 }
        var sum = DigestSum()
        if let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT sum, count FROM zone_digests WHERE zone = ?"), arguments: [zone]) {
            sum = DigestSum(bytes: [UInt8](row[0] as Data), count: row[1])
        }
        let old = try db.cachedStatement(sql: "SELECT hash FROM record_digests WHERE zone = ? AND key = ?")
        let current = try db.cachedStatement(sql: "SELECT state FROM records WHERE zone = ? AND name = ?")
        let save = try db.cachedStatement(sql: "INSERT OR REPLACE INTO record_digests (zone, key, hash) VALUES (?, ?, ?)")
        let forget = try db.cachedStatement(sql: "DELETE FROM record_digests WHERE zone = ? AND key = ?")
        let done = try db.cachedStatement(sql: "DELETE FROM digest_dirty WHERE zone = ? AND key = ?")
        var taken = 0
        for item in work {
            let now = try String(data: item.key, encoding: .utf8).flatMap { try Data.fetchOne(current, arguments: [zone, $0]) }
            guard now == item.blob else { continue } // written again since it was hashed
            if let previous = try Data.fetchOne(old, arguments: [zone, item.key]) { sum.remove([UInt8](previous)) }
            if let hash = item.hash {
                sum.add(hash)
                try save.execute(arguments: [zone, item.key, Data(hash)])
            } else {
                try forget.execute(arguments: [zone, item.key])
            }
            try done.execute(arguments: [zone, item.key])
            taken += 1
        }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO zone_digests (zone, sum, count) VALUES (?, ?, ?)")
            .execute(arguments: [zone, Data(sum.bytes), sum.count])
        markChanged()
        return taken
    }

    /// The zone's records are gone: so are their digest items.
    func forgetDigests(zone: Int64) throws {
        for table in ["record_digests", "zone_digests", "digest_dirty"] {
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE zone = ?").execute(arguments: [zone])
        }
    }
}

extension RecordStore {
    /// Rows taken into the digests per write: about a millisecond of writing.
    static let digestWorkPerWrite = 100

    /// Brings the digests of `zones` up to date with the record rows. Rows
    /// are hashed in read snapshots, `digestWorkPerWrite` at a time, and taken in short
    /// writes, so a zone hashed for the first time (a million records: some
    /// seconds) neither holds writers back nor takes more than half a core.
    package func refreshDigests(of zones: [ZoneKey]) throws {
        for zone in zones {
            while true {
                let started = DispatchTime.now().uptimeNanoseconds
                let work = try read { try $0.digestWork(for: zone, limit: Self.digestWorkPerWrite) }
                guard !work.isEmpty else { break }
                // Short writes that do not wait for the disk: a save queued behind one waits
                // about a millisecond, and a power loss only leaves the rows noted for later.
                let taken = try write(durably: false) { try $0.takeDigestWork(work, for: zone) }
                // Rows written again meanwhile wait for the next refresh: no spinning on a busy zone.
                if taken == 0 || work.count < Self.digestWorkPerWrite { break }
                // A long refresh takes at most half a core: the node's syncing comes first.
                usleep(UInt32(min(1_000_000, (DispatchTime.now().uptimeNanoseconds - started) / 1000)))
            }
        }
    }
}

extension StoreSnapshot {
    /// The states of `names` held here (tombstones too), as one change set
    /// that claims nothing: what a peer whose digest differs on them is sent,
    /// so the merge brings both sides together. Nil when none is held. Its
    /// proofs cover every write the records show (the peer's vector said it
    /// held them, yet its digest shows it does not hold them alike).
    /// At most about `maximumBytes` of states: the names left out are returned, for the next batch.
    package func repairBatch(for key: ZoneKey, names: [String], includingSchema: Bool, maximumBytes: Int) throws -> (batch: StreamBatch?, left: [String]) {
        guard let zone = try zoneRow(key) else { return (nil, []) }
        var states: [RecordState] = []
        var bytes = 0
        var taken = 0
        for name in names {
            guard bytes < maximumBytes else { break }
            taken += 1
            guard let state = try record(name, in: key) else { continue }
            states.append(state)
            bytes += state.fields.reduce(64) { $0 + $1.name.utf8.count + 32 + ($1.value.map { RecordBlob.encodeValue($0).count } ?? 0) }
        }
        let left = Array(names.dropFirst(taken))
        guard !states.isEmpty else { return (nil, left) }
        var header = ChangeSetHeader(zone: key, sync: zone.sync, base: VersionVector(), schema: includingSchema ? try schema() : Schema(), claimsTop: false)
        if key.scope == .shared { header.memberships = try memberships(of: header.replicas).map(\.encoded) }
        var out: [UInt8] = []
        var writer = try ChangeSetWriter(header: header, proofs: proofCollector(for: key, base: VersionVector())) { out.append(contentsOf: $0) }
        for state in states { try writer.append(state) }
        try writer.finish()
        return (StreamBatch(bytes: out, cursor: ChangeCursor(sequence: 0, row: 0), final: false, records: states.count, zoneState: zone.sync.zoneState, claimedTop: nil), left)
    }
}
