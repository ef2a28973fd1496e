import Foundation
import Lattice
import Testing

@Suite struct ModelBasicsTests {
    @Test func insertSaveFetch() async throws {
        let container = try await ModelContainer(for: Movie.self, configuration: ModelConfiguration(isStoredInMemoryOnly: true))
        defer { Task { await container.close() } }
        let context = ModelContext(container)
        let toyStory = Movie(title: "Toy Story", year: 1995, genre: .animation)
        context.insert(toyStory)
        toyStory.reviews.append(Review(text: "Great", stars: 5))
        try context.save()
        let other = ModelContext(container)
        let movies = try other.fetch(FetchDescriptor<Movie>(predicate: #Predicate { $0.year >= 1990 }, sortBy: [SortDescriptor(\.year)]))
        #expect(movies.map(\.title) == ["Toy Story"])
        #expect(movies.first?.genre == .animation)
        #expect(movies.first?.reviews.map(\.text) == ["Great"])
    }
}
