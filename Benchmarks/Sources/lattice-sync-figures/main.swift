import Foundation
@_spi(Benchmarks) @_spi(Tools) import Lattice
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Workload

// Sync figures for the README, as JSON lines on stdout (a summary on stderr):
//   lattice-sync-figures propagation [--saves 1000] [--other-records N] [--series]
//                                                          a library save on A until a query on B sees it (with N
//                                                          records in another synced zone both nodes hold)
//   lattice-sync-figures propagation-cli [--saves 200]     the same, saved by a separate `lattice record save` process
//   lattice-sync-figures initial [--records 100000] [--no-indexes]   an empty node syncs the merge workload (two
//                                                          indexed fields unless --no-indexes); crypto, store and network apart
//   lattice-sync-figures databases [--records 100000] [--rounds 3]
//                                                          an empty node syncs the workload from the private database
//                                                          (same account) and from the public one (another account), alternately
//   lattice-sync-figures shared [--records 100000] [--rounds 3] [--saves 1000]
//                                                          the private database within the account against a zone shared
//                                                          with another account (from its acceptance); then a read-write
//                                                          participant's saves until the owner sees them
//   lattice-sync-figures assets [--megabytes 1024] [--saves 300]
//                                                          a large asset fetched A -> B on demand (MB/s, peak RSS); then
//                                                          small saves' propagation while another such asset moves
//   lattice-sync-figures diff [--records 1000000]         `lattice diff` of two stores of the workload: in sync, then 1, 10
//                                                          and 1,000 records differing (round trips, bytes, time)
//   lattice-sync-figures churn [--rounds 100000] [--names 1000]
//                                                          one store saves and deletes the same names round after round,
//                                                          with tombstones collected (every 1,000 rounds) and without:
//                                                          the store's size, table by table
//   lattice-sync-figures between --a DIR --b DIR [--saves 200] [--label TEXT]
//                                                          propagation between two stores whose nodes run elsewhere
//                                                          (`lattice serve` processes): saves alternate A->B and B->A
// Otherwise both nodes run in this process, on loopback, encrypted, with durable (synchronous=FULL) stores.

let arguments = Array(CommandLine.arguments.dropFirst())
let mode = arguments.first ?? "propagation"
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
func percentile(_ sorted: [Double], _ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }

let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-sync-figures-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: root) }

