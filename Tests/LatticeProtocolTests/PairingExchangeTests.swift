@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Testing

/// The pairing exchange driven without sockets: messages go through their
/// wire form between an inviter and a joiner (and, in some tests, an attacker).
@Suite struct PairingExchangeTests {
    let inviterIdentity = Identity.numbered(1)
    let joinerIdentity = Identity.numbered(2)

    /// Runs the exchange, delivering each message through bytes; returns what each side ended with.
    func run(inviterCode: PairingCode, joinerCode: PairingCode, container: String = "default", joinerContainer: String? = nil,
             tamper: (PairingMessage) -> PairingMessage = { $0 }) throws -> (inviter: [PairingAction], joiner: [PairingAction]) {
        var inviter = PairingInviter(code: inviterCode, identity: inviterIdentity, name: "laptop", container: container, extra: { _ in [7, 7] })
        var joiner = try PairingJoiner(code: joinerCode, identity: joinerIdentity, name: "phone", container: joinerContainer ?? container)
        var inviterEnd: [PairingAction] = []
        var joinerEnd: [PairingAction] = []
        var toInviter = [joiner.start]
        var toJoiner: [PairingMessage] = []
        while !toInviter.isEmpty || !toJoiner.isEmpty {
            for message in toInviter {
                for action in inviter.receive(try PairingMessage(bytes: tamper(message).bytes)) {
                    if case .send(let reply) = action { toJoiner.append(reply) } else { inviterEnd.append(action) }
                }
            }
            toInviter = []
            for message in toJoiner {
                for action in joiner.receive(try PairingMessage(bytes: tamper(message).bytes)) {
                    if case .send(let reply) = action { toInviter.append(reply) } else { joinerEnd.append(action) }
                }
            }
            toJoiner = []
        }
        return (inviterEnd, joinerEnd)
    }

    @Test func theRightCodePairsBothSidesWithEachOthersKeysAndOneVerifier() throws {
        let code = try PairingCode.generate()
        let (inviter, joiner) = try run(inviterCode: code, joinerCode: code)
        guard case .paired(let invited)? = inviter.first, case .paired(let joined)? = joiner.first else {
            Issue.record("not paired: \(inviter) \(joiner)")
            return
        }
        #expect(invited.deviceID == joinerIdentity.deviceID && invited.peer.name == "phone")
        #expect(joined.deviceID == inviterIdentity.deviceID && joined.peer.name == "laptop" && joined.peer.extra == [7, 7])
        #expect(invited.verifier == joined.verifier)
    }

    @Test func aWrongCodeFailsOnBothSidesAndRevealsNoIdentity() throws {
        let code = try PairingCode.generate()
        var other = try PairingCode.generate()
        while other == code { other = try PairingCode.generate() }
        var seen: [PairingMessage] = []
        let (inviter, joiner) = try run(inviterCode: code, joinerCode: other) { message in
            seen.append(message)
            return message
        }
        #expect(joiner == [.failed(.wrongCode)])
        #expect(inviter == [.failed(.refusedByPeer(PairingFailure.wrongCode.description))] || inviter == [.failed(.wrongCode)])
        // No introduction went out: the joiner stopped at the inviter's confirmation.
        #expect(!seen.contains { if case .joinerIntroduction = $0 { true } else if case .inviterIntroduction = $0 { true } else { false } })
    }

    @Test func anotherContainerIsRefused() throws {
        let code = try PairingCode.generate()
        let (inviter, joiner) = try run(inviterCode: code, joinerCode: code, container: "a", joinerContainer: "b")
        #expect(inviter == [.failed(.containerMismatch(peer: "b", local: "a"))])
        if case .failed(.refusedByPeer)? = joiner.first {} else { Issue.record("joiner: \(joiner)") }
    }

    /// An attacker in the middle who does not know the code replaces the
    /// shares with its own: it has one guess, and a wrong one ends the exchange.
    @Test func anAttackerInTheMiddleWithoutTheCodeCannotPair() throws {
        let code = try PairingCode.generate()
        var guess = try PairingCode.generate()
        while guess == code { guess = try PairingCode.generate() }
        let attacker = try CPace(code: guess, sessionID: [UInt8](repeating: 9, count: 16), context: "lattice pair", role: .initiator)
        let (inviter, joiner) = try run(inviterCode: code, joinerCode: code) { message in
            switch message {
            case .join(let nonce, let container, _): return .join(nonce: nonce, container: container, share: attacker.message)
            case .accept(_, let confirmation): return .accept(share: attacker.message, confirmation: confirmation)
            default: return message
            }
        }
        #expect(!inviter.contains { if case .paired = $0 { true } else { false } })
        #expect(!joiner.contains { if case .paired = $0 { true } else { false } })
    }

    /// Relaying the messages unchanged lets the two devices pair, and the
    /// relay learns no identity: the introductions are sealed.
    @Test func aRelayThatPassesMessagesOnLearnsNoIdentity() throws {
        let code = try PairingCode.generate()
        var wire: [UInt8] = []
        let (inviter, joiner) = try run(inviterCode: code, joinerCode: code) { message in
            wire += message.bytes
            return message
        }
        #expect(inviter.count == 1 && joiner.count == 1)
        for key in [inviterIdentity.publicKey, joinerIdentity.publicKey] {
            #expect(!wire.indices.dropLast(key.count).contains { Array(wire[$0..<$0 + key.count]) == key })
        }
        #expect(!String(decoding: wire, as: UTF8.self).contains("laptop") && !String(decoding: wire, as: UTF8.self).contains("phone"))
    }

    @Test func aTamperedIntroductionIsRefused() throws {
        let code = try PairingCode.generate()
        let (inviter, _) = try run(inviterCode: code, joinerCode: code) { message in
            guard case .joinerIntroduction(let confirmation, var sealed) = message else { return message }
            sealed[sealed.count / 2] ^= 1
            return .joinerIntroduction(confirmation: confirmation, sealed: sealed)
        }
        if case .failed(.malformed)? = inviter.first {} else { Issue.record("inviter: \(inviter)") }
    }

    @Test func anOfferExpiresAndIsSpentByWrongAttempts() throws {
        var offer = PairingOffer(code: try PairingCode.generate(), now: 1_000)
        #expect(offer.refusal(now: 1_000 + PairingOffer.defaultLifetimeMilliseconds - 1) == nil)
        #expect(offer.refusal(now: 1_000 + PairingOffer.defaultLifetimeMilliseconds) == .expired)
        for _ in 0..<PairingOffer.defaultMaximumFailures { offer.recordFailure() }
        #expect(offer.refusal(now: 1_001) == .tooManyAttempts)
    }

    @Test func malformedMessagesAreErrorsNotCrashes() throws {
        var generator = SystemRandomNumberGenerator()
        let valid = try PairingJoiner(code: try PairingCode.generate(), identity: joinerIdentity, name: "x", container: "default").start.bytes
        for length in 0..<valid.count { _ = try? PairingMessage(bytes: Array(valid.prefix(length))) }
        for _ in 0..<2_000 {
            var bytes = valid
            bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            _ = try? PairingMessage(bytes: bytes)
        }
        #expect(throws: ProtocolError.self) { _ = try PairingMessage(bytes: [UInt8](repeating: 0, count: 10)) }
        #expect(throws: ProtocolError.self) { _ = try PairingMessage(bytes: valid + [0]) }
    }
}
