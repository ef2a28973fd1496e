import Foundation
import Lattice
import LatticeTestSupport
import Testing

@Suite struct DatabaseTests {
    let directory = TemporaryDirectory()

    @Test func savedRecordsSurviveReopeningTheStore() throws {
        do {
            let container = try directory.container()
            try container.privateCloudDatabase.save(movie("up", ["title": "Up", "rating": 5, "score": 4.5, "seen": true, "released": .date(1_243_000_000_000), "poster": .bytes([1, 2, 3]), "tags": .list(["pixar", "balloon"]), "where": .location(Location(latitude: 47.6, longitude: -122.3))]))
        }
        let reopened = try directory.container()
        let record = try reopened.privateCloudDatabase.record(for: Record.ID(recordName: "up"))
        #expect(record["title"] == "Up")
        #expect(record["rating"] == .int64(5))
        #expect(record["tags"] == .list(["pixar", "balloon"]))
        #expect(record.recordChangeTag != nil)
        #expect(record.creationDate != nil && record.creatorReplica == reopened.replicaID)
    }

    @Test func missingRecordIsUnknownItem() throws {
        let database = try directory.container().privateCloudDatabase
        #expect(throws: LatticeError.self) { try database.record(for: Record.ID(recordName: "nope")) }
        expectError(.unknownItem) { _ = try database.record(for: Record.ID(recordName: "nope")) }
        expectError(.unknownItem) { try database.deleteRecord(withID: Record.ID(recordName: "nope")) }
    }

    @Test func staleChangeTagGivesServerRecordChangedWithTheCurrentRecord() throws {
        let database = try directory.container().privateCloudDatabase
        let saved = try database.save(movie("coco", ["title": "Coco"]))
        var first = saved
        first["rating"] = 4
        try database.save(first)
        var stale = saved
        stale["rating"] = 1
        do {
            try database.save(stale)
            Issue.record("a stale tag must fail")
        } catch {
            #expect(error.code == .serverRecordChanged)
            #expect(error.serverRecord?["rating"] == .int64(4))
        }
        // Saving a brand-new record over an existing one is a conflict too.
        expectError(.serverRecordChanged) { try database.save(movie("coco", ["title": "Other"])) }
        #expect(try database.record(for: saved.recordID)["rating"] == .int64(4))
    }

    @Test func changedKeysWritesOnlyChangedFieldsAndAllKeysReplaces() throws {
        let database = try directory.container().privateCloudDatabase
        try database.save(movie("cars", ["title": "Cars", "rating": 3, "note": "fast"]))
        var partial = Record(recordType: "Movie", recordName: "cars")
        partial["rating"] = 4
        try database.save(partial, savePolicy: .changedKeys)
        var record = try database.record(for: partial.recordID)
        #expect(record["title"] == "Cars" && record["rating"] == .int64(4) && record["note"] == "fast")
        var replacement = Record(recordType: "Movie", recordName: "cars")
        replacement["title"] = "Cars 2"
        try database.save(replacement, savePolicy: .allKeys)
        record = try database.record(for: partial.recordID)
        #expect(record.allKeys() == ["title"])
        #expect(record["title"] == "Cars 2")
    }

    @Test func atomicBatchFailsWholeAndNonAtomicSavesTheRest() throws {
        let database = try directory.container().privateCloudDatabase
        let good = movie("a", ["title": "A"])
        let bad = movie("b", ["bad-name": "x"])
        do {
            _ = try database.modifyRecords(saving: [good, bad], deleting: [], atomically: true)
            Issue.record("atomic batch with a bad record must fail")
        } catch {
            #expect(error.code == .invalidArguments)
            #expect(error.partialErrors[good.recordID.description]?.code == .batchRequestFailed)
        }
        #expect(throws: LatticeError.self) { try database.record(for: good.recordID) }
        let results = try database.modifyRecords(saving: [good, bad], deleting: [], atomically: false)
        #expect((try? results.saveResults[good.recordID]!.get()) != nil)
        guard case .failure(let error) = results.saveResults[bad.recordID]! else { Issue.record("bad record was saved"); return }
        #expect(error.code == .invalidArguments)
        #expect(try database.record(for: good.recordID)["title"] == "A")
    }