func propagation(cli: Bool) async throws {
    let saves = option("--saves", cli ? 200 : 1000)
    let pair = try SyncPair()
    let a = pair.a
    let zone = Zone.ID(zoneName: "bench")
    try await a.privateCloudDatabase.save(Zone(zoneName: "bench"))
    // --other-records N: another synced zone of N workload records, held by both nodes
    // before the saves begin (a save's cost must not grow with what other zones hold).
    let otherRecords = option("--other-records", 0)
    if otherRecords > 0 {
        try await a.privateCloudDatabase.save(Zone(zoneName: "Library"))
        let library = Zone.ID(zoneName: "Library")
        for start in stride(from: 0, to: otherRecords, by: 10_000) {
            let records = (start..<min(otherRecords, start + 10_000)).map { i in
                var record = Record(recordType: "Track", recordName: Workload.name(i), zoneID: library)
                for (field, value) in Workload.fields(record: i, generation: 0) { record[field] = value }
                return record
            }
            _ = try await a.privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        }
    }
    // --unchecked: neither node checks the other's signatures (what the check costs).
    if arguments.contains("--unchecked") {
        pair.a.skipWriteChecks()
        pair.b.skipWriteChecks()
    }
    try await pair.start()
    if otherRecords > 0 {
        // The other zone's pages reach the disk before the saves begin: their
        // writeback would slow the saves' fsyncs, a cost of filling it, not of holding it.
        sync()
        try await Task.sleep(nanoseconds: 2_000_000_000)
    }
    var saving: [Double] = []
    let lattice = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/release/lattice")
    var samples: [Double] = []
    for i in 0..<saves {
        let name = Workload.name(i)
        let start = now()
        if cli {
            let process = Process()
            process.executableURL = lattice
            process.arguments = ["record", "save", "bench/\(name)", "--type", "Track", "title=t\(i)", "plays:int=\(i)", "--store", a.directory.path, "--container", "bench"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        } else {
            var record = Record(recordType: "Track", recordName: name, zoneID: zone)
            for (field, value) in Workload.fields(record: i, generation: 0) { record[field] = value }
            try await a.privateCloudDatabase.save(record)
            saving.append(Double(now() - start) / 1e6)
        }
        // Visible in a query on B: wait for B to commit a batch from A, then ask.
        await pair.waitUntilBHas(name, in: zone)
        samples.append(Double(now() - start) / 1e6)
        // --series: every save's time on stderr, to see a transient (a zone's digests hashed after a sync).
        if arguments.contains("--series") { say("save \(i) \(String(format: "%.3f", samples.last!)) ms") }
    }
    samples.sort()
    saving.sort()
    let label = (cli ? "propagation, CLI save process" : "propagation, library save") + (arguments.contains("--unchecked") ? ", unchecked" : "")
        + (otherRecords > 0 ? ", \(otherRecords) records in another zone" : "")
    emit(["figure": label, "saves": saves, "other_records": otherRecords, "p50_ms": percentile(samples, 0.5), "p99_ms": percentile(samples, 0.99), "max_ms": samples.last!,
          "save_p50_ms": saving.isEmpty ? 0 : percentile(saving, 0.5)])
    say("\(label): p50 \(String(format: "%.2f", percentile(samples, 0.5))) ms, p99 \(String(format: "%.2f", percentile(samples, 0.99))) ms over \(saves) saves"
        + (saving.isEmpty ? "" : String(format: " (the save itself: p50 %.2f ms)", percentile(saving, 0.5))))
    if cli {
        // What a CLI process costs by itself, for scale: the same save on an unconnected store.
        let alone = try Container(identifier: "bench", directory: root.appendingPathComponent("alone"))
        try await alone.privateCloudDatabase.save(Zone(zoneName: "bench"))
        var own: [Double] = []
        for i in 0..<50 {
            let start = now()
            let process = Process()
            process.executableURL = lattice
            process.arguments = ["record", "save", "bench/x\(i)", "--type", "Track", "title=t", "--store", alone.directory.path, "--container", "bench"]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            own.append(Double(now() - start) / 1e6)
        }
        own.sort()
        emit(["figure": "CLI save process alone", "p50_ms": percentile(own, 0.5)])
        say("a `lattice record save` process alone takes \(String(format: "%.1f", percentile(own, 0.5))) ms (p50)")
    }
    await pair.stop()
}

/// Propagation between two stores served by other processes: a save in one
/// store (in this process, as an app would) until a read of the other sees it.
func between() throws {
    func text(_ name: String) -> String? { arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } }
    guard let a = text("--a"), let b = text("--b") else {
        say("between needs --a DIR --b DIR")
        exit(2)
    }
    let saves = option("--saves", 200)
    let databases = try [a, b].map { try Container(identifier: "default", directory: URL(fileURLWithPath: $0), create: false).privateCloudDatabase }
    let zone = Zone.ID(zoneName: "Ping")
    let tag = UUID().uuidString.prefix(8)
    var samples: [Double] = []
    for i in 0..<saves {
        let (from, to) = i % 2 == 0 ? (databases[0], databases[1]) : (databases[1], databases[0])
        var record = Record(recordType: "Ping", recordName: "\(tag)-\(i)", zoneID: zone)
        record["n"] = .int64(Int64(i))
        _ = try from.save(record)
        let start = now()
        while (try? to.record(for: record.recordID)) == nil {
            guard Double(now() - start) / 1e9 < 60 else { throw LatticeError(.networkUnavailable, "save \(i) did not arrive in 60 s") }
            usleep(500)
        }
        samples.append(Double(now() - start) / 1e6)
        usleep(20_000)
    }
    samples.sort()
    let label = text("--label") ?? "between"
    emit(["figure": "propagation between served stores", "label": label, "saves": saves,
          "p50_ms": percentile(samples, 0.5), "p99_ms": percentile(samples, 0.99), "max_ms": samples.last!])
    say("\(label): p50 \(String(format: "%.2f", percentile(samples, 0.5))) ms, p99 \(String(format: "%.2f", percentile(samples, 0.99))) ms over \(saves) saves")
}

