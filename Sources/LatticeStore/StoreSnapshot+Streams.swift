import Foundation
import GRDB
@_spi(Tools) import LatticeCore

/// A position in a store's change order: records are streamed by (change sequence, row).
package struct ChangeCursor: Hashable, Comparable, Sendable {
    package var sequence: UInt64
    package var row: UInt64

    package init(sequence: UInt64, row: UInt64) {
        self.sequence = sequence
        self.row = row
    }

    /// After every record of `sequence`.
    package static func end(of sequence: UInt64) -> ChangeCursor { ChangeCursor(sequence: sequence, row: (1 << 62) - 1) }

    package static func < (lhs: ChangeCursor, rhs: ChangeCursor) -> Bool { (lhs.sequence, lhs.row) < (rhs.sequence, rhs.row) }
}

/// One batch of a zone's stream: a complete change set.
package struct StreamBatch: Sendable {
    package var bytes: [UInt8]
    package var cursor: ChangeCursor
    /// The batch reached the zone's end in its snapshot, and claims the zone's vector.
    package var final: Bool
    package var records: Int
    package var zoneState: ZoneState
    /// The vector a final batch claims.
    package var claimedTop: VersionVector?
}

extension StoreSnapshot {
    /// The next batch of `key`'s stream after `cursor` for a peer known to
    /// hold `peerVector`, read in this (short) snapshot: at most
    /// `maximumRecords` records or about `maximumBytes`. Records the peer's
    /// vector covers are skipped; records unchanged since the last checkpoint
    /// the vector covers are not even read. Nil when the peer lacks nothing.
    ///
    /// A stream is many snapshots: a record changed meanwhile moves past the
    /// cursor and comes again later, and the claim is made by the batch that
    /// reaches the end, with that snapshot's vector, so it always holds.
    /// `includingSchema` false leaves the schema out of the header: it names the
    /// private database's record types too, and a stranger gets the public one alone.
    package func streamBatch(
        for key: ZoneKey, after cursor: ChangeCursor, peerVector: VersionVector, peerZoneState: ZoneState?, maximumRecords: Int, maximumBytes: Int,
        includingSchema: Bool = true, elidingCoveredGhostsFor receiver: ReplicaID? = nil
    ) throws -> StreamBatch? {
        guard let zone = try zoneRow(key) else { return nil }
        let (cursor, start) = try streamStart(zoneID: zone.id, after: cursor, peerVector: peerVector)
        var states: [RecordState] = []
        var position = cursor
        var bytes = 0
        var reachedEnd = true
        var read = 0
        try forEachChange(inZone: zone.id, after: start, limit: maximumRecords + 1) { row in
            read += 1
            if read > maximumRecords || bytes >= maximumBytes {
                reachedEnd = false
                return false
            }
            let blob: Data = row[2]
            position = ChangeCursor(sequence: UInt64(row[1] as Int64), row: UInt64(row[0] as Int64))
            let state = try decode(blob)
            if peerVector.dominates(state.vector) { return true }
            states.append(state)
            bytes += blob.count
            return true
        }
        if reachedEnd, states.isEmpty, peerVector.dominates(zone.sync.vector), peerZoneState == zone.sync.zoneState {
            return nil
        }
        if reachedEnd {
            // Everything after the cursor in this snapshot is in this batch.
            position = max(position, ChangeCursor.end(of: try sequence()))
        }
        // A store that lost writes of its own claims no more of its own than it holds.
        var told = zone.sync
        told.vector = try vectorToTell(zone.sync, in: key)
        var header = ChangeSetHeader(zone: key, sync: told, base: peerVector, schema: includingSchema ? try schema() : Schema(), claimsTop: reachedEnd)
        header.elidesCoveredGhosts = receiver != nil && ChangeSetHeader.elides(in: key, base: peerVector)
        if key.scope == .shared { header.memberships = try memberships(of: header.replicas).map(\.encoded) }
        // The share goes first: the records after it are judged by the share it brings (the writes an owner device vouches for).
        if let index = states.firstIndex(where: { $0.recordName == Share.recordName }), index > 0 { states.insert(states.remove(at: index), at: 0) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes + 256)
        var writer = try ChangeSetWriter(header: header, proofs: proofCollector(for: key, base: peerVector), receiver: receiver) { out.append(contentsOf: $0) }
        for state in states { try writer.append(state) }
        try writer.finish()
        return StreamBatch(bytes: out, cursor: max(position, cursor), final: reachedEnd, records: states.count, zoneState: zone.sync.zoneState, claimedTop: reachedEnd ? told.vector : nil)
    }

