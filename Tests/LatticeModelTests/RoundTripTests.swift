import Foundation
import Lattice
import Testing
import LatticeTestSupport

enum Priority: Int, Codable { case low = 1, high = 9 }

struct Address: Codable, Equatable {
    var street: String
    var city: String
    var floors: [Int]
}

/// Every kind of property a model can hold.
@Model final class Everything {
    var text: String = ""
    var int: Int = 0
    var int64: Int64 = 0
    var int32: Int32 = 0
    var int16: Int16 = 0
    var int8: Int8 = 0
    var uint32: UInt32 = 0
    var uint16: UInt16 = 0
    var uint8: UInt8 = 0
    var double: Double = 0
    var float: Float = 0
    var flag: Bool = false
    var date: Date = Date(timeIntervalSince1970: 0)
    var data: Data = Data()
    var file: URL? = nil
    var place: Location = Location(latitude: 0, longitude: 0)
    var genre: Genre = .drama
    var priority: Priority? = nil
    var address: Address = Address(street: "", city: "", floors: [])
    var maybeText: String? = nil
    var maybeDate: Date? = nil
    var words: [String] = []
    var numbers: [Int] = []
    var dates: [Date] = []
    var places: [Location] = []
    var genres: [Genre] = []
    var addresses: [Address] = []
    var maybeWords: [String]? = nil

    init() {}
}

@Suite struct RoundTripTests {
    let directory = TemporaryDirectory("lattice-models")

    func filled(file: URL) -> Everything {
        let object = Everything()
        object.text = "Grüße, 世界 \u{1F600}"
        object.int = .min
        object.int64 = .max
        object.int32 = -123_456
        object.int16 = 32_000
        object.int8 = -128
        object.uint32 = .max
        object.uint16 = 65_535
        object.uint8 = 255
        object.double = 0.1 + 0.2
        object.float = 3.25
        object.flag = true
        object.date = Date(timeIntervalSince1970: 1_700_000_000.123)
        object.data = Data([0, 1, 2, 255])
        object.file = file
        object.place = Location(latitude: 48.8566, longitude: 2.3522, altitude: 35)
        object.genre = .comedy
        object.priority = .high
        object.address = Address(street: "1 Main St", city: "Springfield", floors: [1, 2])
        object.maybeText = "present"
        object.maybeDate = nil
        object.words = ["a", "b", ""]
        object.numbers = [3, 1, 2]
        object.dates = [Date(timeIntervalSince1970: 1), Date(timeIntervalSince1970: 2)]
        object.places = [Location(latitude: 1, longitude: 2)]
        object.genres = [.animation, .drama]
        object.addresses = [Address(street: "x", city: "y", floors: [])]
        object.maybeWords = ["z"]
        return object
    }

    func expectEqual(_ a: Everything, _ b: Everything, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(a.text == b.text && a.int == b.int && a.int64 == b.int64 && a.int32 == b.int32 && a.int16 == b.int16 && a.int8 == b.int8, sourceLocation: sourceLocation)
        #expect(a.uint32 == b.uint32 && a.uint16 == b.uint16 && a.uint8 == b.uint8, sourceLocation: sourceLocation)
        #expect(a.double == b.double && a.float == b.float && a.flag == b.flag && a.date == b.date && a.data == b.data, sourceLocation: sourceLocation)
        #expect(a.place == b.place && a.genre == b.genre && a.priority == b.priority && a.address == b.address, sourceLocation: sourceLocation)
        #expect(a.maybeText == b.maybeText && a.maybeDate == b.maybeDate && a.words == b.words && a.numbers == b.numbers, sourceLocation: sourceLocation)
        #expect(a.dates == b.dates && a.places == b.places && a.genres == b.genres && a.addresses == b.addresses && a.maybeWords == b.maybeWords, sourceLocation: sourceLocation)
    }

    @Test func everyKindRoundTripsThroughTheStoreAndASync() async throws {
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let poster = directory.url.appendingPathComponent("poster.jpg")
        try Data("not really a jpeg".utf8).write(to: poster)
        let laptop = try await openContainer([Everything.self], in: directory, name: "laptop")
        let phone = try await openContainer([Everything.self], in: directory, name: "phone")
        let context = ModelContext(laptop)
        let original = filled(file: poster)
        context.insert(original)
        try context.save()

        let reread = try #require(try ModelContext(laptop).fetch(FetchDescriptor<Everything>()).first)
        expectEqual(original, reread)
        #expect(original.date == Date(timeIntervalSince1970: 1_700_000_000.123), "a date whole to the millisecond is kept exactly")
        let stored = try #require(reread.file)
        #expect(try Data(contentsOf: stored) == Data("not really a jpeg".utf8), "a URL is a file, stored as an asset")

        try exchange(laptop, phone)
        let id = try #require(original.persistentModelID).recordID
        let here = try await laptop.database.record(for: id), there = try await phone.database.record(for: id)
        #expect(here.fields == there.fields, "the synced record holds the same field values")
        #expect(here["int64"] == .int64(.max) && here["genre"] == .string("comedy") && here["priority"] == .int64(9))
        #expect(here["address"] == .string(#"{"city":"Springfield","floors":[1,2],"street":"1 Main St"}"#), "a Codable value is JSON with sorted keys")
        #expect(here["maybeDate"] == nil, "nil is an absent field")
        let synced = try #require(try ModelContext(phone).fetch(FetchDescriptor<Everything>()).first)
        #expect(synced.file == nil, "the asset's content has not moved to the phone: the URL reads as absent")
        // Every other property arrived as it was saved.
        let expected = filled(file: poster)
        expected.file = nil
        expectEqual(expected, synced)
        await laptop.close()
        await phone.close()
    }

    @Test func anUnsupportedPropertyTypeIsRefusedWithItsName() async throws {
        do {
            _ = try await openContainer([Unstorable.self], in: directory, name: "store")
            Issue.record("a model with an unstorable property opened")
        } catch let error as LatticeError {
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("handle"), "\(error)")
        }
    }
}

final class Handle {}

@Model final class Unstorable {
    var handle: Handle = Handle()
    init() {}
}
