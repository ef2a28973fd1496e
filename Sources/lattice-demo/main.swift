// Two replicas of one container edit the same records concurrently, exchange
// change sets (what a USB stick or the network would carry), and converge.
import Foundation
import Lattice

func heading(_ text: String) { print("\n== \(text)") }

func show(_ label: String, _ database: Database, _ id: Record.ID) throws {
    let record = try database.record(for: id)
    let fields = record.allKeys().map { "\($0)=\(record[$0]!)" }.joined(separator: " ")
    print("\(label): \(record.recordType) \(id.recordName) [\(record.recordChangeTag ?? "-")] \(fields)")
}

do {
    let root = URL(fileURLWithPath: CommandLine.arguments.dropFirst().first ?? NSTemporaryDirectory())
        .appendingPathComponent("lattice-demo-\(getpid())")
    defer { try? FileManager.default.removeItem(at: root) }
    let laptop = try Container(identifier: "com.example.movies", directory: root.appendingPathComponent("laptop"))
    let phone = try Container(identifier: "com.example.movies", directory: root.appendingPathComponent("phone"))
    print("laptop device ID \(laptop.deviceID)")
    print("phone  device ID \(phone.deviceID)")

    let movies = Zone(zoneName: "Movies")
    let zoneKey = ZoneKey(scope: .private, zoneID: movies.zoneID)
    func sync(_ from: Container, _ to: Container) throws -> ApplySummary {
        let bytes = try from.changeSet(for: zoneKey, since: to.vector(for: zoneKey))
        let summary = try to.apply(changeSet: bytes)
        print("  \(bytes.count) bytes, \(summary.recordsChanged) records changed, \(summary.conflicts) conflicts")
        return summary
    }

    heading("laptop creates a zone and a record; phone receives it")
    try laptop.privateCloudDatabase.save(movies)
    let id = Record.ID(recordName: "toy-story", zoneID: movies.zoneID)
    var toyStory = Record(recordType: "Movie", recordID: id)
    toyStory["title"] = "Toy Story"
    toyStory["rating"] = 4
    toyStory["year"] = 1995
    try laptop.privateCloudDatabase.save(toyStory)
    _ = try sync(laptop, phone)
    try show("phone ", phone.privateCloudDatabase, id)

    heading("both edit offline: laptop sets rating and title, phone sets rating and a note")
    var onLaptop = try laptop.privateCloudDatabase.record(for: id)
    onLaptop["rating"] = 5
    onLaptop["title"] = "Toy Story (1995)"
    try laptop.privateCloudDatabase.save(onLaptop)
    var onPhone = try phone.privateCloudDatabase.record(for: id)
    onPhone["rating"] = 3
    onPhone["note"] = "watch with the kids"
    try phone.privateCloudDatabase.save(onPhone)
    try show("laptop", laptop.privateCloudDatabase, id)
    try show("phone ", phone.privateCloudDatabase, id)

    heading("exchange change sets both ways")
    _ = try sync(laptop, phone)
    _ = try sync(phone, laptop)
    try show("laptop", laptop.privateCloudDatabase, id)
    try show("phone ", phone.privateCloudDatabase, id)
    let converged = try laptop.privateCloudDatabase.record(for: id).fields == phone.privateCloudDatabase.record(for: id).fields
    print("converged: \(converged)")
    // Conflicts are part of the record: both devices show the same ones.
    for (name, container) in [("laptop", laptop), ("phone ", phone)] {
        for conflict in try container.privateCloudDatabase.conflicts(for: id) {
            print("\(name): conflict on \(conflict.field): kept \(conflict.winningValue.map { "\($0)" } ?? "nil"), lost \(conflict.losingValue.map { "\($0)" } ?? "nil")")
        }
    }

    heading("phone deletes while laptop edits: the delete wins")
    try phone.privateCloudDatabase.deleteRecord(withID: id)
    var again = try laptop.privateCloudDatabase.record(for: id)
    again["rating"] = 1
    try laptop.privateCloudDatabase.save(again)
    _ = try sync(laptop, phone)
    _ = try sync(phone, laptop)
    for (name, container) in [("laptop", laptop), ("phone ", phone)] {
        let exists = (try? container.privateCloudDatabase.record(for: id)) != nil
        print("\(name): toy-story \(exists ? "exists" : "deleted")")
    }
    guard converged else { exit(1) }
} catch {
    FileHandle.standardError.write(Data("lattice-demo: \(error)\n".utf8))
    exit(1)
}
