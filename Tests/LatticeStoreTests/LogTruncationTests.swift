import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@testable import LatticeStore
import LatticeTestSupport
import Testing

/// A process about to exit truncates the store's write-ahead log, unless
/// another process reads: then it leaves the log, at once, rather than wait
/// the 30 s busy timeout for a running node's readers.
@Suite struct LogTruncationTests {
    let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Z"))

    @Test func truncatingTheLogUnderAReaderGivesUpWithoutWaitingAndLaterSucceeds() throws {
        let directory = TemporaryDirectory()
        let store = try directory.store(zones: [zone])
        try store.write { transaction in
            for index in 0..<2_000 { try transaction.save("r\(index)", type: "T", in: zone, changes: [("v", .string(String(repeating: "x", count: 1_000)))]) }
        }
        var configuration = Configuration()
        configuration.readonly = true
        let reader = try DatabaseQueue(path: directory.url.appendingPathComponent("store/\(RecordStore.databaseFileName)").path, configuration: configuration)
        try reader.read { db in
            _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records")
            #expect(try store.truncateLog(ifLargerThan: 1 << 20) == false, "the log was truncated under a reader")
            // It gave up at once: the checkpoint ran with no busy timeout (30 s otherwise).
            #expect(try store.pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA busy_timeout") } == 0)
        }
        try reader.close()
        #expect(try store.truncateLog(ifLargerThan: 1 << 20))
        #expect(try store.truncateLog(ifLargerThan: 1 << 20) == false, "an empty log is left alone")
    }
}
