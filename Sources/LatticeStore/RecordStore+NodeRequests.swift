import Foundation
import GRDB

/// A request another process made of the node running on the store.
package struct NodeRequest: Sendable, Hashable {
    package var id: Int64
    package var kind: String
    package var body: [UInt8]
}

/// A mailbox in the store between a running node and other processes on it:
/// posting a request wakes the node as a commit does, and its answer wakes
/// the poster's next read.
extension RecordStore {
    /// Posts a request; returns its ID. Requests older than an hour (their poster gave up) go.
    package func postNodeRequest(kind: String, body: [UInt8]) throws -> Int64 {
        try write { transaction in
            let now = Int64(RecordStore.systemWallClock())
            try transaction.db.execute(sql: "DELETE FROM node_requests WHERE posted < ?", arguments: [now - 3_600_000])
            try transaction.db.execute(sql: "INSERT INTO node_requests (kind, body, posted) VALUES (?, ?, ?)", arguments: [kind, Data(body), now])
            transaction.markChanged()
            transaction.wakesWatchers = true
            return transaction.db.lastInsertedRowID
        }
    }

    /// Requests not answered yet.
    package func pendingNodeRequests() throws -> [NodeRequest] {
        try read { snapshot in
            try Row.fetchAll(snapshot.db, sql: "SELECT id, kind, body FROM node_requests WHERE answer IS NULL ORDER BY id").map {
                NodeRequest(id: $0[0], kind: $0[1], body: [UInt8]($0[2] as Data))
            }
        }
    }

    /// The node's answer to a request.
    package func answerNodeRequest(_ id: Int64, with answer: [UInt8]) throws {
        try write { transaction in
            try transaction.db.execute(sql: "UPDATE node_requests SET answer = ? WHERE id = ?", arguments: [Data(answer), id])
            transaction.markChanged()
        }
    }

    /// The answer to a request once the node gave it; the request is then removed.
    package func takeNodeAnswer(_ id: Int64) throws -> [UInt8]? {
        guard let answer = try read({ try Data.fetchOne($0.db, sql: "SELECT answer FROM node_requests WHERE id = ?", arguments: [id]) }) else { return nil }
        try withdrawNodeRequest(id)
        return [UInt8](answer)
    }

    /// The poster gave up (or took the answer).
    package func withdrawNodeRequest(_ id: Int64) throws {
        try write { transaction in
            try transaction.db.execute(sql: "DELETE FROM node_requests WHERE id = ?", arguments: [id])
            transaction.markChanged()
        }
    }
}
