import Foundation
@testable import Lattice
import LatticeTestSupport
import Testing

/// `record import` reads most lines without `JSONDecoder` (`WebServicesJSON`):
/// wherever the fast reader answers, its record is `JSONDecoder`'s, on
/// hand-picked edge cases and on random lines made of them; it must also
/// answer for the plain lines an export writes, or it would save nothing.
@Suite struct WebServicesJSONTests {
    static func fast(_ line: String) -> WebServicesRecord? {
        Data(line.utf8).withUnsafeBytes { WebServicesRecord.fastDecoded($0) }
    }

    static func foundation(_ line: String) -> WebServicesRecord? {
        try? JSONDecoder().decode(WebServicesRecord.self, from: Data(line.utf8))
    }

    /// Whatever the fast reader answers, JSONDecoder answers the same.
    static func expectAgreement(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let fast = fast(line) else { return }
        #expect(fast == foundation(line), "the fast reader and JSONDecoder differ on \(line)", sourceLocation: sourceLocation)
    }

    @Test func plainLinesAreReadFastAndAsJSONDecoderReadsThem() throws {
        let lines = [
            #"{"recordName":"r1","recordType":"Track","fields":{"title":{"value":"abc"},"plays":{"value":3},"score":{"value":1.25},"liked":{"value":true},"released":{"value":1700000000000,"type":"TIMESTAMP"}}}"#,
            #"{"recordName": "r2", "recordType": "T", "fields": {}, "recordChangeTag": "7", "zoneID": {"zoneName": "Music", "ownerName": "__defaultOwner__"}}"#,
            #"{"recordName":"r3","recordType":"T","fields":{"n":{"value":null,"type":null},"s":{"value":"tab\there \"quoted\" back\\slash \/ done"}},"created":{"timestamp":1,"deviceID":"d"},"modified":null}"#,
            #" {"recordName":"r4","recordType":"T","fields":{"list":{"value":[1,-2,0.5,[]],"type":"DOUBLE_LIST"},"o":{"value":{"latitude":1.5,"longitude":-0.25}}},"extra":[true,false,null]} "#,
            #"{"recordName":"é✓","recordType":"T","fields":{"ünïcode":{"value":"日本語"}}}"#,
        ]
        for line in lines {
            let fast = try #require(Self.fast(line), "the fast reader should read \(line)")
            #expect(fast == Self.foundation(line), "\(line)")
        }
    }

