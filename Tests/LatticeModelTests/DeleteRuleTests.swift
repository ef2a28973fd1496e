import Foundation
import Lattice
import Testing
import LatticeTestSupport

@Model final class Folder {
    @Attribute(.unique) var name: String = ""
    @Relationship(deleteRule: .deny, inverse: \Document.folder) var documents: [Document] = []
    @Relationship(deleteRule: .cascade) var labels: [Label] = []
    @Relationship(deleteRule: .noAction) var pinned: Document? = nil
    init(name: String) { self.name = name }
}

@Model final class Document {
    var title: String = ""
    var folder: Folder?
    init(title: String, folder: Folder? = nil) { self.title = title; self.folder = folder }
}

@Model final class Label {
    var text: String = ""
    init(text: String) { self.text = text }
}

@Suite struct DeleteRuleTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func denyRefusesWhileTheRelationshipHoldsObjects() async throws {
        let container = try await openContainer([Folder.self], in: directory, name: "store")
        let context = ModelContext(container)
        let folder = Folder(name: "Taxes")
        context.insert(folder)
        let form = Document(title: "Form", folder: folder)
        context.insert(form)
        try context.save()
        context.delete(folder)
        expectError(.invalidArguments) { try context.save() }
        context.rollback()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Folder>()) == 1, "nothing was deleted")
        context.delete(form)
        try context.save()
        context.delete(folder)
        try context.save()
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Folder>()) == 0)
        await container.close()
    }

    @Test func cascadeOverLinksAndNoActionLeavesADanglingReferenceThatReadsAsAbsent() async throws {
        let laptop = try await openContainer([Folder.self], in: directory, name: "laptop")
        let phone = try await openContainer([Folder.self], in: directory, name: "phone")
        let context = ModelContext(laptop)
        let folder = Folder(name: "Photos")
        context.insert(folder)
        folder.labels = [Label(text: "summer"), Label(text: "beach")]
        let loose = Document(title: "Loose")
        context.insert(loose)
        folder.pinned = loose
        try context.save()
        try exchange(laptop, phone)

        context.delete(loose)
        try context.save()
        #expect(folder.pinned == nil, "noAction: the reference stays and reads as absent")
        let folderRecord = try await laptop.database.record(for: try #require(folder.persistentModelID).recordID)
        #expect(folderRecord["pinned"] != nil)

        let there = ModelContext(phone)
        let theirs = try #require(try there.fetch(FetchDescriptor<Folder>()).first)
        #expect(Set(theirs.labels.map(\.text)) == ["summer", "beach"])
        there.delete(theirs)
        try there.save()
        try exchange(laptop, phone)
        for container in [laptop, phone] {
            let check = ModelContext(container)
            #expect(try check.fetchCount(FetchDescriptor<Label>()) == 0, "cascade deleted the labels")
            #expect(try check.fetchCount(FetchDescriptor<Folder>()) == 0)
        }
        await laptop.close()
        await phone.close()
    }

    @Test func deletingAnUnsavedObjectForgetsIt() async throws {
        let container = try await openContainer([Folder.self], in: directory, name: "store")
        let context = ModelContext(container)
        let draft = Document(title: "Draft")
        context.insert(draft)
        context.delete(draft)
        #expect(!context.hasChanges)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Document>()) == 0)
        await container.close()
    }
}
