import Foundation
import Lattice
import LatticeTestSupport
import Testing

@Model final class Note {
    @Attribute(.preserveValueOnDeletion) var title: String = ""
    var body: String = ""
    @Attribute(.preserveValueOnDeletion) var pinned: Bool = false

    init(title: String, body: String, pinned: Bool = false) {
        self.title = title
        self.body = body
        self.pinned = pinned
    }
}

/// SwiftData's history: `fetchHistory` with a `HistoryDescriptor`,
/// transactions with their author, inserts, updates with the attributes
/// changed, deletes with the values kept by `.preserveValueOnDeletion`, and
/// `deleteHistory`.
@Suite struct ModelHistoryTests {
    let directory = TemporaryDirectory("lattice-model-history")

    func transactions(_ context: ModelContext, after token: DefaultHistoryToken? = nil) throws -> [DefaultHistoryTransaction] {
        var descriptor = HistoryDescriptor<DefaultHistoryTransaction>()
        if let token { descriptor.predicate = #Predicate { $0.token > token } }
        return try context.fetchHistory(descriptor)
    }

    @Test func aFetchAfterASyncShowsTheOtherDevicesTransactionWithItsAuthor() async throws {
        let laptop = try await openContainer([Note.self], in: directory, name: "laptop")
        let phone = try await openContainer([Note.self], in: directory, name: "phone")
        let phoneContext = ModelContext(phone)
        let seen = try transactions(phoneContext).last?.token

        let laptopContext = ModelContext(laptop)
        laptopContext.author = "editor"
        let note = Note(title: "Groceries", body: "milk")
        laptopContext.insert(note)
        try laptopContext.save()
        note.body = "milk, eggs"
        try laptopContext.save()
        try exchange(laptop, phone)

        let arrived = try transactions(phoneContext, after: seen)
        #expect(arrived.count == 2, "\(arrived.map(\.transactionIdentifier))")
        let laptopDevice = laptop.store.deviceID
        #expect(arrived.allSatisfy { $0.deviceID == laptopDevice && $0.author == laptopDevice }, "a peer's transaction is authored by its device")
        guard arrived.count == 2 else { return }
        guard case .insert(let insert) = arrived[0].changes.first, case .update(let update) = arrived[1].changes.first else {
            Issue.record("expected an insert then an update: \(arrived.map(\.changes))")
            return
        }
        #expect(insert.changedPersistentIdentifier == note.persistentModelID)
        #expect(update.updatedAttributes(of: Note.self) == [\Note.body])
        // The same commits, seen on the device that made them: same identifiers, and the context's author.
        let local = try transactions(laptopContext)
        #expect(local.map(\.transactionIdentifier) == arrived.map(\.transactionIdentifier))
        #expect(local.allSatisfy { $0.author == "editor" && $0.deviceID == laptopDevice })
        #expect(arrived[0].timestamp == local[0].timestamp, "a transaction's time is its writer's")

        // Newest first with a limit reads the last ones.
        var last = HistoryDescriptor<DefaultHistoryTransaction>(sortBy: [SortDescriptor(\.token, order: .reverse)])
        last.fetchLimit = 1
        let newest = try phoneContext.fetchHistory(last)
        #expect(newest.map(\.transactionIdentifier) == [arrived[1].transactionIdentifier], "\(newest.map(\.token)) of \(arrived.map(\.token))")
        await laptop.close()
        await phone.close()
    }

    @Test func aModelConfigurationNamesTheZonesItsDeviceReplicates() async throws {
        var configuration = ModelConfiguration("com.example.models", directory: directory.url.appendingPathComponent("selective"), zoneName: "Notes", sync: .none)
        configuration.replicatedZones = ["Lists"]
        let phone = try await ModelContainer(for: [Note.self], configuration: configuration)
        #expect(try phone.database.replicatedZones()?.map(\.zoneName) == ["Lists", "Notes"], "its own zone is always among them")
        let laptop = try await openContainer([Note.self], in: directory, name: "laptop-selective")
        try await laptop.database.save(Zone(zoneName: "Photos"))
        var photo = Record(recordType: "Photo", recordName: "p1", zoneID: Zone.ID(zoneName: "Photos"))
        photo["title"] = "Beach"
        try await laptop.database.save(photo)
        ModelContext(laptop).insert(Note(title: "kept", body: ""))
        try exchange(laptop, phone)
        #expect(try !phone.database.allRecordZones().contains { $0.zoneID.zoneName == "Photos" }, "a zone the configuration does not name is not stored")
        expectError(.zoneNotFound) { try phone.database.record(for: photo.recordID) }
        await laptop.close()
        await phone.close()
    }

    @Test func preservedValuesSurviveADeleteAndOnlyThose() async throws {
        let container = try await openContainer([Note.self], in: directory, name: "notes")
        let context = ModelContext(container)
        let note = Note(title: "Taxes", body: "file by April", pinned: true)
        context.insert(note)
        try context.save()
        context.delete(note)
        try context.save()
        let deletes = try transactions(context).flatMap(\.changes).compactMap { change -> DefaultHistoryDelete? in
            if case .delete(let delete) = change { return delete } else { return nil }
        }
        #expect(deletes.count == 1)
        let tombstone = try #require(deletes.first?.tombstone)
        #expect(tombstone[\Note.title] == "Taxes")
        #expect(tombstone[\Note.pinned] == true)
        #expect(tombstone[\Note.body] == nil, "a value not marked .preserveValueOnDeletion is not kept in the tombstone")
        await container.close()
    }

    @Test func deleteHistoryRemovesWhatItSaysAndNothingElse() async throws {
        let container = try await openContainer([Note.self], in: directory, name: "delete")
        let context = ModelContext(container)
        for index in 1...4 {
            context.insert(Note(title: "note \(index)", body: ""))
            try context.save()
        }
        let all = try transactions(context)
        #expect(all.count == 4)
        let second = all[1].token
        try context.deleteHistory(HistoryDescriptor<DefaultHistoryTransaction>(predicate: #Predicate { $0.token <= second }))
        let left = try transactions(context)
        #expect(left.map(\.transactionIdentifier) == all.dropFirst(2).map(\.transactionIdentifier))
        // The objects are untouched: only their history went.
        #expect(try context.fetchCount(FetchDescriptor<Note>()) == 4)
        // A read as of a point whose history went is refused rather than wrong.
        let id = try #require(try context.fetch(FetchDescriptor<Note>()).first { $0.title == "note 1" }?.persistentModelID)
        expectError(.changeTokenExpired) { try container.database.record(id.recordID, asOf: .token(second.token)) }
        await container.close()
    }
}