    @Test func zonesAreCreatedListedAndDeletedWithTheirRecords() throws {
        let database = try directory.container().privateCloudDatabase
        let zone = Zone(zoneName: "Shelf")
        expectError(.zoneNotFound) { try database.save(movie("x", zone: zone.zoneID, [:])) }
        try database.save(zone)
        try database.save(movie("x", zone: zone.zoneID, ["title": "X"]))
        #expect(try database.allRecordZones().map(\.zoneID.zoneName) == ["_defaultZone", "Shelf"])
        try database.deleteZone(withID: zone.zoneID)
        #expect(try database.allRecordZones().map(\.zoneID.zoneName) == ["_defaultZone"])
        expectError(.zoneNotFound) { _ = try database.record(for: Record.ID(recordName: "x", zoneID: zone.zoneID)) }
        try database.save(zone)
        expectError(.unknownItem) { _ = try database.record(for: Record.ID(recordName: "x", zoneID: zone.zoneID)) }
        expectError(.invalidArguments) { try database.deleteZone(withID: .default) }
    }

    @Test func schemaIsFixedByFirstWriteAndFrozenByDeploy() throws {
        let container = try directory.container()
        let database = container.privateCloudDatabase
        try database.save(movie("m", ["rating": 4]))
        do { try database.save(movie("n", ["rating": "four"])) } catch {
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("INT64"))
        }
        try container.deploySchema()
        #expect(try container.schema().isProduction)
        expectError(.invalidArguments) { try database.save(movie("o", ["newField": 1])) }
        expectError(.invalidArguments) { try database.save(Record(recordType: "Song", recordName: "s")) }
        try database.save(movie("p", ["rating": 2]))
    }

    @Test func limitsAreClearErrors() throws {
        let database = try directory.container().privateCloudDatabase
        let cases: [(Record, LatticeError.Code)] = [
            (movie("a", ["1abc": 1]), .invalidArguments),
            (movie("b", ["score": .double(.nan)]), .invalidArguments),
            (movie("c", ["mixed": .list(["a", 1])]), .invalidArguments),
            (movie("d", ["big": .bytes([UInt8](repeating: 0, count: 1_000_001))]), .limitExceeded),
            (movie("e/f", ["title": "slash"]), .invalidArguments),
        ]
        for (record, code) in cases {
            do {
                try database.save(record)
                Issue.record("\(record.recordID) should fail with \(code)")
            } catch { #expect(error.code == code, "\(record.recordID): \(error)") }
        }
    }

    @Test func assetsAreStoredByContentHash() throws {
        let container = try directory.container()
        let file = directory.url.appendingPathComponent("poster.bin")
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try Data("poster bytes".utf8).write(to: file)
        let value = try container.importAsset(fileAt: file)
        guard case .asset(let asset) = value else { Issue.record("not an asset"); return }
        #expect(asset.size == 12)
        let stored = try #require(container.fileURL(for: asset))
        #expect(try Data(contentsOf: stored) == Data("poster bytes".utf8))
        try container.privateCloudDatabase.save(movie("withPoster", ["poster": value]))
        expectError(.assetFileNotFound) { _ = try container.importAsset(fileAt: directory.url.appendingPathComponent("missing")) }
    }

    @Test func storeDirectoryThatIsNotAStoreIsRefused() throws {
        let other = directory.url.appendingPathComponent("notastore")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: other.appendingPathComponent("file.txt"))
        expectError(.badContainer) { _ = try Container(identifier: "x", directory: other) }
        #expect(try String(contentsOf: other.appendingPathComponent("file.txt"), encoding: .utf8) == "hello")
    }
}

@Suite struct AsyncDatabaseTests {
    @Test func recordCallsAwaitLikeCloudKits() async throws {
        let directory = TemporaryDirectory()
        let database = try directory.container().privateCloudDatabase
        try await database.save(movie("m1", ["title": "Alien", "rating": 5]))
        let fetched = try await database.record(for: Record.ID(recordName: "m1"))
        #expect(fetched["title"] == "Alien")
        let (matches, _) = try await database.records(matching: Query(recordType: "Movie", predicate: .all))
        #expect(matches.map(\.recordID.recordName) == ["m1"])
        try await database.deleteRecord(withID: Record.ID(recordName: "m1"))
        do {
            _ = try await database.record(for: Record.ID(recordName: "m1"))
            Issue.record("a deleted record was fetched")
        } catch {
            #expect(error.code == .unknownItem)
        }
    }
}
