@_spi(Tools) import LatticeCrypto
import Testing

@Suite struct HandshakeTests {
    let alice = try! Identity.generate()
    let bob = try! Identity.generate()

    /// Runs a whole handshake, letting `tamper` change each message on the way.
    func run(
        initiatorVersions: ClosedRange<UInt8> = 1...1, responderVersions: ClosedRange<UInt8> = 1...1,
        tamper: (Int, inout [UInt8]) -> Void = { _, _ in }
    ) throws -> (HandshakeResult, HandshakeResult) {
        var initiator = try HandshakeInitiator(identity: alice, versions: initiatorVersions)
        var responder = try HandshakeResponder(identity: bob, versions: responderVersions)
        var first = initiator.start()
        tamper(1, &first)
        var second = try responder.receiveOpening(first)
        tamper(2, &second)
        var (third, initiatorResult) = try initiator.receive(second)
        tamper(3, &third)
        let responderResult = try responder.receiveProof(third)
        return (initiatorResult, responderResult)
    }

    @Test func bothSidesAgreeOnKeysAndIdentities() throws {
        let (i, r) = try run()
        #expect(i.sendKey == r.receiveKey)
        #expect(i.receiveKey == r.sendKey)
        #expect(i.sendKey != i.receiveKey)
        #expect(i.peerDeviceID == bob.deviceID)
        #expect(r.peerDeviceID == alice.deviceID)
        #expect(i.version == 1 && r.version == 1)
    }

    @Test func freshKeysEverySession() throws {
        let (first, _) = try run()
        let (second, _) = try run()
        #expect(first.sendKey != second.sendKey)
    }

    @Test func theHighestCommonVersionIsChosen() throws {
        let (i, r) = try run(initiatorVersions: 1...3, responderVersions: 2...5)
        #expect(i.version == 3 && r.version == 3)
    }

    @Test func noCommonVersionIsRefused() throws {
        #expect(throws: HandshakeError.unsupportedVersion(theirs: 2...3, ours: 1...1)) {
            _ = try run(initiatorVersions: 2...3, responderVersions: 1...1)
        }
    }

    @Test func aTamperedResponderSignatureFails() throws {
        #expect(throws: HandshakeError.badSignature) { _ = try run { step, bytes in if step == 2 { bytes[bytes.count - 1] ^= 1 } } }
    }

    @Test func aSwappedResponderEphemeralKeyFails() throws {
        #expect(throws: HandshakeError.badSignature) { _ = try run { step, bytes in if step == 2 { bytes[10] ^= 0x40 } } }
    }

    @Test func aTamperedInitiatorProofFails() throws {
        #expect(throws: HandshakeError.badSignature) { _ = try run { step, bytes in if step == 3 { bytes[40] ^= 1 } } }
    }

    @Test func aProofReplayedFromAnotherSessionFails() throws {
        var recorded: [UInt8] = []
        _ = try run { step, bytes in if step == 3 { recorded = bytes } }
        #expect(throws: HandshakeError.badSignature) { _ = try run { step, bytes in if step == 3 { bytes = recorded } } }
    }

    @Test func anotherIdentityCannotSignForTheResponder() throws {
        // Mallory answers with Bob's public key but her own signature.
        let mallory = try Identity.generate()
        var initiator = try HandshakeInitiator(identity: alice, versions: 1...1)
        var responder = try HandshakeResponder(identity: mallory, versions: 1...1)
        var second = try responder.receiveOpening(initiator.start())
        second.replaceSubrange(37..<69, with: bob.publicKey)
        #expect(throws: HandshakeError.badSignature) { _ = try initiator.receive(second) }
    }

    @Test func malformedMessagesAreRefused() throws {
        var responder = try HandshakeResponder(identity: bob, versions: 1...1)
        #expect(throws: HandshakeError.self) { _ = try responder.receiveOpening([1, 2, 3]) }
        #expect(throws: HandshakeError.self) { _ = try responder.receiveOpening([UInt8](repeating: 0, count: Handshake.firstMessageLength)) }
        #expect(throws: HandshakeError.self) { _ = try responder.receiveProof([UInt8](repeating: 0, count: Handshake.thirdMessageLength)) }
    }
}

@Suite struct SecretStreamTests {
    let key = [UInt8](repeating: 7, count: 32)

    func pair() throws -> (SecretStreamSender, SecretStreamReceiver) {
        let sender = try SecretStreamSender(key: key)
        return (sender, try SecretStreamReceiver(key: key, header: sender.header))
    }

    @Test func framesRoundTripAndTheFinalOneIsMarked() throws {
        var (sender, receiver) = try pair()
        for text in ["one", "", "three"] {
            let opened = try receiver.open(try sender.seal(Array(text.utf8)))
            #expect(opened.plaintext == Array(text.utf8) && !opened.final)
        }
        #expect(try receiver.open(try sender.seal([], final: true)).final)
        #expect(throws: SecretStreamError.afterFinal) { _ = try receiver.open(try sender.seal([1])) }
    }

    @Test func aModifiedFrameFails() throws {
        var (sender, receiver) = try pair()
        var frame = try sender.seal(Array("secret".utf8))
        frame[3] ^= 1
        #expect(throws: SecretStreamError.forged) { _ = try receiver.open(frame) }
    }

    @Test func aReplayedFrameFails() throws {
        var (sender, receiver) = try pair()
        let frame = try sender.seal([1, 2, 3])
        _ = try receiver.open(frame)
        #expect(throws: SecretStreamError.forged) { _ = try receiver.open(frame) }
    }

    @Test func reorderedFramesFail() throws {
        var (sender, receiver) = try pair()
        let first = try sender.seal([1])
        let second = try sender.seal([2])
        _ = first
        #expect(throws: SecretStreamError.forged) { _ = try receiver.open(second) }
    }

    @Test func anotherKeyFails() throws {
        var sender = try SecretStreamSender(key: key)
        var receiver = try SecretStreamReceiver(key: [UInt8](repeating: 8, count: 32), header: sender.header)
        #expect(throws: SecretStreamError.forged) { _ = try receiver.open(try sender.seal([1])) }
    }

    @Test func ciphertextHidesThePlaintext() throws {
        var (sender, _) = try pair()
        let plaintext = Array("a very recognisable plaintext".utf8)
        let frame = try sender.seal(plaintext)
        #expect(!frame.indices.dropLast(plaintext.count).contains { Array(frame[$0..<$0 + plaintext.count]) == plaintext })
    }
}
