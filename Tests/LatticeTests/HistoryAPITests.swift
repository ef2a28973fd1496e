import Foundation
@testable import Lattice
@_spi(Tools) import LatticeCore
import LatticeTestSupport
import Testing

/// History through the library: transactions by writer commit, records as
/// of a token or a time, a record's versions, restore as a new write that
/// converges, retention, and history turned off.
@Suite struct HistoryAPITests {
    let directory = TemporaryDirectory("lattice-history")
    let movies = Zone.ID(zoneName: "Movies")

    func moviesOn(_ container: Container) throws -> Database {
        let database = container.privateCloudDatabase
        try database.save(Zone(zoneID: movies))
        return database
    }

    @Test func transactionsListWhatEachCommitDidWithTheValuesItReplaced() throws {
        let container = try directory.container("a")
        let database = try moviesOn(container).withHistoryAuthor("importer")
        try database.save(movie("up", zone: movies, ["title": "Up", "rating": .int64(4)]))
        let afterInsert = try #require(try database.history(in: movies).last?.token)
        _ = try database.modifyRecords(saving: [movie("up", zone: movies, ["rating": .int64(5)]), movie("coco", zone: movies, ["title": "Coco"])],
                                       deleting: [], savePolicy: .changedKeys, atomically: true)
        try database.deleteRecord(withID: Record.ID(recordName: "up", zoneID: movies))

        let all = try database.history(in: movies)
        #expect(all.count == 3, "one transaction per commit: \(all.map(\.changes))")
        #expect(all.allSatisfy { $0.author == container.deviceID && $0.contextAuthor == "importer" })
        #expect(all[1].changes.map(\.recordID.recordName).sorted() == ["coco", "up"], "a commit of two records is one transaction")
        let update = try #require(all[1].changes.first { $0.recordID.recordName == "up" })
        #expect(update.kind == .update && update.changedFields == ["rating"] && update.fields.first?.oldValue == .int64(4))
        let delete = try #require(all[2].changes.first)
        #expect(delete.kind == .delete && Set(delete.fields.map(\.field)) == ["rating", "title"])
        // Read on from a token: only what came after it.
        #expect(try database.history(since: afterInsert, in: movies).count == 2)
        #expect(try database.history(since: all[2].token, in: movies).isEmpty)
        // One record's history, and one author's.
        #expect(try database.history(in: movies, record: "coco").count == 1)
        #expect(try database.history(in: movies, author: container.deviceID).count == 3)
        #expect(try database.history(in: movies, author: "0123456789abcdef0123456789abcdef").isEmpty)
        expectError(.invalidArguments) { try database.history(in: movies, author: "not a device") }
        // A record as of each token, and its versions with old and new values.
        let up = Record.ID(recordName: "up", zoneID: movies)
        #expect(try database.record(up, asOf: .token(all[0].token))?["rating"] == .int64(4))
        #expect(try database.record(up, asOf: .token(all[1].token))?["rating"] == .int64(5))
        #expect(try database.record(up, asOf: .token(all[2].token)) == nil)
        let versions = try database.recordHistory(up)
        #expect(versions.filter { $0.field == "rating" }.map { [$0.oldValue, $0.newValue] } == [[nil, .int64(4)], [.int64(4), .int64(5)], [.int64(5), nil]])
        expectError(.changeTokenExpired) { try database.record(up, asOf: .token(HistoryToken(entry: 999_999))) }
    }

    @Test func aRestoreIsANewWriteThatSyncsAndWins() throws {
        let laptop = try directory.container("laptop")
        let phone = try directory.container("phone")
        let here = try moviesOn(laptop)
        try here.save(movie("up", zone: movies, ["title": "Up", "rating": .int64(4)]))
        try sync(laptop, to: phone)
        let good = try #require(try here.history(in: movies).last?.token)
        // A bad edit arrives from the phone, then the laptop restores the record as it held it before.
        let there = phone.privateCloudDatabase
        try there.save(movie("up", zone: movies, ["title": "Upp", "rating": .int64(1), "note": "oops"]), savePolicy: .changedKeys)
        try sync(phone, to: laptop)
        #expect(try here.record(for: Record.ID(recordName: "up", zoneID: movies))["title"] == .string("Upp"))
        let restored = try #require(try here.restore(Record.ID(recordName: "up", zoneID: movies), to: .token(good)))
        #expect(restored["title"] == .string("Up") && restored["rating"] == .int64(4) && restored["note"] == nil)
        try sync(laptop, to: phone)
        let onPhone = try there.record(for: Record.ID(recordName: "up", zoneID: movies))
        #expect(onPhone.fields == restored.fields, "the restore converges")
        // The past is not rewritten: the bad edit is still in both histories.
        for database in [here, there] {
            #expect(try database.recordHistory(Record.ID(recordName: "up", zoneID: movies)).contains { $0.newValue == .string("Upp") })
        }
        // Restoring to before the record existed deletes it.
        let empty = try directory.container("empty")
        try moviesOn(empty).save(movie("solo", zone: movies, ["title": "Solo"]))
        let solo = Record.ID(recordName: "solo", zoneID: movies)
        let created = try #require(try empty.privateCloudDatabase.history(in: movies).first)
        try empty.privateCloudDatabase.save(movie("solo", zone: movies, ["title": "Solo 2"]), savePolicy: .changedKeys)
        #expect(try empty.privateCloudDatabase.restore(solo, to: .date(created.storedAt.addingTimeInterval(-60))) == nil)
        expectError(.unknownItem) { try empty.privateCloudDatabase.record(for: solo) }
    }