    /// A batch of the zone's share alone, for a device of an account the share
    /// lists but no longer admits (removed, or left): it learns that, and
    /// nothing else. Nil when the share has not changed after `cursor`. It
    /// claims nothing, so it never ends the stream.
    package func shareBatch(for key: ZoneKey, after cursor: ChangeCursor, peerVector: VersionVector) throws -> StreamBatch? {
        guard let zone = try zoneRow(key),
              let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, change_seq, state FROM records WHERE zone = ? AND name = ?"), arguments: [zone.id, Share.recordName])
        else { return nil }
        let position = ChangeCursor(sequence: UInt64(row[1] as Int64), row: UInt64(row[0] as Int64))
        let state = try decode(row[2])
        guard position > cursor, !peerVector.dominates(state.vector) else { return nil }
        var header = ChangeSetHeader(zone: key, sync: zone.sync, base: peerVector, schema: Schema(), claimsTop: false)
        header.memberships = try memberships(of: header.replicas).map(\.encoded)
        var out: [UInt8] = []
        var writer = try ChangeSetWriter(header: header, proofs: proofCollector(for: key, base: peerVector)) { out.append(contentsOf: $0) }
        try writer.append(state)
        try writer.finish()
        return StreamBatch(bytes: out, cursor: max(position, cursor), final: false, records: 1, zoneState: zone.sync.zoneState, claimedTop: nil)
    }

    /// The peers whose batches made the commits after `sequence` (the recent
    /// ones: see `StoreTransaction.commitSource`), by commit sequence.
    package func commitSources(after sequence: UInt64) throws -> [UInt64: String] {
        var sources: [UInt64: String] = [:]
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT sequence, peer FROM commit_sources WHERE sequence > ?"), arguments: [Int64(clamping: sequence)])
        while let row = try rows.next() { sources[UInt64(row[0] as Int64)] = row[1] }
        return sources
    }

    /// Where a stream resumes: after the peer's cursor, or after the last
    /// checkpoint its vector covers, whichever is later. A cursor past this
    /// store's history (the store was restored from an older copy) means nothing here.
    private func streamStart(zoneID: Int64, after cursor: ChangeCursor, peerVector: VersionVector) throws -> (cursor: ChangeCursor, start: ChangeCursor) {
        let cursor = cursor.sequence > (try sequence()) ? ChangeCursor(sequence: 0, row: 0) : cursor
        return (cursor, max(cursor, ChangeCursor.end(of: try deltaStart(zoneID: zoneID, for: peerVector))))
    }

    /// How many records and bytes of `key` lie after `cursor`: what a stream
    /// from there sends at most, for progress.
    package func streamTotals(for key: ZoneKey, after cursor: ChangeCursor, peerVector: VersionVector) throws -> (records: Int, bytes: Int) {
        guard let zone = try zoneRow(key) else { return (0, 0) }
        let start = try streamStart(zoneID: zone.id, after: cursor, peerVector: peerVector).start
        // The rest of the cursor's commit, then the commits after it: one range each on the index.
        let rest = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT COUNT(*), COALESCE(SUM(LENGTH(state)), 0) FROM records WHERE zone = ? AND change_seq = ? AND id > ?
            """), arguments: [zone.id, Int64(start.sequence), Int64(clamping: start.row)])
        let after = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT COUNT(*), COALESCE(SUM(LENGTH(state)), 0) FROM records WHERE zone = ? AND change_seq > ?
            """), arguments: [zone.id, Int64(start.sequence)])
        return ((rest?[0] ?? 0) + (after?[0] ?? 0), (rest?[1] ?? 0) + (after?[1] ?? 0))
    }

    /// Rows (id, change_seq, state) of the zone after `start` in change order,
    /// at most `limit`, until `body` returns false. Two queries, the rest of
    /// `start`'s commit and then the commits after it, because one condition
    /// joining them with OR makes SQLite walk the whole of `start`'s commit
    /// (a 100,000-record commit on every stream that re-opens past it).
    func forEachChange(inZone zoneID: Int64, after start: ChangeCursor, limit: Int, _ body: (Row) throws -> Bool) throws {
        var taken = 0
        let rest = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT id, change_seq, state FROM records WHERE zone = ? AND change_seq = ? AND id > ? ORDER BY id LIMIT ?
            """), arguments: [zoneID, Int64(start.sequence), Int64(clamping: start.row), limit])
        while let row = try rest.next() {
            taken += 1
            guard try body(row) else { return }
        }
        guard taken < limit else { return }
        let later = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT id, change_seq, state FROM records WHERE zone = ? AND change_seq > ? ORDER BY change_seq, id LIMIT ?
            """), arguments: [zoneID, Int64(start.sequence), limit - taken])
        while let row = try later.next() {
            guard try body(row) else { return }
        }
    }
}
