import Foundation
import Lattice
import Testing
import LatticeTestSupport

/// A key names its record: creations of one key on several devices are one object.
@Suite struct UniqueKeyTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func twoDevicesOfflineCreateOneKeyAndEndWithOneObject() async throws {
        let laptop = try await openContainer(seedModels, in: directory, name: "laptop")
        let phone = try await openContainer(seedModels, in: directory, name: "phone")
        let here = ModelContext(laptop), there = ModelContext(phone)
        // Offline: each creates the tag "work" with its own color, and a todo under it.
        let mine = Tag(name: "work", color: "red")
        here.insert(mine)
        let report = Todo(title: "Report")
        here.insert(report)
        report.tags = [mine]
        try here.save()
        let theirs = Tag(name: "work", color: "blue")
        there.insert(theirs)
        let slides = Todo(title: "Slides")
        there.insert(slides)
        slides.tags = [theirs]
        try there.save()
        #expect(mine.persistentModelID == theirs.persistentModelID, "the key names the record: \(String(describing: mine.persistentModelID))")

        try exchange(laptop, phone)
        var colors: [String] = []
        for container in [laptop, phone] {
            let context = ModelContext(container)
            let tags = try context.fetch(FetchDescriptor<Tag>())
            #expect(tags.count == 1, "one tag, not two")
            let tag = try #require(tags.first)
            #expect(tag.name == "work")
            colors.append(tag.color)
            #expect(Set(tag.todos.map(\.title)) == ["Report", "Slides"], "both devices' links merge onto the one tag")
            // The losing color is kept, the same on both devices, until resolved.
            let losing = try context.losingValues(of: tag, for: \.color)
            #expect(Set(losing + [tag.color]) == ["red", "blue"])
        }
        #expect(colors[0] == colors[1], "both devices hold the same winner")

        // Resolving keeps the winner and reaches the other device.
        let context = ModelContext(laptop)
        let tag = try #require(try context.fetch(FetchDescriptor<Tag>()).first)
        try context.resolveConflicts(of: tag)
        try exchange(laptop, phone)
        #expect(try ModelContext(phone).conflicts(of: try #require(try ModelContext(phone).fetch(FetchDescriptor<Tag>()).first)).isEmpty)
        await laptop.close()
        await phone.close()
    }

    @Test func insertingAnExistingKeyUpdatesThatObject() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "one")
        let context = ModelContext(container)
        context.insert(Tag(name: "home", color: "green"))
        try context.save()
        context.insert(Tag(name: "home", color: "yellow"))
        try context.save()
        let tags = try ModelContext(container).fetch(FetchDescriptor<Tag>())
        #expect(tags.map(\.color) == ["yellow"])
        await container.close()
    }

    @Test func aKeyCannotChangeOnceSaved() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "one")
        let context = ModelContext(container)
        let tag = Tag(name: "home")
        context.insert(tag)
        try context.save()
        tag.name = "house"
        expectError(.invalidArguments) { try context.save() }
        context.rollback()
        #expect(tag.name == "home")
        #expect(try ModelContext(container).fetch(FetchDescriptor<Tag>()).map(\.name) == ["home"], "nothing was written")
        await container.close()
    }

    @Test func keysWithSeparatorsAndLongKeysNameDistinctRecords() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "one")
        let context = ModelContext(container)
        let names = ["a,b", "a%2Cb", "x/y", String(repeating: "long ", count: 80), String(repeating: "long ", count: 80) + "!"]
        for name in names { context.insert(Tag(name: name)) }
        try context.save()
        let stored = try ModelContext(container).fetch(FetchDescriptor<Tag>()).map(\.name)
        #expect(Set(stored) == Set(names))
        await container.close()
    }
}