func initial() async throws {
    let records = option("--records", 100_000)
    let pair = try SyncPair()
    let (a, b) = (pair.a, pair.b)
    // A holds the merge workload (100,000 records x 8 fields), written through the store's merge path.
    let (sender, _) = try Workload.prepareMemory(.empty, records: 0, indexed: !arguments.contains("--no-indexes"))
    try Workload.write(sender, records: 0..<records, generation: 0)
    try a.apply(changeSet: sender.makeChangeSet(for: Workload.zone, since: VersionVector()))

    // Store alone: produce every batch on A, apply every batch on B', no network, no crypto.
    let scratch = try Container(identifier: "bench", directory: root.appendingPathComponent("scratch"))
    try a.trust(deviceID: scratch.deviceID)
    try scratch.trust(deviceID: a.deviceID)
    let delegateA = try a.syncDelegate()
    let delegateScratch = try scratch.syncDelegate()
    var cursor = StreamCursor.start
    var produceNanos: UInt64 = 0, applyNanos: UInt64 = 0, bytes = 0, batches: [[UInt8]] = []
    var vector = VersionVector()
    while true {
        let t0 = now()
        guard let batch = try delegateA.produceBatch(BatchRequest(
            zone: Workload.zone, after: cursor, peerVector: vector, peerZoneState: nil, wantsTotals: false,
            maximumRecords: SyncSession.Configuration().batchRecords, maximumBytes: SyncSession.Configuration().batchBytes), for: scratch.identity.deviceID) else { break }
        produceNanos += now() - t0
        let t1 = now()
        let applied = try delegateScratch.applyBatch(IncomingBatch(zone: Workload.zone, bytes: batch.bytes, cursor: batch.cursor, final: batch.final, records: batch.records), from: a.identity.deviceID)
        applyNanos += now() - t1
        bytes += batch.bytes.count
        batches.append(batch.bytes)
        cursor = batch.cursor
        vector = applied.vector
        if batch.final { break }
    }
    // The same batches applied to a store that does not check signatures: what the check costs the store.
    let bare = try Container(identifier: "bench", directory: root.appendingPathComponent("scratch-unchecked"))
    try bare.trust(deviceID: a.deviceID)
    bare.skipWriteChecks()
    let delegateBare = try bare.syncDelegate()
    var uncheckedApplyNanos: UInt64 = 0
    var bareCursor = StreamCursor.start
    for (index, batch) in batches.enumerated() {
        let t = now()
        _ = try delegateBare.applyBatch(IncomingBatch(zone: Workload.zone, bytes: batch, cursor: StreamCursor(sequence: UInt64(index + 1), row: 0), final: index == batches.count - 1, records: 0), from: a.identity.deviceID)
        uncheckedApplyNanos += now() - t
        bareCursor = StreamCursor(sequence: UInt64(index + 1), row: 0)
    }
    _ = bareCursor

    // Crypto alone: seal and open every byte in frames of the wire's part size.
    var sealer = try SecretStreamSender(key: [UInt8](repeating: 1, count: 32))
    var opener = try SecretStreamReceiver(key: [UInt8](repeating: 1, count: 32), header: sealer.header)
    let t2 = now()
    for batch in batches {
        var offset = 0
        while offset < batch.count {
            let end = min(offset + SyncWire.partSize, batch.count)
            _ = try opener.open(try sealer.seal(Array(batch[offset..<end])))
            offset = end
        }
    }
    let cryptoNanos = now() - t2

    // What the proofs add: the same records and header without them.
    var reader = ChangeSetReader(source: ArrayByteSource(try sender.makeChangeSet(for: Workload.zone, since: VersionVector())))
    let header = try reader.readHeader()!
    var states: [RecordState] = []
    while let state = try reader.nextRecord() { states.append(state) }
    let withProofs = try MemoryReplica.encode(header: header, records: states, proofs: ProofCollector(base: VersionVector()) { replica, time in
        try sender.writeBlock(of: replica, in: Workload.zone, covering: time)
    }).count
    let withoutProofs = try MemoryReplica.encode(header: header, records: states, proofs: nil).count
    let blocks = reader.proofs.count

    // The whole thing: B's node connects to A's and syncs until both are caught up;
    // then again, between two new stores, with B not checking A's signatures.
    let start = now()
    try await pair.start()
    let total = Double(now() - start) / 1e9
    let count = try b.privateCloudDatabase.recordCount(inZoneWith: .default)
    precondition(count == records, "B has \(count) of \(records) records")
    await pair.stop()
    let unchecked = try SyncPair()
    try unchecked.a.apply(changeSet: sender.makeChangeSet(for: Workload.zone, since: VersionVector()))
    unchecked.b.skipWriteChecks()
    let uncheckedStart = now()
    try await unchecked.start()
    let uncheckedTotal = Double(now() - uncheckedStart) / 1e9
    let uncheckedCount = try unchecked.b.privateCloudDatabase.recordCount(inZoneWith: .default)
    precondition(uncheckedCount == records, "B has \(uncheckedCount) of \(records) records")
    await unchecked.stop()
    emit(["figure": "initial sync, writes checked or not", "records": records, "checked_s": total, "unchecked_s": uncheckedTotal,
          "change_set_bytes": withProofs, "change_set_bytes_without_proofs": withoutProofs, "blocks": blocks])
    say(String(format: "initial sync with every write checked %.2f s, without the check %.2f s (%+.0f%%); the change set holds %d blocks: %.1f MB with proofs, %.1f MB without (%.1f bytes a record, %.0f a block)",
               total, uncheckedTotal, (total / uncheckedTotal - 1) * 100, blocks, Double(withProofs) / 1e6, Double(withoutProofs) / 1e6,
               Double(withProofs - withoutProofs) / Double(records), Double(withProofs - withoutProofs) / Double(max(blocks, 1))))
    let store = Double(produceNanos + applyNanos) / 1e9
    let crypto = Double(cryptoNanos) / 1e9
    emit(["figure": "initial sync", "records": records, "bytes": bytes, "total_s": total, "store_produce_s": Double(produceNanos) / 1e9,
          "store_apply_s": Double(applyNanos) / 1e9, "store_apply_unchecked_s": Double(uncheckedApplyNanos) / 1e9, "crypto_s": crypto, "rest_s": max(0, total - store - crypto)])
    say(String(format: "initial sync of %d records (%.1f MB): %.2f s; store %.2f s (produce %.2f, apply %.2f), crypto %.3f s, network and scheduling %.2f s",
               records, Double(bytes) / 1e6, total, store, Double(produceNanos) / 1e9, Double(applyNanos) / 1e9, crypto, max(0, total - store - crypto)))
}

