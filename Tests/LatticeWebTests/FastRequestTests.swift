import Foundation
import Lattice
import LatticeTestSupport
@testable import LatticeWeb
import Testing

/// `records/modify` is read by the fast reader where it is sure of the text,
/// else by `JSONDecoder`: wherever the fast reader answers, its request is
/// `JSONDecoder`'s, on random bodies made of valid and invalid pieces.
@Suite struct FastRequestTests {
    static func decoded(_ body: String) -> ModifyRequest? {
        try? RequestBody.decode(ModifyRequest.self, from: Array(body.utf8), what: "records/modify")
    }

    static let fieldPieces = [
        #""title":{"value":"Toy \"Story\""}"#, #""rating":{"value":5,"type":"INT64"}"#, #""score":{"value":8.5}"#, #""n":{"value":null}"#,
        #""t":{"value":"x","type":null}"#, #""tags":{"value":["a","b"],"type":"STRING_LIST"}"#, #""bad":{"type":"STRING"}"#,
        #""odd":{"value":1,"kind":"x"}"#, #""two":{"value":2.0}"#, #""esc":{"value":"\u00e9"}"#, #""o":{"value":{"latitude":1,"longitude":2}}"#,
    ]
    static let recordPieces = [
        #""recordName":"m1""#, #""recordType":"Movie""#, #""recordChangeTag":"abc""#, #""zoneID":{"zoneName":"Movies"}"#,
        #""zoneID":{"zoneName":"Z","ownerRecordName":"_o"}"#, #""zoneID":{"ownerName":"x"}"#, #""recordName":5"#, #""recordType":null"#,
        #""created":{"timestamp":1}"#, #""colour":"red""#, #""zoneID":{"zoneName":"Z","zoneType":"REGULAR_CUSTOM_ZONE"}"#,
    ]
    static let topPieces = [
        #""zoneID":{"zoneName":"Movies"}"#, #""atomic":false"#, #""atomic":"yes""#, #""desiredKeys":["title"]"#, #""desiredKeys":[1]"#,
        #""numbersAsStrings":true"#, #""extra":1"#, #""zoneID":null"#,
    ]

    static func pick(_ pieces: [String], _ rng: inout SeededGenerator, upTo count: Int) -> String {
        (0..<Int.random(in: 0...count, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined(separator: ",")
    }

    static func body(_ rng: inout SeededGenerator) -> String {
        let operations = (0..<Int.random(in: 0...3, using: &rng)).map { _ -> String in
            let fields = pick(fieldPieces, &rng, upTo: 3)
            let record = [pick(recordPieces, &rng, upTo: 3), Bool.random(using: &rng) ? #""fields":{\#(fields)}"# : ""].filter { !$0.isEmpty }.joined(separator: ",")
            let type = ["create", "forceDelete", "update", "nonsense"].randomElement(using: &rng)!
            return #"{"operationType":"\#(type)","record":{\#(record)}}"#
        }
        let top = pick(topPieces, &rng, upTo: 2)
        return "{" + [#""operations":[\#(operations.joined(separator: ","))]"#, top].filter { !$0.isEmpty }.joined(separator: ",") + "}"
    }

    @Test(arguments: 0..<20) func theFastReaderAgreesWithJSONDecoder(seed: Int) {
        var rng = SeededGenerator(seed: UInt64(seed) &+ 11)
        var read = 0
        for _ in 0..<200 {
            let body = Self.body(&rng)
            guard let fast = ModifyRequest.fast(Array(body.utf8)) else { continue }
            read += 1
            #expect(fast == Self.decoded(body), "the fast reader and JSONDecoder differ on \(body)")
        }
        #expect(read > 0, "the fast reader read none of the bodies")
    }

    @Test func aPlainModifyIsReadFast() throws {
        let body = #"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"m1","recordType":"Movie","fields":{"title":{"value":"Up"},"rating":{"value":4,"type":"INT64"}}}}]}"#
        let fast = try #require(ModifyRequest.fast(Array(body.utf8)))
        #expect(fast == Self.decoded(body))
        #expect(fast.operations.first?.record.fields?["rating"] == WebServicesField(value: .integer(4), type: "INT64"))
    }
}
