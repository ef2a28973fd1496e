import Foundation
@testable import Lattice
@_spi(Tools) import LatticeCore
import Testing

/// Tokens and cursors are passed to the CLI as arguments by scripts; one that
/// started with `-` read as an option (a CI run failed on a random store ID).
@Suite struct PrintedTokenTests {
    @Test func printedTokensNeverStartWithADashAndRoundTrip() throws {
        // Every value of the first byte, so every possible first character.
        for first in UInt8.min...UInt8.max {
            let storeID = [first] + [UInt8](repeating: 0xFB, count: 15)
            let token = ChangeToken(storeID: storeID, zone: ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies")), zoneIncarnation: 1, sequence: 300)
            let printed = token.description
            #expect(!printed.hasPrefix("-"), "\(printed)")
            #expect(printed.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") }, "\(printed)")
            #expect(try ChangeToken(stringValue: printed) == token)
        }
    }

    @Test func tokensPrintedByEarlierVersionsStillRead() throws {
        let token = ChangeToken(storeID: [0xFB] + [UInt8](repeating: 0xEF, count: 15), zone: ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies")), zoneIncarnation: 2, sequence: 7)
        let earlier = token.description.replacingOccurrences(of: ".", with: "-")
        #expect(earlier.hasPrefix("-"))
        #expect(try ChangeToken(stringValue: earlier) == token)
    }
}
