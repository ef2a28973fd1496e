import Foundation
import Lattice

// The seeds' models, declared as a SwiftData app declares them.

enum Genre: String, Codable { case animation, drama, comedy }

@Model final class Movie {
    @Attribute(.unique) var title: String = ""
    var year: Int = 0
    var genre: Genre = .drama
    @Relationship(deleteRule: .cascade, inverse: \Review.movie) var reviews: [Review] = []

    init(title: String, year: Int, genre: Genre) {
        self.title = title
        self.year = year
        self.genre = genre
    }
}

@Model final class Review {
    var text: String = ""
    var stars: Int = 0
    var movie: Movie?

    init(text: String, stars: Int, movie: Movie? = nil) {
        self.text = text
        self.stars = stars
        self.movie = movie
    }
}

@Model final class Todo {
    var title: String = ""
    var done: Bool = false
    @Relationship(inverse: \Tag.todos) var tags: [Tag] = []

    init(title: String) { self.title = title }
}

@Model final class Tag {
    @Attribute(.unique) var name: String = ""
    var todos: [Todo] = []

    init(name: String) { self.name = name }
}

@Model final class Category {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: \Bill.category) var bills: [Bill] = []

    init(name: String) { self.name = name }
}

@Model final class Bill {
    var payee: String = ""
    var amount: Double = 0
    var category: Category?

    init(payee: String, amount: Double, category: Category? = nil) {
        self.payee = payee
        self.amount = amount
        self.category = category
    }
}

var allModels: [any PersistentModel.Type] { [Movie.self, Review.self, Todo.self, Tag.self, Category.self, Bill.self] }