/// The initial sync of the private database within an account against the
/// public database's to a device of another account, the same workload, in
/// alternating rounds so the machine's drift falls on both alike.
func databases() async throws {
    let records = option("--records", 100_000)
    let rounds = option("--rounds", 3)
    let (sender, _) = try Workload.prepareMemory(.empty, records: 0)
    try Workload.write(sender, records: 0..<records, generation: 0)
    sender.createZone(Workload.publicZone)
    try Workload.write(sender, records: 0..<records, generation: 0, in: Workload.publicZone)
    let privateSet = try sender.makeChangeSet(for: Workload.zone, since: VersionVector())
    let publicSet = try sender.makeChangeSet(for: Workload.publicZone, since: VersionVector())
    var times: [String: [Double]] = ["private": [], "public": []]
    for _ in 0..<rounds {
        for database in ["private", "public"] {
            let isPublic = database == "public"
            let pair = try SyncPair(trusted: !isPublic)
            try pair.a.apply(changeSet: isPublic ? publicSet : privateSet)
            let start = now()
            try await pair.start()
            times[database]!.append(Double(now() - start) / 1e9)
            let count = try (isPublic ? pair.b.publicCloudDatabase : pair.b.privateCloudDatabase).recordCount(inZoneWith: .default)
            precondition(count == records, "B has \(count) of \(records) \(database) records")
            if isPublic {
                let leaked = try pair.b.privateCloudDatabase.recordCount(inZoneWith: .default)
                precondition(leaked == 0, "the private database reached another account")
            }
            await pair.stop()
        }
    }
    let privateMedian = times["private"]!.sorted()[rounds / 2]
    let publicMedian = times["public"]!.sorted()[rounds / 2]
    emit(["figure": "initial sync by database", "records": records, "rounds": rounds, "private_s": privateMedian, "public_to_stranger_s": publicMedian,
          "ratio": publicMedian / privateMedian])
    say(String(format: "initial sync of %d records, median of %d: private database within the account %.2f s, public database to another account %.2f s (%.2fx)",
               records, rounds, privateMedian, publicMedian, publicMedian / privateMedian))
}

