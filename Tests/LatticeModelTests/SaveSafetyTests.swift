import Foundation
import Lattice
import Testing
import LatticeTestSupport

@Model final class Account {
    @Attribute(.unique) var email: String? = nil
    var name: String = ""
    var visits: UInt = 0
    var address: Address? = nil
    init(email: String?, name: String) { self.email = email; self.name = name }
}

@Model final class Director {
    var name: String = ""
    // Wrong on purpose: Review.movie is a relationship to Movie, not to Director.
    @Relationship(inverse: \Review.movie) var picks: [Review] = []
    init() {}
}

/// What a save does when it fails, meets records deleted elsewhere, or
/// edits a relationship another context changed meanwhile.
@Suite struct SaveSafetyTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func aFailedSaveLeavesTheContextAsItWas() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "store")
        let context = ModelContext(container)
        let movie = Movie(title: "Up", year: 2009)
        context.insert(movie)
        movie.reviews = [Review(text: "Balloons", stars: 5)]
        let home = Tag(name: "home")
        context.insert(home)
        let bill = Bill(payee: "Power", amount: 10, due: Date(timeIntervalSince1970: 0), category: Category(name: "Utilities"))
        context.insert(bill)
        try context.save()
        let review = try #require(movie.reviews.first)
        let utilities = try #require(bill.category)

        context.delete(movie)
        context.delete(utilities)
        home.name = "house"
        expectError(.invalidArguments) { try context.save() }
        #expect(!review.isDeleted, "the cascade was not applied: nothing was written")
        #expect(bill.category == nil, "the category is still deleted in this context")
        #expect(!bill.hasChanges, "the nullify was undone")
        #expect(try ModelContext(container).fetchCount(FetchDescriptor<Review>()) == 1)

        // Rolled back, everything is as saved; deleted again with the key put back, the rules apply.
        context.rollback()
        #expect(bill.category === utilities)
        #expect(!movie.isDeleted)
        #expect(home.name == "home")
        context.delete(movie)
        context.delete(utilities)
        try context.save()
        #expect(review.isDeleted)
        let check = ModelContext(container)
        #expect(try check.fetchCount(FetchDescriptor<Review>()) == 0)
        #expect(try check.fetch(FetchDescriptor<Bill>()).first?.category == nil)
        await container.close()
    }

    @Test func aManyToManyEditKeepsLinksAnotherContextAdded() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "store")
        let first = ModelContext(container)
        let report = Todo(title: "Report")
        first.insert(report)
        report.tags = [Tag(name: "work")]
        try first.save()
        #expect(report.tags.map(\.name) == ["work"])

        // Another context (another process or a peer) links "home" meanwhile.
        let second = ModelContext(container)
        let theirs = try #require(try second.fetch(FetchDescriptor<Todo>()).first)
        theirs.tags.append(Tag(name: "home"))
        try second.save()

        report.tags.append(Tag(name: "urgent"))
        try first.save()
        let names = try ModelContext(container).fetch(FetchDescriptor<Todo>()).first?.tags.map(\.name).sorted()
        #expect(names == ["home", "urgent", "work"])
        await container.close()
    }

    @Test func recordsDeletedElsewhereAreNotWrittenBack() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "store")
        let mine = ModelContext(container)
        let up = Movie(title: "Up", year: 2009)
        let work = Tag(name: "work")
        let report = Todo(title: "Report")
        mine.insert(up)
        mine.insert(work)
        mine.insert(report)
        try mine.save()

        let other = ModelContext(container)
        for movie in try other.fetch(FetchDescriptor<Movie>()) { other.delete(movie) }
        for tag in try other.fetch(FetchDescriptor<Tag>()) { other.delete(tag) }
        try other.save()

        up.year = 2010
        mine.delete(work)
        report.title = "Report, final"
        try mine.save()
        let check = ModelContext(container)
        #expect(try check.fetchCount(FetchDescriptor<Movie>()) == 0, "an edit of a record deleted elsewhere does not bring back a record of one field")
        #expect(up.isDeleted)
        #expect(try check.fetch(FetchDescriptor<Todo>()).map(\.title) == ["Report, final"])
        await container.close()
    }

    @Test func deletingAnUnsavedObjectAppliesItsRules() async throws {
        let container = try await openContainer(seedModels, in: directory, name: "store")
        let context = ModelContext(container)
        let draft = Movie(title: "Draft", year: 1)
        context.insert(draft)
        draft.reviews.append(Review(text: "orphan?", stars: 1))
        context.delete(draft)
        try context.save()
        #expect(try context.fetchCount(FetchDescriptor<Review>()) == 0, "the review went with its unsaved movie")
        await container.close()
    }

    @Test func nilAndEmptyKeysAreDifferentRecords() async throws {
        let container = try await openContainer([Account.self], in: directory, name: "store")
        let context = ModelContext(container)
        context.insert(Account(email: nil, name: "no email"))
        context.insert(Account(email: "", name: "empty email"))
        try context.save()
        #expect(Set(try ModelContext(container).fetch(FetchDescriptor<Account>()).map(\.name)) == ["no email", "empty email"])
        await container.close()
    }

    @Test func unsignedIntegersCompareAsNumbersAndJSONIsNotOrdered() async throws {
        let container = try await openContainer([Account.self], in: directory, name: "store")
        let context = ModelContext(container)
        for (email, visits) in [("a", UInt(9)), ("b", 10), ("c", 100)] {
            let account = Account(email: email, name: email)
            account.visits = visits
            context.insert(account)
        }
        try context.save()
        let many = try context.fetch(FetchDescriptor<Account>(predicate: #Predicate { $0.visits > 9 }, sortBy: [SortDescriptor(\.visits)]))
        #expect(many.map(\.name) == ["b", "c"])
        let home = Address(street: "x", city: "y", floors: [])
        expectError(.invalidArguments) { try context.fetch(FetchDescriptor<Account>(predicate: #Predicate { $0.address! == home })) }
        await container.close()
    }

    @Test func anInverseThatDoesNotPointBackIsRefused() async throws {
        do {
            _ = try await openContainer([Director.self], in: directory, name: "store")
            Issue.record("a model whose inverse names another type opened")
        } catch let error as LatticeError {
            #expect(error.code == .invalidArguments && error.message.contains("picks"), "\(error)")
        }
    }
}
