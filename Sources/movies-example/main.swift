import Foundation
import Lattice

// Two devices of one account, each with a model container whose sync node
// runs on loopback. Both make changes; the program prints what each fetches
// and exits 1 if they differ once sync has had its chance.

/// What a container's objects hold, one line each, in a fixed order.
func snapshot(_ container: ModelContainer) throws -> [String] {
    let context = ModelContext(container)
    var lines: [String] = []
    for movie in try context.fetch(FetchDescriptor<Movie>(sortBy: [SortDescriptor(\.title)])) {
        let reviews = movie.reviews.map { "\($0.stars)★ \($0.text)" }.sorted()
        lines.append("movie  \(movie.title) (\(movie.year), \(movie.genre.rawValue)) reviews: \(reviews.joined(separator: "; "))")
    }
    for todo in try context.fetch(FetchDescriptor<Todo>(sortBy: [SortDescriptor(\.title)])) {
        lines.append("todo   \(todo.title)\(todo.done ? " ✓" : "") tags: \(todo.tags.map(\.name).sorted().joined(separator: ", "))")
    }
    for bill in try context.fetch(FetchDescriptor<Bill>(sortBy: [SortDescriptor(\.payee)])) {
        lines.append("bill   \(bill.payee) \(bill.amount) category: \(bill.category?.name ?? "none")")
    }
    return lines
}

func waitUntilEqual(_ a: ModelContainer, _ b: ModelContainer, seconds: Double = 30) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try snapshot(a) == snapshot(b) { return true }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    return try snapshot(a) == snapshot(b)
}

let root = FileManager.default.temporaryDirectory.appendingPathComponent("movies-example-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: root) }
let laptopStore = root.appendingPathComponent("laptop"), phoneStore = root.appendingPathComponent("phone")

// One account: each device trusts the other (`lattice pair` does this between real devices).
do {
    let laptop = try Container(identifier: "com.example.movies", directory: laptopStore)
    let phone = try Container(identifier: "com.example.movies", directory: phoneStore)
    try laptop.trust(deviceID: phone.deviceID, name: "phone")
    try phone.trust(deviceID: laptop.deviceID, name: "laptop")
}

// One line each opens the store and starts its sync node.
let laptop = try await ModelContainer(for: allModels, configuration: ModelConfiguration(
    "com.example.movies", directory: laptopStore, sync: SyncPolicy(discovers: false, port: 0)))
let phone = try await ModelContainer(for: allModels, configuration: ModelConfiguration(
    "com.example.movies", directory: phoneStore,
    sync: .peers([PeerAddress(host: "127.0.0.1", port: laptop.node?.listeningPort ?? 0)], port: nil)))

// The laptop adds movies with reviews, todos with tags, and bills.
let onLaptop = ModelContext(laptop)
let toyStory = Movie(title: "Toy Story", year: 1995, genre: .animation)
let heat = Movie(title: "Heat", year: 1995, genre: .drama)
onLaptop.insert(toyStory)
onLaptop.insert(heat)
toyStory.reviews = [Review(text: "A classic", stars: 5), Review(text: "Woody!", stars: 4)]
heat.reviews.append(Review(text: "The diner scene", stars: 5))
let work = Tag(name: "work"), home = Tag(name: "home")
let report = Todo(title: "Write the report"), milk = Todo(title: "Buy milk")
onLaptop.insert(report)
onLaptop.insert(milk)
report.tags = [work]
milk.tags = [home]
let utilities = Category(name: "Utilities")
onLaptop.insert(Bill(payee: "Power company", amount: 82.5, category: utilities))
onLaptop.insert(Bill(payee: "Friend", amount: 20))
try onLaptop.save()
guard try await waitUntilEqual(laptop, phone) else {
    print("the phone did not receive the laptop's objects")
    exit(1)
}

// The phone deletes a movie (its reviews cascade), edits a many-to-many, and ticks a todo;
// the laptop concurrently tags the report "home" too.
let onPhone = ModelContext(phone)
let theirHeat = try onPhone.fetch(FetchDescriptor<Movie>(predicate: #Predicate { $0.title == "Heat" })).first
if let theirHeat { onPhone.delete(theirHeat) }
let theirMilk = try onPhone.fetch(FetchDescriptor<Todo>(predicate: #Predicate { $0.title == "Buy milk" })).first
let theirWork = try onPhone.fetch(FetchDescriptor<Tag>(predicate: #Predicate { $0.name == "work" })).first
if let theirMilk, let theirWork {
    theirMilk.tags.append(theirWork)
    theirMilk.done = true
}
try onPhone.save()
report.tags.append(home)
try onLaptop.save()

let converged = try await waitUntilEqual(laptop, phone)
for (name, container) in [("laptop", laptop), ("phone", phone)] {
    print("\(name):")
    for line in try snapshot(container) { print("  \(line)") }
}
await phone.close()
await laptop.close()
if converged {
    print("both devices hold the same objects")
} else {
    print("the devices differ")
    exit(1)
}