/// A zone shared between two accounts: its initial sync to a participant
/// (from acceptance until it holds every record) against the private
/// database's within an account, alternately; then a read-write
/// participant's saves until the owner's queries see them.
func shared() async throws {
    let records = option("--records", 100_000)
    let rounds = option("--rounds", 3)
    let saves = option("--saves", 1000)
    let (sender, _) = try Workload.prepareMemory(.empty, records: 0)
    sender.createZone(Workload.listsZone)
    try Workload.write(sender, records: 0..<records, generation: 0, in: Workload.listsZone)
    let lists = try sender.makeChangeSet(for: Workload.listsZone, since: VersionVector())
    var times: [String: [Double]] = ["private": [], "shared": []]
    var lastPair: SyncPair?
    for round in 0..<rounds {
        // The private database within the account, as `databases` measures it.
        let within = try SyncPair()
        try within.a.apply(changeSet: lists)
        var start = now()
        try await within.start()
        times["private"]!.append(Double(now() - start) / 1e9)
        let held = try within.b.privateCloudDatabase.recordCount(inZoneWith: ZoneID(zoneName: "Lists"))
        precondition(held == records, "B has \(held) of \(records) records")
        await within.stop()

        // B owns the zone and shares it read-write with A's account; A accepts, and takes it.
        let pair = try SyncPair(trusted: false)
        try pair.b.apply(changeSet: lists)
        let zone = try pair.b.share(zone: "Lists", with: try pair.a.accountID).zoneID
        try await pair.start()
        while (try pair.a.shareInvitations()).isEmpty { try await Task.sleep(nanoseconds: 1_000_000) }
        start = now()
        try pair.a.acceptShare("Lists")
        while try pair.a.sharedCloudDatabase.recordCount(inZoneWith: zone) < records { try await Task.sleep(nanoseconds: 1_000_000) }
        times["shared"]!.append(Double(now() - start) / 1e9)
        if round == rounds - 1 { lastPair = pair } else { await pair.stop() }
    }
    let privateMedian = times["private"]!.sorted()[rounds / 2]
    let sharedMedian = times["shared"]!.sorted()[rounds / 2]
    emit(["figure": "initial sync of a shared zone", "records": records, "rounds": rounds, "private_s": privateMedian, "shared_to_participant_s": sharedMedian,
          "ratio": sharedMedian / privateMedian])
    say(String(format: "initial sync of %d records, median of %d: private database within the account %.2f s, shared zone to another account (from its acceptance) %.2f s (%.2fx)",
               records, rounds, privateMedian, sharedMedian, sharedMedian / privateMedian))

    // The participant (A) saves to a zone of its own, fresh as `propagation`'s; the owner (B) sees each save in a query.
    let pair = lastPair!
    try await pair.b.privateCloudDatabase.save(Zone(zoneName: "Chat"))
    let zone = try pair.b.share(zone: "Chat", with: try pair.a.accountID).zoneID
    while !(try pair.a.shareInvitations()).contains(where: { $0.zone == zone }) { try await Task.sleep(nanoseconds: 1_000_000) }
    try pair.a.acceptShare("Chat")
    while !(try pair.a.shares()).contains(where: { $0.zoneID == zone && $0.permission == .readWrite }) { try await Task.sleep(nanoseconds: 1_000_000) }
    var samples: [Double] = []
    var saving: [Double] = []
    for i in 0..<saves {
        let name = "p\(i)"
        var record = Record(recordType: "Track", recordName: name, zoneID: zone)
        for (field, value) in Workload.fields(record: i, generation: 1) { record[field] = value }
        let start = now()
        try await pair.a.sharedCloudDatabase.save(record)
        saving.append(Double(now() - start) / 1e6)
        await pair.waitUntilBHas(name, in: zone, database: .shared)
        samples.append(Double(now() - start) / 1e6)
    }
    samples.sort()
    saving.sort()
    emit(["figure": "propagation, read-write participant to owner", "saves": saves, "p50_ms": percentile(samples, 0.5), "p99_ms": percentile(samples, 0.99), "max_ms": samples.last!,
          "save_p50_ms": percentile(saving, 0.5)])
    say(String(format: "a read-write participant's save until the owner's query sees it: p50 %.2f ms, p99 %.2f ms over %d saves (the save itself: p50 %.2f ms)",
               percentile(samples, 0.5), percentile(samples, 0.99), saves, percentile(saving, 0.5)))
    await pair.stop()
}

