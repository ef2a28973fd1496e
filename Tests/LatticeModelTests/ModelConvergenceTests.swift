import Foundation
import Lattice
import LatticeTestSupport
import Testing

/// Random model edits on three replicas, delivered in random orders: after
/// every replica has everything, all read the same objects and relationships.
@Suite struct ModelConvergenceTests {
    static let histories = Int(ProcessInfo.processInfo.environment["LATTICE_MODEL_HISTORIES"] ?? "") ?? 40

    @Test func randomEditsConvergeOnEveryReplica() async throws {
        for seed in 0..<UInt64(Self.histories) {
            try await history(seed: seed)
        }
    }

    func history(seed: UInt64) async throws {
        let directory = TemporaryDirectory("lattice-models")
        var random = SeededGenerator(seed: seed)
        var replicas: [ModelContainer] = []
        for name in ["a", "b", "c"] { replicas.append(try await openContainer(seedModels, in: directory, name: name)) }
        for _ in 0..<30 {
            let replica = replicas[Int.random(in: 0..<3, using: &random)]
            let context = ModelContext(replica)
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                context.insert(Movie(title: ["A", "B", "C"].randomElement(using: &random)!, year: Int.random(in: 1990...2000, using: &random)))
            case 2:
                let movies = try context.fetch(FetchDescriptor<Movie>())
                context.insert(Review(text: "r\(Int.random(in: 0..<1000, using: &random))", stars: 3, movie: movies.randomElement(using: &random)))
            case 3:
                if let movie = try context.fetch(FetchDescriptor<Movie>()).randomElement(using: &random) { context.delete(movie) }
            case 4:
                if let movie = try context.fetch(FetchDescriptor<Movie>()).randomElement(using: &random) { movie.year += 1 }
            case 5:
                context.insert(Tag(name: ["x", "y", "z"].randomElement(using: &random)!, color: ["red", "blue"].randomElement(using: &random)!))
            case 6:
                context.insert(Todo(title: "t\(Int.random(in: 0..<1000, using: &random))"))
            case 7:
                let tags = try context.fetch(FetchDescriptor<Tag>())
                if let todo = try context.fetch(FetchDescriptor<Todo>()).randomElement(using: &random), let tag = tags.randomElement(using: &random) {
                    if todo.tags.contains(tag) { todo.tags.removeAll { $0 == tag } } else { todo.tags.append(tag) }
                }
            case 8:
                if Bool.random(using: &random), let tag = try context.fetch(FetchDescriptor<Tag>()).randomElement(using: &random) { context.delete(tag) }
                else if let todo = try context.fetch(FetchDescriptor<Todo>()).randomElement(using: &random) { context.delete(todo) }
            default:
                let from = Int.random(in: 0..<3, using: &random), to = (from + Int.random(in: 1..<3, using: &random)) % 3
                try send(replicas[from], to: replicas[to])
            }
            try context.save()
        }
        for _ in 0..<2 {
            for from in 0..<3 { for to in 0..<3 where from != to { try send(replicas[from], to: replicas[to]) } }
        }
        let dumps = try replicas.map { try dump($0) }
        #expect(dumps[0] == dumps[1] && dumps[1] == dumps[2], "seed \(seed):\n\(dumps.joined(separator: "\n---\n"))")
        for replica in replicas { await replica.close() }
    }

    /// What a replica's objects hold, in a canonical order.
    func dump(_ container: ModelContainer) throws -> String {
        let context = ModelContext(container)
        var lines: [String] = []
        for movie in try context.fetch(FetchDescriptor<Movie>(sortBy: [SortDescriptor(\.title)])) {
            lines.append("movie \(movie.title) \(movie.year) reviews \(movie.reviews.map(\.text).sorted())")
        }
        for review in try context.fetch(FetchDescriptor<Review>(sortBy: [SortDescriptor(\.text)])) {
            lines.append("review \(review.text) of \(review.movie?.title ?? "-")")
        }
        for tag in try context.fetch(FetchDescriptor<Tag>(sortBy: [SortDescriptor(\.name)])) {
            lines.append("tag \(tag.name) \(tag.color) todos \(tag.todos.map(\.title).sorted())")
        }
        for todo in try context.fetch(FetchDescriptor<Todo>(sortBy: [SortDescriptor(\.title)])) {
            lines.append("todo \(todo.title) tags \(todo.tags.map(\.name).sorted())")
        }
        return lines.joined(separator: "\n")
    }
}
