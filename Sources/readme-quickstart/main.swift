// The README's library quick start, compiled with every build (scripts/check-docs.py
// checks that the README shows exactly the code below this header). Not run: its last
// loop waits for changes for as long as the process lives.

import Foundation
import Lattice

@Model final class Movie {
    @Attribute(.unique) var title: String = ""        // the key: it names the record on every device
    var year: Int = 0
    init(title: String, year: Int) { self.title = title; self.year = year }
}

// LAN discovery by default; .peers([PeerAddress("192.168.1.20:7766")!]) for static addresses, .none for none.
let container = try await ModelContainer(for: Movie.self,
                                         configuration: ModelConfiguration("com.example.movies"))
let context = ModelContext(container)
context.insert(Movie(title: "Toy Story", year: 1995))
try context.save()                                     // one atomic modifyRecords

var recent = FetchDescriptor<Movie>(predicate: #Predicate { $0.year >= 1990 },
                                    sortBy: [SortDescriptor(\.year, order: .reverse)])
recent.fetchLimit = 50
for movie in try context.fetch(recent) { print(movie.title, movie.year) }
for await change in container.changes() { print(change) }   // .inserted/.updated/.deleted(id), .sync(setup/import/export)
