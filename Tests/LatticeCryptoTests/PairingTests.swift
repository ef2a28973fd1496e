@_spi(Tools) import LatticeCrypto
import Testing

/// The pairing exchange's cryptography alone: CPace over ristretto255 and the code's form.
@Suite struct PairingTests {
    let session = Array("nonce-of-initiator+nonce-of-responder".utf8)

    func exchange(_ initiatorCode: PairingCode, _ responderCode: PairingCode) throws -> (PairingKeys, PairingKeys) {
        let initiator = try CPace(code: initiatorCode, sessionID: session, context: "lattice pair", role: .initiator)
        let responder = try CPace(code: responderCode, sessionID: session, context: "lattice pair", role: .responder)
        return (try initiator.finish(peerMessage: responder.message), try responder.finish(peerMessage: initiator.message))
    }

    @Test func theSameCodeGivesBothSidesTheSameKeysAndVerifier() throws {
        let code = try PairingCode.generate()
        let (a, b) = try exchange(code, code)
        try a.checkPeerConfirmation(b.confirmation)
        try b.checkPeerConfirmation(a.confirmation)
        #expect(a.sessionKey == b.sessionKey)
        #expect(a.verifier == b.verifier && a.verifier.count == 6)
        #expect(a.confirmation != b.confirmation, "each side's confirmation is its own: one cannot be reflected as the other")
    }

    @Test func aWrongCodeFailsTheConfirmationOnBothSides() throws {
        let code = try PairingCode.generate()
        var other = try PairingCode.generate()
        while other == code { other = try PairingCode.generate() }
        let (a, b) = try exchange(code, other)
        #expect(throws: PairingError.wrongCode) { try a.checkPeerConfirmation(b.confirmation) }
        #expect(throws: PairingError.wrongCode) { try b.checkPeerConfirmation(a.confirmation) }
        #expect(a.sessionKey != b.sessionKey)
    }

    @Test func aMessageThatIsNoGroupElementIsRefused() throws {
        let side = try CPace(code: try PairingCode.generate(), sessionID: session, context: "lattice pair", role: .initiator)
        #expect(throws: PairingError.invalidMessage) { _ = try side.finish(peerMessage: [UInt8](repeating: 0, count: CPace.messageLength)) }
        #expect(throws: PairingError.invalidMessage) { _ = try side.finish(peerMessage: [UInt8](repeating: 0xFF, count: CPace.messageLength)) }
        #expect(throws: PairingError.invalidMessage) { _ = try side.finish(peerMessage: [1, 2, 3]) }
        // Its own message reflected back is refused too.
        #expect(throws: PairingError.invalidMessage) { _ = try side.finish(peerMessage: side.message) }
    }

    @Test func codesAreEightCharactersAndForgivingToType() throws {
        let code = try PairingCode.generate()
        #expect(code.characters.count == 8 && code.description.count == 9)
        #expect(PairingCode(code.description.lowercased()) == code)
        #expect(PairingCode("ab12 cd34") == PairingCode("AB12-CD34"))
        #expect(PairingCode("OIL0-0000") == PairingCode("0110-0000"))
        #expect(PairingCode("ABC") == nil && PairingCode("ABCD-EFGU") == nil && PairingCode("ABCD-EFGH-J") == nil)
        let many = try (0..<200).map { _ in try PairingCode.generate() }
        #expect(Set(many).count == 200)
    }
}
