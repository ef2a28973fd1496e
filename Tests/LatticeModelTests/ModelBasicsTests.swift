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

    @Test func objectsAndTheirContextAreFreedWhenTheAppLetsGoOfThem() async throws {
        let container = try await ModelContainer(for: Movie.self, configuration: ModelConfiguration(isStoredInMemoryOnly: true))
        weak var weakMovie: Movie?
        weak var weakReview: Review?
        weak var weakContext: ModelContext?
        do {
            let context = ModelContext(container)
            let movie = Movie(title: "Up", year: 2009)
            context.insert(movie)
            movie.reviews.append(Review(text: "Balloons", stars: 5))
            try context.save()
            let review = try #require(movie.reviews.first)
            #expect(review.movie === movie)
            weakMovie = movie
            weakReview = review
            weakContext = context
        }
        #expect(weakMovie == nil && weakReview == nil, "objects that point at each other do not keep each other alive")
        #expect(weakContext == nil)
        // An object outlives the context it came from and still follows its relationships.
        let review = try #require(try ModelContext(container).fetch(FetchDescriptor<Review>()).first)
        #expect(review.movie?.title == "Up" && review.movie?.reviews.first === review)
        await container.close()
    }
}