    @Test func historyOffWritesNothingAndRetentionIsKept() throws {
        let container = try directory.container("off")
        let database = try moviesOn(container)
        try container.setHistoryKept(false)
        for index in 1...5 { try database.save(movie("m\(index)", zone: movies, ["title": .string("M\(index)")])) }
        var settings = try container.historySettings()
        #expect(!settings.isKept && settings.entries == 0 && settings.bytes == 0)
        // On again: complete from then on, and a read before that is refused rather than wrong.
        let off = Date()
        try container.setHistoryKept(true)
        try database.save(movie("m1", zone: movies, ["title": "M1 again"]), savePolicy: .changedKeys)
        settings = try container.historySettings()
        #expect(settings.isKept && settings.entries == 1 && settings.retentionDays == 30)
        expectError(.changeTokenExpired) { try database.record(Record.ID(recordName: "m1", zoneID: movies), asOf: .date(off.addingTimeInterval(-3600))) }
        try container.setHistoryRetention(days: 7)
        #expect(try container.historySettings().retentionDays == 7)
        expectError(.invalidArguments) { try container.setHistoryRetention(days: 0) }
    }

    @Test func aZoneThatIsNotReplicatedSaysSoInsteadOfAnsweringEmpty() throws {
        let container = try directory.container("selective")
        let database = try moviesOn(container)
        try database.save(movie("up", zone: movies, ["title": "Up"]))
        try database.setReplicated(movies, false)
        #expect(try !database.isReplicated(movies))
        expectError(.invalidArguments) { try database.setReplicated(.default, false) }
        #expect(try database.zonesNotReplicated() == [movies])
        for call in [{ _ = try database.record(for: Record.ID(recordName: "up", zoneID: movies)) },
                     { _ = try database.records(matching: Query(recordType: "Movie"), inZoneWith: movies) },
                     { _ = try database.history(in: movies) },
                     { try database.save(movie("coco", zone: movies, ["title": "Coco"])) }] as [() throws -> Void] {
            do {
                try call()
                Issue.record("a call on a zone that is not replicated succeeded")
            } catch let error as LatticeError {
                #expect(error.code == .zoneNotFound && error.message.contains("not replicated on this device"), "\(error)")
            }
        }
        #expect(try container.historySettings().entries == 0, "the zone's history went with it")
        try database.setReplicated(movies, true)
        #expect(try database.allRecordZones().contains { $0.zoneID == movies } == false, "on again, the zone waits for a peer to send it")
    }

    @Test func aListOfTheZonesReplicatedKeepsEveryOtherOutEvenFromAPeer() throws {
        let phone = try directory.container("phone")
        let laptop = try directory.container("laptop")
        let books = Zone.ID(zoneName: "Books")
        for zone in [movies, books] { try laptop.privateCloudDatabase.save(Zone(zoneID: zone)) }
        try laptop.privateCloudDatabase.save(movie("up", zone: movies, ["title": "Up"]))
        try laptop.privateCloudDatabase.save(movie("dune", zone: books, ["title": "Dune"]))
        let database = phone.privateCloudDatabase
        try database.setReplicatedZones([movies])
        #expect(try database.replicatedZones() == [movies])
        // What a peer sends of another zone is kept nowhere; the listed zone arrives.
        try sync(laptop, to: phone)
        #expect(try database.allRecordZones().map(\.zoneID).filter { !$0.isDefault } == [movies])
        expectError(.zoneNotFound) { try database.record(for: Record.ID(recordName: "dune", zoneID: books)) }
        #expect(try database.record(for: Record.ID(recordName: "up", zoneID: movies))["title"] == .string("Up"))
        // Turning Books on adds it to the list; no list replicates every zone again.
        try database.setReplicated(books, true)
        #expect(try database.replicatedZones() == [books, movies].sorted { $0.description < $1.description })
        try database.setReplicatedZones(nil)
        #expect(try database.replicatedZones() == nil && database.isReplicated(Zone.ID(zoneName: "Anything")))
        expectError(.invalidArguments) { try phone.publicCloudDatabase.setReplicatedZones([]) }
    }
}
