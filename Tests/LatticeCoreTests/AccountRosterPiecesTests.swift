@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeTestSupport
import Testing

/// A roster larger than a message travels in pieces, each a roster of its
/// own, taken one by one in the order sent to the roster they came from
/// (issue 38, finding 8).
struct AccountRosterPiecesTests {
    /// Built once: signing thousands of entries takes seconds in a debug build.
    static let large: (founder: Identity, roster: AccountRoster) = {
        let founder = try! Identity.generate()
        var roster = AccountRoster(founder: founder.publicKey)
        try! LargeRoster.grow(&roster, founder: founder)
        return (founder, roster)
    }()

    @Test func aRosterLargerThanAMessageGoesInPiecesTakenOneByOne() throws {
        let (founder, roster) = Self.large
        let encoded = roster.encoded
        #expect(encoded.count > 1 << 20, "the roster (\(encoded.count) bytes) should be larger than a message")
        let pieces = AccountRoster.pieces(of: encoded)
        #expect(pieces.count >= 4 && pieces.allSatisfy { $0.count <= AccountRoster.maximumPieceBytes })
        // Taken one by one, in the order sent, as a store adopts them.
        var merged = AccountRoster(founder: founder.publicKey)
        for piece in pieces { try merged.merge(try AccountRoster.checkedEntries(of: piece).entries) }
        #expect(merged.encoded == encoded)
        #expect(merged.state == roster.state)
        // Whole, in hash order, every entry is taken too (the bounds drop nothing the signer's order took).
        #expect(try AccountRoster(decoding: encoded).state == roster.state)
        // A roster that fits goes whole.
        #expect(AccountRoster.pieces(of: AccountRoster(founder: founder.publicKey).encoded).count == 1)
    }

    @Test func aChangeTravelsAsTheEntriesThePeerWasNotToldAndAnIntroductionFitsWhatTheJoinerNeeds() throws {
        var (founder, roster) = Self.large
        let before = roster.encoded
        #expect(AccountRoster.newPieces(from: before, to: before) == nil)
        let joiner = try Identity.generate()
        let added = try roster.sign(.add(name: "new"), subject: joiner.publicKey, by: founder, at: 9)
        let fresh = try #require(AccountRoster.newPieces(from: before, to: roster.encoded))
        #expect(fresh.count == 1)
        #expect(try AccountRoster.checkedEntries(of: fresh[0]).entries.map(\.hash) == [added.hash])
        // Another account's roster goes whole.
        let other = AccountRoster(founder: try Identity.generate().publicKey).encoded
        #expect(AccountRoster.newPieces(from: before, to: other) == [other])

        // An introduction that must fit 256 KiB keeps the joiner's chain and every removal.
        let fitted = roster.encoded(fitting: 256 * 1024, first: [joiner.publicKey, founder.publicKey])
        #expect(fitted.count <= 256 * 1024)
        let taken = try AccountRoster(decoding: fitted)
        #expect(taken.state.members[joiner.publicKey] != nil)
        #expect(Set(taken.state.removed.keys) == Set(roster.state.removed.keys))
    }
}
