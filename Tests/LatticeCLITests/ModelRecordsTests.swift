import Foundation
import Lattice
import Testing

@Model final class Chore {
    @Attribute(.unique) var title: String = ""
    var minutes: Int = 0
    var labels: [Label] = []
    init(title: String, minutes: Int) { self.title = title; self.minutes = minutes }
}

@Model final class Label {
    @Attribute(.unique) var name: String = ""
    init(name: String) { self.name = name }
}

/// Records written through models are records like any other to the CLI.
@Suite struct ModelRecordsTests {
    let cli = CLI()

    @Test func theCLIShowsAndQueriesModelsRecords() async throws {
        let container = try await ModelContainer(for: Chore.self, configuration: ModelConfiguration(
            "default", directory: URL(fileURLWithPath: cli.path("a")), sync: .none))
        let context = ModelContext(container)
        let dishes = Chore(title: "Dishes", minutes: 15)
        context.insert(dishes)
        dishes.labels = [Label(name: "kitchen")]
        context.insert(Chore(title: "Laundry", minutes: 40))
        try context.save()
        await container.close()

        let got = try cli.ok(["record", "get", "_defaultZone/Chore:Dishes", "--json"]).json
        let record = try #require((got["records"] as? [[String: Any]])?.first)
        let fields = record["fields"] as? [String: [String: Any]] ?? [:]
        #expect(record["recordType"] as? String == "Chore")
        #expect(fields["minutes"]?["value"] as? Int == 15 && fields["minutes"]?["type"] as? String == "INT64")
        let long = try cli.ok(["query", "Chore", "--where", "minutes >= 30", "--json"]).json
        #expect((long["records"] as? [[String: Any]])?.compactMap { $0["recordName"] as? String } == ["Chore:Laundry"])
        // The many-to-many is a link record, as any script can see.
        let links = try cli.ok(["query", "Chore_labels", "--json"]).json["records"] as? [[String: Any]] ?? []
        #expect(links.count == 1)
        // A save from the CLI is read back by the model.
        try cli.ok(["record", "save", "_defaultZone/Chore:Dishes", "--type", "Chore", "minutes=20"])
        let reopened = try await ModelContainer(for: Chore.self, configuration: ModelConfiguration(
            "default", directory: URL(fileURLWithPath: cli.path("a")), sync: .none))
        let chore = try #require(try ModelContext(reopened).fetch(FetchDescriptor<Chore>(predicate: #Predicate { $0.title == "Dishes" })).first)
        let linkDump = try cli.ok(["query", "Chore_labels", "--json"]).stdout, labelDump = try cli.ok(["query", "Label", "--json"]).stdout
        #expect(chore.minutes == 20)
        #expect(chore.labels.map(\.name) == ["kitchen"], "\(linkDump) \(labelDump)")
        await reopened.close()
    }
}
