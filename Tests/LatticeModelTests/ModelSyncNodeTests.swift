import Foundation
import Lattice
import LatticeTestSupport
import Testing

/// Two model containers whose sync nodes run over loopback TCP: the real
/// transport, encryption and store, started by the container's one line.
@Suite(.serialized) struct ModelSyncNodeTests {
    let directory = TemporaryDirectory("lattice-models")

    @Test func containersOpenedWithASyncPolicySyncTheirObjects() async throws {
        let laptopDirectory = directory.url.appendingPathComponent("laptop"), phoneDirectory = directory.url.appendingPathComponent("phone")
        // Two devices of one account: each trusts the other (as `lattice pair` would make them).
        do {
            let laptop = try Container(identifier: "com.example.movies", directory: laptopDirectory)
            let phone = try Container(identifier: "com.example.movies", directory: phoneDirectory)
            try laptop.trust(deviceID: phone.deviceID)
            try phone.trust(deviceID: laptop.deviceID)
        }
        let laptop = try await ModelContainer(for: seedModels, configuration: ModelConfiguration(
            "com.example.movies", directory: laptopDirectory, sync: SyncPolicy(discovers: false, port: 0)))
        let port = try #require(laptop.node?.listeningPort)
        let phone = try await ModelContainer(for: seedModels, configuration: ModelConfiguration(
            "com.example.movies", directory: phoneDirectory, sync: .peers([PeerAddress(host: "127.0.0.1", port: port)], port: nil)))
        var phoneEvents = phone.changes().makeAsyncIterator()

        let here = ModelContext(laptop)
        let movie = Movie(title: "Toy Story", year: 1995, genre: .animation)
        here.insert(movie)
        movie.reviews = [Review(text: "A classic", stars: 5)]
        try here.save()

        let there = ModelContext(phone)
        #expect(try await eventually { try there.fetch(FetchDescriptor<Review>()).count == 1 })
        let theirs = try #require(try there.fetch(FetchDescriptor<Movie>()).first)
        #expect(theirs.title == "Toy Story" && theirs.reviews.map(\.text) == ["A classic"])
        var sawImport = false
        while let event = await phoneEvents.next() {
            if case .sync(let step) = event, step.kind == .import { sawImport = true; break }
        }
        #expect(sawImport, "the phone reports an import")

        // The phone's edit and cascade reach the laptop.
        theirs.year = 1996
        try there.save()
        #expect(try await eventually { try ModelContext(laptop).fetch(FetchDescriptor<Movie>()).first?.year == 1996 })
        there.delete(theirs)
        try there.save()
        #expect(try await eventually { try ModelContext(laptop).fetchCount(FetchDescriptor<Review>()) == 0 })
        #expect(try ModelContext(laptop).fetchCount(FetchDescriptor<Movie>()) == 0)
        await phone.close()
        await laptop.close()
    }
}