/// Peak resident memory of this process so far, in MB (both nodes run in it).
func peakRSSMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes / 1024
}

/// A large asset from A to B, fetched on demand, encrypted and checked, to
/// disk; then small saves on A while another such transfer runs, until B sees them.
func assets() async throws {
    let megabytes = option("--megabytes", 1024)
    let saves = option("--saves", 300)
    let pair = try SyncPair()
    try await pair.a.privateCloudDatabase.save(Zone(zoneName: "bench"))
    let zone = Zone.ID(zoneName: "bench")
    func makeAsset(_ name: String, seed: UInt64) async throws -> AssetReference {
        let url = pair.root.appendingPathComponent(name)
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        var state = seed
        var block = [UInt64](repeating: 0, count: 1 << 17) // 1 MiB
        for _ in 0..<megabytes {
            for index in block.indices { state = state &* 6364136223846793005 &+ 1442695040888963407; block[index] = state }
            try handle.write(contentsOf: block.withUnsafeBytes { Data($0) })
        }
        try handle.close()
        let value = try pair.a.importAsset(fileAt: url)
        try FileManager.default.removeItem(at: url)
        var record = Record(recordType: "Film", recordName: name, zoneID: zone)
        record["content"] = value
        try await pair.a.privateCloudDatabase.save(record)
        guard case .asset(let asset) = value else { fatalError("not an asset") }
        return asset
    }
    let first = try await makeAsset("film", seed: 1)
    let second = try await makeAsset("trailer", seed: 2)
    try await pair.start()
    let start = now()
    try await pair.nodeB!.fetchAssets([first], timeout: .seconds(3600))
    let seconds = Double(now() - start) / 1e9
    let rate = Double(first.size) / seconds / 1e6
    emit(["figure": "asset transfer", "bytes": first.size, "seconds": seconds, "MB_per_s": rate, "peak_rss_MB_both_nodes": peakRSSMegabytes()])
    say(String(format: "a %d MiB asset fetched A -> B (encrypted, checked per 16 KiB, synced to disk): %.2f s, %.0f MB/s; peak RSS of this process (both nodes) %.0f MB",
               megabytes, seconds, rate, peakRSSMegabytes()))

    // Small saves while the second asset moves on the same connection.
    let transfer = Task { try await pair.nodeB!.fetchAssets([second], timeout: .seconds(3600)) }
    try await Task.sleep(nanoseconds: 200_000_000)
    var samples: [Double] = []
    for i in 0..<saves {
        let name = "s\(i)"
        var record = Record(recordType: "Track", recordName: name, zoneID: zone)
        record["title"] = .string("t\(i)")
        let begin = now()
        try await pair.a.privateCloudDatabase.save(record)
        await pair.waitUntilBHas(name, in: zone)
        samples.append(Double(now() - begin) / 1e6)
        if pair.b.fileURL(for: second) != nil { break }
    }
    let during = samples.count
    try await transfer.value
    samples.sort()
    emit(["figure": "propagation during an asset transfer", "saves": during, "p50_ms": percentile(samples, 0.5), "p99_ms": percentile(samples, 0.99), "max_ms": samples.last!])
    say(String(format: "a small save until B sees it, while a %d MiB asset moves on the same connection: p50 %.2f ms, p99 %.2f ms over %d saves",
               megabytes, percentile(samples, 0.5), percentile(samples, 0.99), during))
    await pair.stop()
}