    /// CloudKit Web Services makes a zone ID's owner optional (`zoneName` is the one key it
    /// requires) and names it `ownerRecordName`: both readers take a zone ID without an owner as
    /// the caller's own zone, and either name for the owner.
    @Test func aZoneIDsOwnerIsOptionalAndMayBeCalledOwnerRecordName() throws {
        let cases: [(line: String, owner: String)] = [
            (#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z"}}"#, ZoneID.defaultOwnerName),
            (#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z","ownerName":null}}"#, ZoneID.defaultOwnerName),
            (#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z","ownerRecordName":"_abc"}}"#, "_abc"),
            (#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z","ownerName":null,"ownerRecordName":"_abc"}}"#, "_abc"),
            (#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z","ownerName":"_def","ownerRecordName":"_abc"}}"#, "_def"),
        ]
        for (line, owner) in cases {
            let fast = try #require(Self.fast(line), "the fast reader should read \(line)")
            #expect(fast.zoneID?.zoneID == ZoneID(zoneName: "Z", ownerName: owner), "\(line)")
            #expect(fast == Self.foundation(line), "\(line)")
        }
        // Written, the owner is always there, as `ownerName`.
        let written = String(decoding: try JSONEncoder().encode(WebServicesZoneID(ZoneID(zoneName: "Z"))), as: UTF8.self)
        #expect(written.contains(#""ownerName":"\#(ZoneID.defaultOwnerName)""#))
        // A zone ID without its name is refused.
        #expect(Self.fast(#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"ownerName":"x"}}"#) == nil)
        #expect(Self.foundation(#"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"ownerName":"x"}}"#) == nil)
    }

    /// CloudKit's record dictionary makes `recordName` (a create names the record),
    /// `fields` and a timestamp's device optional: the library reads them absent.
    @Test func aRecordsOptionalKeysMayBeAbsent() throws {
        let bare = try #require(Self.foundation(#"{"recordType":"Movie"}"#))
        #expect(bare.fields.isEmpty && UUID(uuidString: bare.recordName) != nil)
        #expect(Self.foundation(#"{"recordType":"Movie"}"#)?.recordName != bare.recordName, "each unnamed record gets its own name")
        let stamped = try #require(Self.foundation(#"{"recordName":"r","recordType":"T","created":{"timestamp":5,"userRecordName":"_u"}}"#))
        #expect(stamped.created == WebServicesTimestamp(timestamp: 5, deviceID: ""))
        // The type is the one key a record cannot do without.
        #expect(Self.foundation(#"{"recordName":"r","fields":{}}"#) == nil)
    }

    /// Lines the fast reader leaves to JSONDecoder (which may read or refuse them).
    @Test func whatItCannotBeSureOfIsLeftToJSONDecoder() {
        let left = [
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":2.0}}}"#,          // JSONDecoder reads 2.0 as an integer
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":1e3}}}"#,
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":9223372036854775808}}}"#, // past 64 bits: a double there
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":1e400}}}"#,
            #"{"recordName":"r","recordName":"s","recordType":"T","fields":{}}"#,            // a key twice
            #"{"recordName":"\u00e9","recordType":"T","fields":{}}"#,                       // \u escapes
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":01}}}"#,
            #"{"recordName":"r","recordType":"T","fields":{"n":{"type":"STRING"}}}"#,       // no value
            #"{"recordName":"r","recordType":"T","fields":{"n":{"value":"x","type":5}}}"#,
            #"{"recordName":"r","recordType":"T","fields":{},"zoneID":{"zoneName":"Z","ownerName":5}}"#,
            #"{"recordName":"r","recordType":"T","fields":{},"created":{"timestamp":1.5,"deviceID":"d"}}"#,
            #"{"recordName":5,"recordType":"T","fields":{}}"#,
            #"{"recordName":"r","recordType":"T","fields":{}} x"#,
            #"{"recordName":"r","recordType":"T","fields":{},}"#,
            #"{"recordName":"r","recordType":"T","fields":{"s":{"value":"a"#,
            "{\"recordName\":\"r\u{1}\",\"recordType\":\"T\",\"fields\":{}}",
            #"[1,2]"#, "", "null",
        ]
        for line in left { #expect(Self.fast(line) == nil, "the fast reader should leave \(line) to JSONDecoder") }
    }

    /// Random lines built from fragments, valid and not: wherever the fast reader answers, JSONDecoder agrees.
    @Test(arguments: 0..<20) func randomLinesAgreeWithJSONDecoder(seed: Int) {
        var rng = SeededGenerator(seed: UInt64(seed))
        let values = [
            "0", "-0", "7", "-12", "1.5", "-0.25", "2.0", "1e2", "1.5e-3", "3E+2", "9223372036854775807", "-9223372036854775808",
            "9223372036854775808", "0.1", "1.0000000000000001", "true", "false", "null", #""""#, #""a\"b""#, #""\\n""#, #""\u0041""#,
            "[]", "[1,\"x\",null]", "{}", #"{"a":1}"#, "01", "1.", ".5", "+1", "tru", #""unterminated"#,
        ]
        let types = ["", #","type":"STRING""#, #","type":"INT64""#, #","type":null"#, #","type":3"#, #","type":"DOUBLE_LIST""#]
        let keys = ["title", "n", "é", "a b", "title"]
        var answered = 0
        for _ in 0..<300 {
            var fields: [String] = []
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let key = keys.randomElement(using: &rng)!
                let value = Bool.random(using: &rng) || fields.isEmpty ? #""value":\#(values.randomElement(using: &rng)!)"# : ""
                fields.append(#""\#(key)":{\#(value)\#(value.isEmpty ? "" : types.randomElement(using: &rng)!)}"#)
            }
            var members = [#""recordName":"r\#(Int.random(in: 0...9, using: &rng))""#, #""recordType":"T""#, #""fields":{\#(fields.joined(separator: ","))}"#]
            if Bool.random(using: &rng) { members.append(#""recordChangeTag":\#(values.randomElement(using: &rng)!)"#) }
            if Int.random(in: 0..<4, using: &rng) == 0 { members.append(#""created":{"timestamp":\#(values.randomElement(using: &rng)!),"deviceID":"d"}"#) }
            if Int.random(in: 0..<4, using: &rng) == 0 { members.removeFirst() }
            members.shuffle(using: &rng)
            let line = "{" + members.joined(separator: Bool.random(using: &rng) ? "," : " , ") + "}"
            if Self.fast(line) != nil { answered += 1 }
            Self.expectAgreement(line)
        }
        #expect(answered > 20, "the fast reader answered for only \(answered) of 300 lines")
    }
}
