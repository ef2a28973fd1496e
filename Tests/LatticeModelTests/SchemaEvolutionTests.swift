import Foundation
import Lattice
import Testing
import LatticeTestSupport

// Two versions of one model, side by side, as two releases of an app would declare it.
@Model final class NoteV1 {
    static var recordType: String { "Note" }
    @Attribute(.unique) var title: String = ""
    var body: String = ""
    init(title: String, body: String = "") { self.title = title; self.body = body }
}

@Model final class NoteV2 {
    static var recordType: String { "Note" }
    @Attribute(.unique) var title: String = ""
    var body: String = ""
    var priority: Int = 3
    var pinned: Bool? = nil
    init(title: String, body: String = "", priority: Int = 3) { self.title = title; self.body = body; self.priority = priority }
}

@Suite struct SchemaEvolutionTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func versionTwoReadsVersionOneAndVersionOneKeepsVersionTwosFields() async throws {
        let old = try await openContainer([NoteV1.self], in: directory, name: "old-app")
        let oldContext = ModelContext(old)
        oldContext.insert(NoteV1(title: "groceries", body: "milk"))
        try oldContext.save()

        let new = try await openContainer([NoteV2.self], in: directory, name: "new-app")
        try exchange(old, new)
        let newContext = ModelContext(new)
        let read = try #require(try newContext.fetch(FetchDescriptor<NoteV2>()).first)
        #expect(read.title == "groceries" && read.body == "milk")
        #expect(read.priority == 3 && read.pinned == nil, "a field an older version never wrote reads as the default")
        #expect(try newContext.fetch(FetchDescriptor<NoteV2>(predicate: #Predicate { $0.priority == 3 })).isEmpty,
                "the record has no priority field; a query sees what is stored")

        newContext.insert(NoteV2(title: "taxes", body: "forms", priority: 9))
        try newContext.save()
        try exchange(old, new)

        // Version 1 edits the note it does not fully understand; the new field survives.
        let reader = ModelContext(old)
        let taxes = try #require(try reader.fetch(FetchDescriptor<NoteV1>(predicate: #Predicate { $0.title == "taxes" })).first)
        taxes.body = "forms, receipts"
        try reader.save()
        let record = try await old.database.record(for: try #require(taxes.persistentModelID).recordID)
        #expect(record["priority"] == .int64(9), "an unknown field is written back untouched")
        try exchange(old, new)
        let updated = try #require(try ModelContext(new).fetch(FetchDescriptor<NoteV2>(predicate: #Predicate { $0.title == "taxes" })).first)
        #expect(updated.body == "forms, receipts" && updated.priority == 9)
        await old.close()
        await new.close()
    }

    @Test func aModelWhoseFieldTypeDiffersFromTheStoreIsRefused() async throws {
        let container = try await openContainer([NoteV1.self], in: directory, name: "store")
        var record = Record(recordType: "Retyped", recordName: "r1")
        record["count"] = .string("three")
        _ = try await container.database.save(record)
        await container.close()
        do {
            _ = try await openContainer([Retyped.self], in: directory, name: "store")
            Issue.record("a model that retypes a stored field opened")
        } catch let error as LatticeError {
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("count"))
        }
    }
}

@Model final class Retyped {
    var count: Int = 0
    init() {}
}