/// Two stores holding the same workload compared through their nodes, as
/// `lattice diff` does (B's node only compares; A's serves): in sync, then
/// with records changed on A alone.
func diff() async throws {
    let records = option("--records", 1_000_000)
    let directory = root.appendingPathComponent("diff")
    let a = try Container(identifier: "bench", directory: directory.appendingPathComponent("a"))
    let b = try Container(identifier: "bench", directory: directory.appendingPathComponent("b"))
    try a.trust(deviceID: b.deviceID)
    try b.trust(deviceID: a.deviceID)
    let (sender, _) = try Workload.prepareMemory(.empty, records: 0, indexed: false)
    try Workload.write(sender, records: 0..<records, generation: 0)
    let changeSet = try sender.makeChangeSet(for: Workload.zone, since: VersionVector())
    try a.apply(changeSet: changeSet)
    try b.apply(changeSet: changeSet)
    say("two stores of \(records) records written")

    var serving = SyncNode.Configuration()
    serving.port = 0
    serving.listenHost = "127.0.0.1"
    serving.publishesStatus = false
    let nodeA = SyncNode(container: a, configuration: serving)
    try await nodeA.start()
    var comparing = SyncNode.Configuration()
    comparing.peers = [PeerAddress(host: "127.0.0.1", port: nodeA.listeningPort!)]
    comparing.publishesStatus = false
    comparing.comparesOnly = true
    let nodeB = SyncNode(container: b, configuration: comparing)
    try await nodeB.start()
    for await event in nodeB.events { if case .caughtUp = event { break } }

    func compare(_ label: String, expected: Int) async throws -> Double {
        let t0 = now()
        let outcome = try await nodeB.compare(with: a.deviceID)
        let ms = Double(now() - t0) / 1e6
        guard outcome.differences.count == expected else {
            say("\(label): found \(outcome.differences.count) differences, expected \(expected)")
            exit(1)
        }
        emit(["figure": "diff", "case": label, "records": records, "differences": expected, "round_trips": outcome.rounds,
              "bytes": outcome.bytesSent + outcome.bytesReceived, "ms": ms])
        say(String(format: "%@: %d difference(s) in %d round trip(s), %d bytes, %.1f ms", label, expected, outcome.rounds, outcome.bytesSent + outcome.bytesReceived, ms))
        return ms
    }
    _ = try await compare("first comparison (digests computed on both sides)", expected: 0)
    var times: [Double] = []
    for _ in 0..<5 { times.append(try await compare("in sync", expected: 0)) }
    times.sort()
    say(String(format: "in sync: median %.1f ms", times[2]))
    let database = a.database(with: .private)
    var changed = 0
    for target in [1, 10, 1000] {
        let names = (changed..<target).map { Workload.name(($0 * 7919) % records) }
        var saved: [Record] = []
        for name in names {
            var record = Record(recordType: "Track", recordID: Record.ID(recordName: name, zoneID: .default))
            record["changed"] = .int64(Int64(target))
            saved.append(record)
        }
        _ = try await database.modifyRecords(saving: saved, deleting: [], savePolicy: .changedKeys)
        changed = target
        _ = try await compare("\(target) differing", expected: target)
    }
    await nodeB.stop()
    await nodeA.stop()
    try? FileManager.default.removeItem(at: directory)
}

