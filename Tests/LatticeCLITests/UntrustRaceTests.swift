import Foundation
import Lattice
import NIOConcurrencyHelpers
import LatticeTestSupport
import Testing

/// `untrust` while batches stream both ways between two real nodes: from the
/// moment it commits, the node neither applies nor sends another batch of
/// that device's session, whether it hears of the change through its
/// wake-up socket or, with a store path too long for a socket address,
/// another way.
@Suite(.serialized) struct UntrustRaceTests {
    /// Commits batches of 50 records named `PREFIX<batch>-<i>` to a store, until stopped.
    final class Writer: @unchecked Sendable {
        private let running = NIOLockedValueBox(true)
        private let done = DispatchSemaphore(value: 0)

        init(store: String, prefix: String) throws {
            let database = try Container(identifier: "default", directory: URL(fileURLWithPath: store), create: false).privateCloudDatabase
            let running = running
            let done = done
            Thread.detachNewThread {
                var batch = 0
                while running.withLockedValue({ $0 }) {
                    let records = (0..<50).map { index -> Record in
                        var record = Record(recordType: "Item", recordName: "\(prefix)\(batch)-\(index)", zoneID: Zone.ID(zoneName: "Items"))
                        record["batch"] = .int64(Int64(batch))
                        return record
                    }
                    _ = try? database.modifyRecords(saving: records, deleting: [], savePolicy: .allKeys)
                    batch += 1
                }
                done.signal()
            }
        }

        func stop() {
            running.withLockedValue { $0 = false }
            done.wait()
        }
    }

    /// The batches of `prefix` records that `store` holds.
    func batches(_ cli: CLI, _ store: String, prefix: String) throws -> Set<Int> {
        let database = try Container(identifier: "default", directory: URL(fileURLWithPath: cli.path(store)), create: false).privateCloudDatabase
        var found: Set<Int> = []
        var page = try database.records(matching: Query(recordType: "Item"), inZoneWith: Zone.ID(zoneName: "Items"))
        while true {
            for record in page.matchResults where record.recordID.recordName.hasPrefix(prefix) {
                if case .int64(let batch)? = record["batch"] { found.insert(Int(batch)) }
            }
            guard let cursor = page.queryCursor else { return found }
            page = try database.records(continuingMatchFrom: cursor)
        }
    }

    @Test(arguments: [false, true]) func nothingCrossesOnceUntrustCommits(longStorePath: Bool) throws {
        let cli = CLI()
        defer { cli.cleanup() }
        // Past the ~108 bytes a Unix socket address holds, with the store's own name at the end.
        let parent = longStorePath ? String(repeating: "a-directory-with-a-long-name/", count: 5) : ""
        let (a, b) = (parent + "a", parent + "b")
        #expect(!longStorePath || cli.path(a).utf8.count + "/wake/12345-1234567890.sock".utf8.count > 108)
        var ids: [String: String] = [:]
        for store in [a, b] {
            try cli.ok(["init"], store: store)
            ids[store] = try cli.ok(["id"], store: store).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try cli.ok(["zone", "create", "Items"], store: store)
        }
        try cli.ok(["trust", ids[b]!], store: a)
        try cli.ok(["trust", ids[a]!], store: b)
        let nodeA = try NodeProcess(cli: cli, store: a, logLevel: "warning")
        let nodeB = try NodeProcess(cli: cli, store: b, peers: [nodeA.port], logLevel: "warning")
        defer { for node in [nodeA, nodeB] { node.stop() } }
        let writers = [try Writer(store: cli.path(a), prefix: "a"), try Writer(store: cli.path(b), prefix: "b")]
        defer { for writer in writers { writer.stop() } }
        // Streaming both ways.
        #expect(try eventuallyBlocking(120) { try batches(cli, b, prefix: "a").count >= 5 && batches(cli, a, prefix: "b").count >= 5 })

        try cli.ok(["untrust", ids[b]!], store: a)
        // All a holds of b's now came before the untrust (or with it); all a wrote after this read came after.
        let fromBAtUntrust = try batches(cli, a, prefix: "b")
        let writtenByAAtUntrust = try batches(cli, a, prefix: "a").max() ?? -1
        // Both writers go on: a writes 5 batches more (however loaded the machine), and b's have time to arrive.
        #expect(try eventuallyBlocking(120) { try (batches(cli, a, prefix: "a").max() ?? -1) > writtenByAAtUntrust + 5 }, "a's writer stalled: the test raced nothing")
        Thread.sleep(forTimeInterval: 1)
        let fromBLater = try batches(cli, a, prefix: "b")
        let aOnBLater = try batches(cli, b, prefix: "a")
        #expect(fromBLater == fromBAtUntrust, "a applied \(fromBLater.subtracting(fromBAtUntrust).count) of b's batches after untrusting it")
        let sentAfter = aOnBLater.filter { $0 > writtenByAAtUntrust }
        #expect(sentAfter.isEmpty, "b received a's batches \(sentAfter.sorted().prefix(5)) written after a untrusted it")
        #expect(eventuallyBlocking(30) { nodeA.count("disconnected") >= 1 }, "the untrusted device kept its session")
        let sync = try cli.ok(["status", "--json"], store: a).json["sync"] as? [String: Any]
        #expect(sync?["commitWatch"] as? String == "wake-up socket", "\(sync ?? [:])")
    }
}
