import Foundation
import Lattice
import Testing
import LatticeTestSupport

@Suite struct ModelEventTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func changesStreamInsertsUpdatesAndDeletesIncludingThoseFromPeers() async throws {
        let laptop = try await openContainer(seedModels, in: directory, name: "laptop")
        let phone = try await openContainer(seedModels, in: directory, name: "phone")
        var events = laptop.changes().makeAsyncIterator()
        let context = ModelContext(laptop)
        let movie = Movie(title: "Up", year: 2009)
        context.insert(movie)
        try context.save()
        let id = try #require(movie.persistentModelID)
        #expect(await events.next() == .inserted(id))
        movie.year = 2010
        try context.save()
        #expect(await events.next() == .updated(id))

        // A change made on another device arrives by sync (an import).
        try exchange(laptop, phone)
        let there = ModelContext(phone)
        let theirs = try #require(try there.fetch(FetchDescriptor<Movie>()).first)
        there.delete(theirs)
        try there.save()
        try send(phone, to: laptop)
        #expect(await events.next() == .deleted(id))
        await laptop.close()
        await phone.close()
    }
}
