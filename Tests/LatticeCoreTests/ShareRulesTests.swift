@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeTestSupport
import Testing

/// Memberships (a device's proof of its account) and a share's permission
/// history as values: what any replica can check alone.
@Suite struct ShareRulesTests {
    let founder = Identity.numbered(1)
    let laptop = Identity.numbered(2)
    let phone = Identity.numbered(3)
    let stranger = Identity.numbered(4)

    func roster() throws -> AccountRoster {
        var roster = AccountRoster(founder: founder.publicKey)
        try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        try roster.sign(.add(name: "phone"), subject: phone.publicKey, by: laptop, at: 2)
        return roster
    }

    @Test func aMembershipChainsFromTheFounderAndIsCheckedAlone() throws {
        let roster = try roster()
        let proof = try #require(AccountMembership(of: phone.publicKey, in: roster))
        #expect(proof.entries.count == 2)
        let decoded = try AccountMembership(decoding: proof.encoded)
        #expect(decoded.member == phone.publicKey && decoded.account == founder.publicKey)
        #expect(decoded.accountID == (try DeviceID(publicKey: founder.publicKey)).description)
        #expect(try AccountMembership(decoding: #require(AccountMembership(of: founder.publicKey, in: roster)).encoded).member == founder.publicKey)
        #expect(AccountMembership(of: stranger.publicKey, in: roster) == nil)
    }

    @Test func aBrokenOrForgedChainIsRefused() throws {
        let roster = try roster()
        let proof = try #require(AccountMembership(of: phone.publicKey, in: roster))
        var tampered = proof.encoded
        tampered[tampered.count - 1] ^= 1
        #expect(throws: RosterError.self) { try AccountMembership(decoding: tampered) }
        // The laptop's entry alone: it is signed by the founder, but the chain must begin there too.
        var skipping = BinaryWriter()
        skipping.raw(founder.publicKey)
        skipping.varint(1)
        skipping.blob(proof.entries[1].bytes)
        #expect(throws: RosterError.unknownAuthor) { try AccountMembership(decoding: skipping.bytes) }
        // A stranger signing itself into the account.
        let forged = try RosterEntry(account: founder.publicKey, subject: stranger.publicKey, action: .add(name: "me"), time: 3, parents: [], by: stranger)
        var selfMade = BinaryWriter()
        selfMade.raw(founder.publicKey)
        selfMade.varint(1)
        selfMade.blob(forged.bytes)
        #expect(throws: RosterError.unknownAuthor) { try AccountMembership(decoding: selfMade.bytes) }
        #expect(throws: RosterError.self) { try AccountMembership(decoding: Array(proof.encoded.prefix(40))) }
    }

    @Test func aPermissionIsTheOneItsHolderHadAtTheWritesTime() {
        let field = Share.field(of: "ABCDEFG-HIJKLMN-OPQRSTU-VWXYZ23-4567ABC-DEFGHIJ-KLMNOPQ-RSTUVWX")
        var text = Share.appending(.readOnly, at: HLCTimestamp(rawValue: 10), to: nil)
        text = Share.appending(.readWrite, at: HLCTimestamp(rawValue: 20), to: text)
        text = Share.appending(.removed, at: HLCTimestamp(rawValue: 30), to: text)
        let owner = Identity.numbered(9)
        let stamp = Stamp(time: HLCTimestamp(rawValue: 31), replica: (try? WriteBlock.replica(of: owner.publicKey))!)
        let state = LocalWrite.save(previous: nil, recordName: Share.recordName, recordType: Share.recordType,
                                    changes: [(field, .string(text))], replacement: .changedKeys, stamp: stamp)
        let share = try! #require(Share(state, owner: "OWNER"))
        let account = "ABCDEFG-HIJKLMN-OPQRSTU-VWXYZ23-4567ABC-DEFGHIJ-KLMNOPQ-RSTUVWX"
        #expect(share.permission(of: account, at: HLCTimestamp(rawValue: 5)) == nil)
        #expect(share.permission(of: account, at: HLCTimestamp(rawValue: 15)) == .readOnly)
        #expect(share.permission(of: account, at: HLCTimestamp(rawValue: 25)) == .readWrite)
        #expect(share.permission(of: account, at: HLCTimestamp(rawValue: 35)) == .removed)
        #expect(share.currentParticipants.isEmpty && !share.admits([account]) && share.admits(["OWNER"]))
    }
}
