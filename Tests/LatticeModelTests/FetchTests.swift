import Foundation
import Lattice
import Testing
import LatticeTestSupport

@Suite struct FetchTests {
    let directory = TemporaryDirectory("lattice-models")

    func seeded() async throws -> (ModelContainer, ModelContext) {
        let container = try await openContainer(seedModels, in: directory, name: "store")
        let context = ModelContext(container)
        let rows: [(String, Int, Genre, Double?)] = [
            ("Toy Story", 1995, .animation, 8.3), ("Up", 2009, .animation, 8.2), ("Heat", 1995, .drama, nil),
            ("Airplane!", 1980, .comedy, 7.7), ("Coco", 2017, .animation, 8.4),
        ]
        for (title, year, genre, rating) in rows {
            let movie = Movie(title: title, year: year, genre: genre)
            movie.rating = rating
            context.insert(movie)
        }
        try context.save()
        return (container, ModelContext(container))
    }

    func titles(_ context: ModelContext, _ predicate: Predicate<Movie>?, sort: [SortDescriptor<Movie>] = [SortDescriptor(\.title)]) throws -> [String] {
        try context.fetch(FetchDescriptor<Movie>(predicate: predicate, sortBy: sort)).map(\.title)
    }

    @Test func predicatesCompileToQueries() async throws {
        let (container, context) = try await seeded()
        // #Predicate takes enum cases as captured values.
        let animation = Genre.animation
        #expect(try titles(context, #Predicate { $0.year == 1995 }) == ["Heat", "Toy Story"])
        #expect(try titles(context, #Predicate { $0.year != 1995 }) == ["Airplane!", "Coco", "Up"])
        #expect(try titles(context, #Predicate { $0.year < 1995 }) == ["Airplane!"])
        #expect(try titles(context, #Predicate { 2000 <= $0.year }) == ["Coco", "Up"], "a value on the left turns the comparison around")
        #expect(try titles(context, #Predicate { $0.year > 1995 && $0.genre == animation }) == ["Coco", "Up"])
        #expect(try titles(context, #Predicate { $0.year == 1980 || $0.title.starts(with: "To") }) == ["Airplane!", "Toy Story"])
        #expect(try titles(context, #Predicate { !($0.genre == animation) }) == ["Airplane!", "Heat"])
        #expect(try titles(context, #Predicate { $0.rating == nil }) == ["Heat"], "nil is an absent field")
        #expect(try titles(context, #Predicate { $0.rating != nil }) == ["Airplane!", "Coco", "Toy Story", "Up"])
        let years = [1980, 2017]
        #expect(try titles(context, #Predicate { years.contains($0.year) }) == ["Airplane!", "Coco"])
        #expect(try titles(context, nil, sort: [SortDescriptor(\.year, order: .reverse), SortDescriptor(\.title)]) == ["Coco", "Up", "Heat", "Toy Story", "Airplane!"])
        await container.close()
    }

    @Test func limitsOffsetsAndCounts() async throws {
        let (container, context) = try await seeded()
        var descriptor = FetchDescriptor<Movie>(sortBy: [SortDescriptor(\.year), SortDescriptor(\.title)])
        descriptor.fetchLimit = 2
        #expect(try context.fetch(descriptor).map(\.title) == ["Airplane!", "Heat"])
        descriptor.fetchOffset = 2
        #expect(try context.fetch(descriptor).map(\.title) == ["Toy Story", "Up"])
        descriptor.fetchOffset = 4
        #expect(try context.fetch(descriptor).map(\.title) == ["Coco"])
        // An object deleted here and not saved yet is not fetched.
        let heat = try #require(try context.fetch(FetchDescriptor<Movie>(predicate: #Predicate { $0.title == "Heat" })).first)
        context.delete(heat)
        descriptor.fetchOffset = 0
        #expect(try context.fetch(descriptor).map(\.title) == ["Airplane!", "Toy Story"])
        let animation = Genre.animation
        #expect(try context.fetchCount(FetchDescriptor<Movie>(predicate: #Predicate { $0.genre == animation })) == 3)
        await container.close()
    }

    @Test func listPropertiesInPredicates() async throws {
        let container = try await openContainer([Everything.self] + seedModels, in: directory, name: "store")
        let context = ModelContext(container)
        let a = Everything(), b = Everything()
        a.words = ["red", "green"]
        b.words = ["blue"]
        a.int = 1
        b.int = 2
        context.insert(a)
        context.insert(b)
        let movie = Movie(title: "Up", year: 2009)
        context.insert(movie)
        context.insert(Review(text: "Yes", stars: 5, movie: movie))
        context.insert(Review(text: "Orphan", stars: 1))
        try context.save()
        #expect(try context.fetch(FetchDescriptor<Everything>(predicate: #Predicate { $0.words.contains("green") })).map(\.int) == [1])
        // A relationship is followed, not queried (#Predicate operands are Codable values, not objects).
        #expect(movie.reviews.map(\.text) == ["Yes"])
        await container.close()
    }

    @Test func whatAQueryCannotExpressIsAClearError() async throws {
        let (container, context) = try await seeded()
        expectError(.invalidArguments) { try context.fetch(FetchDescriptor<Movie>(predicate: #Predicate { $0.title.count > 3 })) }
        expectError(.invalidArguments) { try context.fetch(FetchDescriptor<Review>(predicate: #Predicate { $0.movie?.title == "Up" })) }
        expectError(.invalidArguments) { try context.fetch(FetchDescriptor<Movie>(predicate: #Predicate { $0.year == $0.year })) }
        await container.close()
    }

    @Test func aFilteredSortedPageUsesTheIndex() async throws {
        let (container, context) = try await seeded()
        try container.store.addIndex([.queryable, .sortable], field: "year", of: "Movie")
        let descriptor = FetchDescriptor<Movie>(predicate: #Predicate { $0.year >= 2000 }, sortBy: [SortDescriptor(\.year)])
        let explanation = try container.database.explain(try descriptor.query())
        #expect(explanation.plan.contains("index"), "\(explanation.plan)")
        #expect(explanation.recordsRead == 2)
        #expect(try context.fetch(descriptor).map(\.title) == ["Up", "Coco"])
        await container.close()
    }
}