/// One store saves a record and deletes it, `--rounds` times over `--names` names,
/// with its tombstones collected and without; its size after, by table (SQLite's dbstat).
func churn() throws {
    let rounds = option("--rounds", 100_000)
    let names = option("--names", 1_000)
    for collecting in [false, true] {
        let directory = root.appendingPathComponent("churn-\(collecting)")
        let container = try Container(identifier: "bench", directory: directory)
        let database = container.privateCloudDatabase
        let start = now()
        var collected = 0
        for round in 0..<rounds {
            let id = Record.ID(recordName: "n\(round % names)")
            var record = Record(recordType: "Item", recordID: id)
            record["round"] = .int64(Int64(round))
            record["title"] = .string("an item saved in round \(round)")
            try database.save(record)
            try database.deleteRecord(withID: id)
            // A device alone in its account: every tombstone is acknowledged as soon as it is written.
            if round % 1_000 == 999 {
                // As a running node's collection pass: tombstones when collecting, blocks no record needs always.
                if collecting { collected += try container.collectTombstones() }
                try container.collectWriteBlocks(onlyIfGrown: true)
            }
        }
        let seconds = Double(now() - start) / 1e9
        let (tables, rows) = try storeSizes(directory.appendingPathComponent("lattice.sqlite").path, counting: ["records", "residues", "checkpoints", "write_blocks"])
        let bytes = tables.values.reduce(0, +)
        emit(["mode": "churn", "collecting": collecting, "rounds": rounds, "names": names, "bytes": bytes, "tables": tables, "rows": rows, "collected": collected, "seconds": seconds])
        let top = tables.sorted { $0.value > $1.value }.prefix(4).map { "\($0.key) \($0.value / 1024) KiB" }.joined(separator: ", ")
        say("churn, tombstones \(collecting ? "collected" : "kept"): \(rounds) rounds of \(names) names, \(bytes / 1024) KiB (\(top)); rows \(rows); \(String(format: "%.1f", seconds)) s")
        try? FileManager.default.removeItem(at: directory)
    }
}

switch mode {
case "propagation": try await propagation(cli: false)
case "propagation-cli": try await propagation(cli: true)
case "initial": try await initial()
case "between": try between()
case "databases": try await databases()
case "shared": try await shared()
case "assets": try await assets()
case "diff": try await diff()
case "churn": try churn()
default:
    say("usage: lattice-sync-figures propagation [--saves N] | propagation-cli [--saves N] | initial [--records N] | databases [--records N] [--rounds N] | shared [--records N] [--rounds N] [--saves N] | between --a DIR --b DIR [--saves N]")
    exit(2)
}
