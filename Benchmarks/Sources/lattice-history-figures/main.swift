import Foundation
import GRDB
@_spi(Benchmarks) @_spi(Tools) import Lattice
@_spi(Tools) import LatticeCore
import Workload

// History and selective sync figures, as JSON lines on stdout (a summary on stderr):
//   lattice-history-figures merge [--records 100000] [--runs 3]
//        the merge workload into an empty store (and the two other scenarios), history kept against off,
//        alternately in one run: seconds (best of R) and the store's bytes after
//   lattice-history-figures updates [--updates 100000] [--names 1000]
//        local updates of one field, 1,000 per commit, history kept against off: the store's bytes
//   lattice-history-figures fetch [--transactions 1000000] [--reads 50]
//        fetchHistory of the last 1,000 transactions of a history of N (one save per commit)
//   lattice-history-figures at [--versions 10000] [--reads 50]
//        a record read as of its first version, through 10,000 later ones: the library and `lattice record get --at`
//   lattice-history-figures propagation [--saves 300]
//        a library save on A until B's query sees it, with history kept on both nodes against off on both
//   lattice-history-figures selective [--records 100000] [--rounds 3]
//        an empty node syncs two equal zones from another, or only one of them: seconds and bytes received

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? "merge"
func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let value = Int(arguments[index + 1]) else { return fallback }
    return value
}
func emit(_ object: [String: Any]) {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    FileHandle.standardOutput.write(data + Data("\n".utf8))
}
func say(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return Double(now() - start) / 1e9
}
func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-history-figures-\(UUID().uuidString)")
// LATTICE_BENCH_KEEP=1 keeps the stores (their directory is printed) to look at them after.
defer { if ProcessInfo.processInfo.environment["LATTICE_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(at: root) } else { say("kept \(root.path)") } }

/// The store's pages in use, tables and indexes (SQLite's dbstat), its write-ahead log included.
func storeBytes(_ container: Container) throws -> Int64 {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try DatabaseQueue(path: container.directory.appendingPathComponent("lattice.sqlite").path, configuration: configuration)
    defer { try? queue.close() }
    return try queue.read { try Int64.fetchOne($0, sql: "SELECT SUM(pgsize) FROM dbstat") ?? 0 }
}

func merge() throws {
    let records = option("--records", 100_000)
    let runs = option("--runs", 3)
    for scenario in Workload.Scenario.allCases {
        var best: [Bool: Double] = [true: .infinity, false: .infinity]
        var bytes: [Bool: Int64] = [:]
        for run in 0..<runs {
            for kept in [true, false] {
                let directory = root.appendingPathComponent("merge-\(scenario.rawValue)-\(kept)-\(run)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let (receiver, changeSet) = try Workload.prepareStore(scenario, records: records, directory: directory, keepingHistory: kept)
                best[kept] = min(best[kept]!, try seconds { _ = try receiver.apply(changeSet: changeSet) })
                bytes[kept] = try storeBytes(receiver)
            }
        }
        let ratio = best[true]! / best[false]!
        let sizeRatio = Double(bytes[true]!) / Double(bytes[false]!)
        emit(["figure": "merge", "scenario": scenario.rawValue, "records": records, "secondsWithHistory": best[true]!, "secondsWithout": best[false]!,
              "timeRatio": ratio, "bytesWithHistory": bytes[true]!, "bytesWithout": bytes[false]!, "sizeRatio": sizeRatio])
        say("merge \(scenario.rawValue): \(String(format: "%.3f", best[true]!)) s with history, \(String(format: "%.3f", best[false]!)) s without (\(String(format: "%.2f", ratio))x); store \(bytes[true]! / 1024) KiB against \(bytes[false]! / 1024) KiB (\(String(format: "%.2f", sizeRatio))x)")
    }
}

func updates() throws {
    let total = option("--updates", 100_000)
    let names = option("--names", 1_000)
    var results: [Bool: (Int64, Double)] = [:]
    for kept in [true, false] {
        let container = try Container(identifier: "bench", directory: root.appendingPathComponent("updates-\(kept)"))
        try container.setHistoryKept(kept)
        let database = container.privateCloudDatabase
        let seed = (0..<names).map { i -> Lattice.Record in
            var record = Lattice.Record(recordType: "Track", recordName: Workload.name(i))
            for (name, value) in Workload.fields(record: i, generation: 0) { record[name] = value }
            return record
        }
        _ = try database.modifyRecords(saving: seed, deleting: [], savePolicy: .allKeys)
        let before = try storeBytes(container)
        var done = 0
        let time = try seconds {
            while done < total {
                let batch = (0..<min(1_000, total - done)).map { k -> Lattice.Record in
                    var record = Lattice.Record(recordType: "Track", recordName: Workload.name((done + k) % names))
                    record["plays"] = .int64(Int64(done + k))
                    return record
                }
                _ = try database.modifyRecords(saving: batch, deleting: [], savePolicy: .changedKeys)
                done += batch.count
            }
        }
        results[kept] = (try storeBytes(container) - before, time)
    }
    emit(["figure": "updates", "updates": total, "names": names, "bytesWithHistory": results[true]!.0, "bytesWithout": results[false]!.0,
          "secondsWithHistory": results[true]!.1, "secondsWithout": results[false]!.1])
    say("\(total) updates of one field: the store grew \(results[true]!.0 / 1024) KiB with history, \(results[false]!.0 / 1024) KiB without; \(String(format: "%.2f", results[true]!.1)) s against \(String(format: "%.2f", results[false]!.1)) s")
}

@Model final class Entry {
    var title: String = ""
    var count: Int = 0
    init(title: String, count: Int) {
        self.title = title
        self.count = count
    }
}

func fetch() async throws {
    let transactions = option("--transactions", 1_000_000)
    let reads = option("--reads", 50)
    let directory = root.appendingPathComponent("fetch")
    do {
        let container = try Container(identifier: "bench", directory: directory)
        let database = container.privateCloudDatabase
        let started = now()
        // One save per commit, written without waiting for the disk between them (as `lattice batch`): a history of N transactions.
        try container.withoutDurableCommits {
            for i in 0..<transactions {
                var record = Lattice.Record(recordType: "Entry", recordName: "e\(i % 10_000)")
                record["title"] = .string("entry \(i)")
                record["count"] = .int64(Int64(i))
                try database.save(record, savePolicy: .changedKeys)
                if i % 100_000 == 99_999 { say("  \(i + 1) transactions written") }
            }
        }
        say("wrote \(transactions) transactions in \(String(format: "%.1f", Double(now() - started) / 1e9)) s; store \(try storeBytes(container) / 1_048_576) MiB")
    }
    let models = try await ModelContainer(for: [Entry.self], configuration: ModelConfiguration("bench", directory: directory, sync: .none))
    let context = ModelContext(models)
    var descriptor = HistoryDescriptor<DefaultHistoryTransaction>(sortBy: [SortDescriptor(\.token, order: .reverse)])
    descriptor.fetchLimit = 1_000
    var times: [Double] = []
    var count = 0
    for _ in 0..<reads { times.append(try seconds { count = try context.fetchHistory(descriptor).count } * 1000) }
    emit(["figure": "fetchHistory", "transactions": transactions, "fetched": count, "p50ms": percentile(times, 0.5), "p99ms": percentile(times, 0.99)])
    say("fetchHistory of the last \(count) of \(transactions) transactions: p50 \(String(format: "%.2f", percentile(times, 0.5))) ms, p99 \(String(format: "%.2f", percentile(times, 0.99))) ms")
    await models.close()
}

func at() throws {
    let versions = option("--versions", 10_000)
    let reads = option("--reads", 50)
    let directory = root.appendingPathComponent("at")
    let id = Record.ID(recordName: "often")
    var times: [Double] = []
    let first: HistoryToken
    do {
        let container = try Container(identifier: "bench", directory: directory)
        let database = container.privateCloudDatabase
        try container.withoutDurableCommits {
            for i in 0..<versions {
                var record = Lattice.Record(recordType: "Entry", recordID: id)
                record["title"] = .string("version \(i)")
                record["count"] = .int64(Int64(i))
                try database.save(record, savePolicy: .changedKeys)
            }
        }
        first = try database.history(record: "often", limit: 1).first!.token
        var title: FieldValue?
        for _ in 0..<reads { times.append(try seconds { title = try database.record(id, asOf: .token(first))?["title"] } * 1000) }
        precondition(title == .string("version 0"), "read \(String(describing: title))")
    }
    // The CLI, a process per read, once this process has let go of the store: what a script pays.
    let cli = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("lattice")
    var cliTimes: [Double] = []
    if FileManager.default.isExecutableFile(atPath: cli.path) {
        // Timed by a shell between the reads: Foundation's Process costs tens of milliseconds itself on Linux.
        let script = """
            for i in $(seq \(min(reads, 20))); do
              s=$(date +%s%N); "$LATTICE" record get _defaultZone/often --at \(first) --store "$STORE" --container bench > /dev/null || exit 1; e=$(date +%s%N)
              echo $(( (e - s) / 1000 ))
            done
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ["LATTICE": cli.path, "STORE": directory.path, "PATH": "/usr/bin:/bin"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        precondition(process.terminationStatus == 0, "lattice record get --at failed")
        cliTimes = text.split(separator: "\n").compactMap { Double($0).map { $0 / 1000 } }
    }
    emit(["figure": "recordAsOf", "versions": versions, "p50ms": percentile(times, 0.5), "p99ms": percentile(times, 0.99),
          "cliP50ms": cliTimes.isEmpty ? -1 : percentile(cliTimes, 0.5)])
    say("a record as of its first of \(versions) versions: p50 \(String(format: "%.2f", percentile(times, 0.5))) ms, p99 \(String(format: "%.2f", percentile(times, 0.99))) ms"
        + (cliTimes.isEmpty ? " (build the release lattice beside this tool to time the CLI)" : "; `lattice record get --at` p50 \(String(format: "%.1f", percentile(cliTimes, 0.5))) ms"))
}

func selective() async throws {
    let records = option("--records", 100_000)
    let rounds = option("--rounds", 3)
    let left = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Left"))
    let right = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Right"))
    var best: [Bool: (seconds: Double, bytes: Int)] = [:]
    for round in 0..<rounds {
        for onlyOne in [false, true] {
            let pair = try SyncPair()
            let sender = Workload.memoryReplica(1, clock: Workload.Clock())
            for zone in [left, right] {
                sender.createZone(zone)
                try Workload.write(sender, records: 0..<records, generation: 0, in: zone)
                try pair.a.apply(changeSet: sender.makeChangeSet(for: zone, since: VersionVector()))
            }
            if onlyOne { try pair.b.privateCloudDatabase.setReplicated(right.zoneID, false) }
            let time = try await pair.timeInitialSync()
            let bytes = pair.bytesBReceived()
            await pair.stop()
            if best[onlyOne].map({ time < $0.seconds }) ?? true { best[onlyOne] = (time, bytes) }
            say("round \(round + 1): \(onlyOne ? "one zone" : "both zones"): \(String(format: "%.2f", time)) s, \(bytes / 1024) KiB received")
        }
    }
    let timeRatio = best[true]!.seconds / best[false]!.seconds
    let byteRatio = Double(best[true]!.bytes) / Double(best[false]!.bytes)
    emit(["figure": "selective initial sync", "recordsPerZone": records, "secondsBoth": best[false]!.seconds, "secondsOne": best[true]!.seconds,
          "bytesBoth": best[false]!.bytes, "bytesOne": best[true]!.bytes, "timeRatio": timeRatio, "byteRatio": byteRatio])
    say("initial sync of one of two equal zones: \(String(format: "%.0f", timeRatio * 100))% of the time, \(String(format: "%.0f", byteRatio * 100))% of the bytes")
}

func propagation() async throws {
    let saves = option("--saves", 300)
    var results: [Bool: [Double]] = [:]
    for kept in [true, false] {
        let pair = try SyncPair()
        for container in [pair.a, pair.b] { try container.setHistoryKept(kept) }
        try await pair.a.privateCloudDatabase.save(Zone(zoneName: "bench"))
        try await pair.start()
        let zone = Zone.ID(zoneName: "bench")
        var times: [Double] = []
        for i in 0..<saves {
            var record = Lattice.Record(recordType: "Entry", recordName: "e\(i % 50)", zoneID: zone)
            record["title"] = .string("entry \(i)")
            let started = now()
            try await pair.a.privateCloudDatabase.save(record, savePolicy: .changedKeys)
            while (try? await pair.b.privateCloudDatabase.record(for: record.recordID))?["title"] != .string("entry \(i)") { try await Task.sleep(nanoseconds: 100_000) }
            times.append(Double(now() - started) / 1e6)
        }
        await pair.stop()
        results[kept] = times
    }
    emit(["figure": "propagation", "saves": saves, "p50msWithHistory": percentile(results[true]!, 0.5), "p99msWithHistory": percentile(results[true]!, 0.99),
          "p50msWithout": percentile(results[false]!, 0.5), "p99msWithout": percentile(results[false]!, 0.99)])
    say("a save until the peer sees it: p50 \(String(format: "%.2f", percentile(results[true]!, 0.5))) ms with history, \(String(format: "%.2f", percentile(results[false]!, 0.5))) ms without; p99 \(String(format: "%.2f", percentile(results[true]!, 0.99))) against \(String(format: "%.2f", percentile(results[false]!, 0.99))) ms")
}

do {
    switch mode {
    case "propagation": try await propagation()
    case "merge": try merge()
    case "updates": try updates()
    case "fetch": try await fetch()
    case "at": try at()
    case "selective": try await selective()
    default:
        say("usage: lattice-history-figures merge|updates|fetch|at|propagation|selective [options]")
        exit(64)
    }
} catch {
    say("lattice-history-figures: \(error)")
    exit(1)
}
