import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@testable import LatticeStore
import Testing

/// A store opened for one command reads on the writer's connection: what
/// other processes commit is still seen, a read inside a write still works,
/// and several threads may use it at once.
@Suite struct OneCommandStoreTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-one-command-\(UUID().uuidString)")

    func save(_ store: RecordStore, _ name: String) throws {
        try store.write { _ = try $0.save(name, type: "Movie", in: zone, changes: [("title", .string(name))], replacement: .changedKeys) }
    }

    func names(_ store: RecordStore) throws -> [String] {
        try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state.recordName) }.sorted()
    }

    /// Every commit syncs the log (power loss loses no returned write): the
    /// pool's switch to WAL sets `synchronous = NORMAL`, which the store undoes.
    @Test func commitsSyncTheLog() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        for readsOnWriter in [false, true] {
            let store = try RecordStore(directory: directory, readsOnWriterConnection: readsOnWriter)
            #expect(try store.write { try Int.fetchOne($0.db, sql: "PRAGMA synchronous") } == 2, "FULL is 2")
        }
    }

    @Test func readsOnTheWriterSeeOtherConnectionsCommitsAndNestInsideWrites() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let node = try RecordStore(directory: directory)
        try node.write { _ = try $0.createZone(zone) }
        try save(node, "up")
        let command = try RecordStore(directory: directory, create: false, readsOnWriterConnection: true)
        #expect(try names(command) == ["up"])
        // Another connection (a running node, say) commits: the next read sees it.
        try save(node, "coco")
        #expect(try names(command) == ["coco", "up"])
        // A read inside a write goes to a reader connection instead of deadlocking on the writer's queue.
        let inside = try command.write { transaction -> [String] in
            _ = try transaction.save("wall-e", type: "Movie", in: zone, changes: [("title", .string("WALL-E"))], replacement: .changedKeys)
            return try names(command)
        }
        #expect(inside == ["coco", "up"], "a read inside a write sees the last commit, not the write under way")
        #expect(try names(node) == ["coco", "up", "wall-e"])
        // Threads reading and writing at once.
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            try? save(command, "t\(index)")
            _ = try? names(command)
        }
        #expect(try names(node).count == 11)
    }
}
