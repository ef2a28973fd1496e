import Foundation
import Lattice
import Testing
import LatticeTestSupport

/// The seeds' shapes saved on one replica and read as objects on another.
@Suite struct SeedShapeTests {
    let directory = TemporaryDirectory("lattice-models")

    func pair() async throws -> (ModelContainer, ModelContainer) {
        (try await openContainer(seedModels, in: directory, name: "laptop"), try await openContainer(seedModels, in: directory, name: "phone"))
    }

    @Test func movieWithReviewsSyncsAndCascades() async throws {
        let (laptop, phone) = try await pair()
        let here = ModelContext(laptop)
        let toyStory = Movie(title: "Toy Story", year: 1995, genre: .animation)
        here.insert(toyStory)
        toyStory.reviews.append(Review(text: "A classic", stars: 5))
        let second = Review(text: "Fun", stars: 4, movie: toyStory)
        here.insert(second)
        #expect(toyStory.reviews.count == 2, "setting the to-one side shows on the to-many side before a save")
        try here.save()
        try exchange(laptop, phone)

        let there = ModelContext(phone)
        let movies = try there.fetch(FetchDescriptor<Movie>())
        #expect(movies.map(\.title) == ["Toy Story"])
        let movie = try #require(movies.first)
        #expect(movie.genre == .animation && movie.year == 1995)
        #expect(Set(movie.reviews.map(\.text)) == ["A classic", "Fun"])
        #expect(movie.reviews.allSatisfy { $0.movie === movie }, "one object per record in a context")

        // A review added on the phone while the laptop deletes the movie: the cascade wins on both, whatever the order.
        there.insert(Review(text: "Late", stars: 3, movie: movie))
        try there.save()
        here.delete(toyStory)
        try here.save()
        #expect(try here.fetch(FetchDescriptor<Review>()).isEmpty)
        try send(laptop, to: phone)
        try send(phone, to: laptop)
        for container in [laptop, phone] {
            let context = ModelContext(container)
            #expect(try context.fetch(FetchDescriptor<Movie>()).isEmpty)
            #expect(try context.fetch(FetchDescriptor<Review>()).isEmpty, "the review saved after the delete was concurrent with it")
        }
        await laptop.close()
        await phone.close()
    }

    @Test func cascadeConvergesWhenTheDeleteArrivesFirst() async throws {
        let (laptop, phone) = try await pair()
        let here = ModelContext(laptop)
        let up = Movie(title: "Up", year: 2009)
        here.insert(up)
        try here.save()
        try exchange(laptop, phone)
        let there = ModelContext(phone)
        let theirs = try #require(try there.fetch(FetchDescriptor<Movie>()).first)
        there.insert(Review(text: "Balloons", stars: 5, movie: theirs))
        try there.save()
        here.delete(up)
        try here.save()
        // The delete reaches the phone before the phone's review reaches the laptop.
        try send(laptop, to: phone)
        try send(phone, to: laptop)
        for container in [laptop, phone] {
            #expect(try ModelContext(container).fetchCount(FetchDescriptor<Review>()) == 0)
        }
        await laptop.close()
        await phone.close()
    }

    @Test func todosAndTagsManyToManyWithNullify() async throws {
        let (laptop, phone) = try await pair()
        let here = ModelContext(laptop)
        let work = Tag(name: "work", color: "red")
        let home = Tag(name: "home")
        let report = Todo(title: "Write the report")
        let groceries = Todo(title: "Buy milk")
        here.insert(report)
        here.insert(groceries)
        report.tags = [work, home]
        groceries.tags.append(home)
        #expect(home.todos.count == 2, "the inverse is kept in step before a save")
        try here.save()
        try exchange(laptop, phone)

        let there = ModelContext(phone)
        let tags = try there.fetch(FetchDescriptor<Tag>(sortBy: [SortDescriptor(\.name)]))
        #expect(tags.map(\.name) == ["home", "work"])
        #expect(Set(tags[0].todos.map(\.title)) == ["Write the report", "Buy milk"])
        let theirReport = try #require(try there.fetch(FetchDescriptor<Todo>(predicate: #Predicate { $0.title == "Write the report" })).first)
        #expect(Set(theirReport.tags.map(\.name)) == ["home", "work"])

        // Editing the many-to-many on the phone, deleting a todo on the laptop (nullify).
        theirReport.tags.removeAll { $0.name == "home" }
        try there.save()
        here.delete(groceries)
        try here.save()
        try exchange(laptop, phone)
        for container in [laptop, phone] {
            let context = ModelContext(container)
            let home = try #require(try context.fetch(FetchDescriptor<Tag>(predicate: #Predicate { $0.name == "home" })).first)
            #expect(home.todos.isEmpty)
            let report = try #require(try context.fetch(FetchDescriptor<Todo>()).first)
            #expect(report.tags.map(\.name) == ["work"])
        }
        await laptop.close()
        await phone.close()
    }

    @Test func billWithOptionalCategory() async throws {
        let (laptop, phone) = try await pair()
        let here = ModelContext(laptop)
        let utilities = Category(name: "Utilities")
        let due = Date(timeIntervalSince1970: 1_800_000_000)
        here.insert(Bill(payee: "Power company", amount: 82.5, due: due, category: utilities))
        here.insert(Bill(payee: "Friend", amount: 20, due: due))
        try here.save()
        try exchange(laptop, phone)

        let there = ModelContext(phone)
        let bills = try there.fetch(FetchDescriptor<Bill>(sortBy: [SortDescriptor(\.amount, order: .reverse)]))
        #expect(bills.map(\.payee) == ["Power company", "Friend"])
        #expect(bills[0].category?.name == "Utilities")
        #expect(bills[1].category == nil)
        #expect(bills[0].due == due)
        let category = try #require(bills[0].category)
        #expect(category.bills.map(\.payee) == ["Power company"])

        // Deleting the category nullifies the bill's reference everywhere.
        there.delete(category)
        try there.save()
        try exchange(laptop, phone)
        for container in [laptop, phone] {
            let context = ModelContext(container)
            let power = try #require(try context.fetch(FetchDescriptor<Bill>(predicate: #Predicate { $0.payee == "Power company" })).first)
            #expect(power.category == nil)
            #expect(try context.fetchCount(FetchDescriptor<Category>()) == 0)
        }
        await laptop.close()
        await phone.close()
    }

    @Test func aReferenceThatHasNotArrivedReadsAsAbsentThenAppears() async throws {
        let (laptop, phone) = try await pair()
        let here = ModelContext(laptop)
        let coco = Movie(title: "Coco", year: 2017)
        here.insert(coco)
        try here.save()
        // A review that names a movie the phone does not have yet (as when a
        // peer's review arrives before the movie's record does).
        let there = ModelContext(phone)
        var record = Record(recordType: "Review", recordName: "r-early")
        record["text"] = .string("Early")
        record["movie"] = .reference(RecordReference(recordName: try #require(coco.persistentModelID).recordID.recordName))
        _ = try await phone.database.save(record)
        let early = try #require(try there.fetch(FetchDescriptor<Review>()).first)
        #expect(early.movie == nil, "the movie has not arrived: absent, not a crash")
        try send(laptop, to: phone)
        #expect(early.movie?.title == "Coco", "it appears when it arrives")
        await laptop.close()
        await phone.close()
    }
}
