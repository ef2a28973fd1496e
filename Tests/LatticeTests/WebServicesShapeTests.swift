import Foundation
import Lattice
import Testing

/// The CloudKit Web Services shapes the CLI prints and reads are library types:
/// what one prints, the other reads back to the same record.
@Suite struct WebServicesShapeTests {
    @Test func aRecordRoundTripsThroughItsJSON() throws {
        var record = Record(recordType: "Movie", recordName: "toy-story", zoneID: Zone.ID(zoneName: "Movies"))
        record["title"] = "Toy Story"
        record["year"] = .int64(1995)
        record["score"] = .double(8.25)
        record["released"] = .date(817_776_000_000)
        record["cover"] = .bytes([0, 1, 255])
        record["director"] = .reference(RecordReference(recordName: "lasseter", action: .deleteSelf))
        record["studio"] = .location(Location(latitude: 37.8, longitude: -122.3, altitude: 12))
        record["tags"] = .list(["pixar", "toys"])
        record["seen"] = .bool(true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(WebServicesRecord(record))
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#""title":{"type":"STRING","value":"Toy Story"}"#), "\(text)")
        #expect(text.contains(#""director":{"type":"REFERENCE","value":{"action":"DELETE_SELF","recordName":"lasseter"}}"#), "\(text)")
        let decoded = try JSONDecoder().decode(WebServicesRecord.self, from: json)
        let back = try decoded.record(in: record.recordID.zoneID)
        #expect(back.fields == record.fields)
        #expect(back.recordID == record.recordID && back.recordType == "Movie")
    }

    @Test func valuesThatDoNotFitTheirTypeAreRefusedWithTheFieldsName() throws {
        let lines = [
            (#"{"recordName":"a","recordType":"T","fields":{"n":{"value":1.5,"type":"INT64"}}}"#, "n"),
            (#"{"recordName":"a","recordType":"T","fields":{"b":{"value":1,"type":"BOOLEAN"}}}"#, "b"),
            (#"{"recordName":"a","recordType":"T","fields":{"w":{"value":"x","type":"WAT"}}}"#, "unknown type"),
            (#"{"recordName":"a","recordType":"T","fields":{"l":{"value":[1,"x"],"type":"INT64_LIST"}}}"#, "l"),
        ]
        for (line, mention) in lines {
            let shape = try JSONDecoder().decode(WebServicesRecord.self, from: Data(line.utf8))
            do {
                _ = try shape.record(in: .default)
                Issue.record("\(line) was accepted")
            } catch {
                #expect(error.code == .invalidArguments && error.message.contains(mention), "\(error)")
            }
        }
        // Without a type the JSON value decides; integers stay exact.
        let untyped = try JSONDecoder().decode(WebServicesRecord.self, from: Data(#"{"recordName":"a","recordType":"T","fields":{"n":{"value":9007199254740993},"s":{"value":"x"}}}"#.utf8))
        let record = try untyped.record(in: .default)
        #expect(record["n"] == .int64(9_007_199_254_740_993) && record["s"] == .string("x"))
    }

    @Test func filtersAndSortsReadAsAQuery() throws {
        let filters = try JSONDecoder().decode([WebServicesFilter].self, from: Data(#"[{"fieldName":"rating","comparator":"GREATER_THAN_OR_EQUALS","fieldValue":{"value":4}},{"fieldName":"title","comparator":"BEGINS_WITH","fieldValue":{"value":"Toy","type":"STRING"}}]"#.utf8))
        let predicate = try WebServicesFilter.predicate(filters)
        #expect(predicate == .and([.condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .int64(4))), .condition(QueryCondition(.field("title"), .beginsWith, "Toy"))]))
        let bad = try JSONDecoder().decode([WebServicesFilter].self, from: Data(#"[{"fieldName":"x","comparator":"ROUGHLY","fieldValue":{"value":1}}]"#.utf8))
        #expect(throws: LatticeError.self) { try WebServicesFilter.predicate(bad) }
        let sorts = try JSONDecoder().decode([WebServicesSort].self, from: Data(#"[{"fieldName":"title","ascending":false}]"#.utf8))
        #expect(try sorts.map { try $0.sort() } == [QuerySort(.field("title"), ascending: false)])
    }
}
