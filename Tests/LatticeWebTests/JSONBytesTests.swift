import Foundation
import Lattice
import LatticeTestSupport
@testable import LatticeWeb
import Testing

/// Responses write records with `JSONBytes`, not `JSONEncoder`: on random
/// records of every shape (strings with quotes, controls and Unicode, large
/// and small numbers, nested values, optional keys absent), the bytes are
/// the ones the server's `JSONEncoder` writes.
@Suite struct JSONBytesTests {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    static func string(_ rng: inout SeededGenerator) -> String {
        let pieces = ["a", "Toy Story", "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{c}", "\u{1}", "\u{1f}", "\u{7f}", "é", "日本", "🎬", " ", "", "\u{2028}"]
        return (0..<Int.random(in: 0...5, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
    }

    static func value(_ rng: inout SeededGenerator, depth: Int = 0) -> WebServicesValue {
        switch Int.random(in: 0..<(depth < 2 ? 8 : 6), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .integer([0, -1, 42, Int64.max, Int64.min, 1_700_000_000_000].randomElement(using: &rng)!)
        case 3: return .number([0.5, -2.25, 8.3, 1e-7, 123456.789, 1.0e21, 3.0, -0.0].randomElement(using: &rng)!)
        case 4, 5: return .string(string(&rng))
        case 6: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default:
            var members: [String: WebServicesValue] = [:]
            for _ in 0..<Int.random(in: 0...3, using: &rng) { members[string(&rng)] = value(&rng, depth: depth + 1) }
            return .object(members)
        }
    }

    static func record(_ rng: inout SeededGenerator) -> WebServicesRecord {
        var fields: [String: WebServicesField] = [:]
        for _ in 0..<Int.random(in: 0...6, using: &rng) {
            fields[string(&rng)] = WebServicesField(value: value(&rng), type: Bool.random(using: &rng) ? ["STRING", "INT64", "DOUBLE_LIST"].randomElement(using: &rng)! : nil)
        }
        var record = WebServicesRecord(recordName: string(&rng), recordType: string(&rng), fields: fields,
                                       recordChangeTag: Bool.random(using: &rng) ? string(&rng) : nil,
                                       zoneID: Bool.random(using: &rng) ? Zone.ID(zoneName: string(&rng), ownerName: string(&rng)) : nil)
        if Bool.random(using: &rng) { record.created = WebServicesTimestamp(timestamp: Int64.random(in: 0...Int64.max, using: &rng), deviceID: string(&rng)) }
        if Bool.random(using: &rng) { record.modified = WebServicesTimestamp(timestamp: -5, deviceID: string(&rng)) }
        return record
    }

    @Test(arguments: 0..<40) func aRecordIsWrittenAsJSONEncoderWritesIt(seed: Int) throws {
        var rng = SeededGenerator(seed: UInt64(seed) &* 7919 &+ 1)
        for _ in 0..<25 {
            let record = Self.record(&rng)
            var json = JSONBytes()
            json.record(record)
            let expected = Array(try Self.encoder().encode(record))
            #expect(json.bytes == expected, "\(String(decoding: json.bytes, as: UTF8.self))\nJSONEncoder: \(String(decoding: expected, as: UTF8.self))")
        }
    }

    @Test func aQueryPageIsWrittenAsJSONEncoderWritesIt() throws {
        var rng = SeededGenerator(seed: 5)
        let records = (0..<10).map { _ in Self.record(&rng) }
        let response = WebResponse.records(records.map { .record($0) }, before: { json in
            json.key("continuationMarker", first: true)
            json.string("AWIBAQ")
            json.raw(",")
        })
        guard case .whole(_, _, let body, _) = response else { Issue.record("not a whole response"); return }
        let expected = Array(try Self.encoder().encode(WebServicesQueryResponse(records: records, continuationMarker: "AWIBAQ")))
        #expect(body == expected)
    }
}
