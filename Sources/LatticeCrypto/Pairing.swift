import CSodium

/// A pairing code: 8 characters of Crockford's base32 (40 bits), shown as
/// `XXXX-XXXX`. Typing is forgiving: case, spaces and dashes do not matter,
/// and O, I and L read as 0, 1 and 1.
public struct PairingCode: Hashable, Sendable, CustomStringConvertible {
    /// Characters in a code, without the dash.
    public static let length = 8
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    /// The 8 characters, without the dash.
    public let characters: String

    /// A new code from the system's entropy.
    public static func generate() throws -> PairingCode {
        try Sodium.ready()
        var text = ""
        for _ in 0..<length { text.append(alphabet[Int(randombytes_uniform(UInt32(alphabet.count)))]) }
        return PairingCode(normalized: text)
    }

    private init(normalized: String) { characters = normalized }

    /// Parses what a person typed; nil if it is not 8 characters of the alphabet.
    public init?(_ typed: String) {
        var text = ""
        for character in typed.uppercased() where character != "-" && character != " " {
            switch character {
            case "O": text.append("0")
            case "I", "L": text.append("1")
            default:
                guard Self.alphabet.contains(character) else { return nil }
                text.append(character)
            }
        }
        guard text.count == Self.length else { return nil }
        characters = text
    }

    public var description: String { String(characters.prefix(4)) + "-" + String(characters.suffix(4)) }

    /// Two hex digits (8 bits) of a hash of the code, advertised by mDNS with
    /// the offer so a joiner tries the device that offers its code and not
    /// another one on the LAN (each wrong attempt spends a third of a code).
    /// Anyone on the LAN reads it: it leaves 32 unknown bits of the 40.
    public var hint: String {
        var digest = [UInt8](repeating: 0, count: 16)
        let input = Array("lattice pair hint".utf8) + Array(characters.utf8)
        _ = crypto_generichash(&digest, digest.count, input, UInt64(input.count), nil, 0)
        return String(digest[0], radix: 16).count == 1 ? "0" + String(digest[0], radix: 16) : String(digest[0], radix: 16)
    }
}

/// Why a pairing exchange failed on the cryptography's account.
package enum PairingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer's message is not a valid group element (or is the identity).
    case invalidMessage
    /// The peer's confirmation does not match: it used another code (or is an attacker).
    case wrongCode

    package var description: String {
        switch self {
        case .invalidMessage: return "the other device's pairing message is not valid"
        case .wrongCode: return "the code does not match the one the other device shows"
        }
    }
}

/// CPace over ristretto255 (after draft-irtf-cfrg-cpace), from libsodium's
/// primitives: the code and the session's ID are hashed to a generator; each
/// side sends a random multiple of it; both derive the same key only if they
/// used the same code. A party that does not know the code learns nothing
/// from the exchange and gets one guess per exchange (no offline dictionary
/// attack: the shared point depends on the code through the generator).
package struct CPace: Sendable {
    package enum Role: UInt8, Sendable {
        case initiator = 1, responder = 2
    }

    package static let messageLength = Int(crypto_core_ristretto255_BYTES)
    package let role: Role
    /// The message to send: this side's share.
    package let message: [UInt8]
    private let generator: [UInt8]
    private let scalar: SecretBytes
    private let sessionID: [UInt8]

    /// `sessionID`: bytes both sides agreed on before (both sides' nonces),
    /// binding the exchange to this session; `context`: what the keys are for.
    package init(code: PairingCode, sessionID: [UInt8], context: String, role: Role) throws {
        try Sodium.ready()
        self.role = role
        self.sessionID = sessionID
        var input = Array("LatticeCPace255".utf8)
        for part in [Array(code.characters.utf8), sessionID, Array(context.utf8)] {
            input.append(UInt8(truncatingIfNeeded: part.count))
            input += part
        }
        var hash = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_HASHBYTES))
        try Sodium.check(crypto_generichash(&hash, hash.count, input, UInt64(input.count), nil, 0), "crypto_generichash")
        var point = [UInt8](repeating: 0, count: Self.messageLength)
        try Sodium.check(crypto_core_ristretto255_from_hash(&point, hash), "crypto_core_ristretto255_from_hash")
        generator = point
        var secret = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_SCALARBYTES))
        crypto_core_ristretto255_scalar_random(&secret)
        var share = [UInt8](repeating: 0, count: Self.messageLength)
        try Sodium.check(crypto_scalarmult_ristretto255(&share, secret, point), "crypto_scalarmult_ristretto255")
        message = share
        scalar = SecretBytes(taking: &secret)
    }

    /// The keys both sides share once the peer's message is in; the same on
    /// both sides only if they used the same code.
    package func finish(peerMessage: [UInt8]) throws -> PairingKeys {
        guard peerMessage.count == Self.messageLength, crypto_core_ristretto255_is_valid_point(peerMessage) == 1, peerMessage != message else {
            throw PairingError.invalidMessage
        }
        var shared = [UInt8](repeating: 0, count: Self.messageLength)
        let status = scalar.withBytes { crypto_scalarmult_ristretto255(&shared, $0, peerMessage) }
        defer { Sodium.wipe(&shared) }
        guard status == 0 else { throw PairingError.invalidMessage }
        let (initiator, responder) = role == .initiator ? (message, peerMessage) : (peerMessage, message)
        var transcript = Array("LatticeCPaceISK".utf8) + sessionID + initiator + responder
        transcript += shared
        var key = [UInt8](repeating: 0, count: 32)
        try Sodium.check(crypto_generichash(&key, key.count, transcript, UInt64(transcript.count), nil, 0), "crypto_generichash")
        Sodium.wipe(&transcript)
        return PairingKeys(key: SecretBytes(taking: &key), transcript: sessionID + initiator + responder, role: role)
    }
}

/// What a finished CPace exchange gives both sides: confirmations that
/// prove knowledge of the key, a key for what follows, and a short verifier
/// a person can compare on both screens.
package struct PairingKeys: Sendable {
    private let key: SecretBytes
    private let transcript: [UInt8]
    package let role: CPace.Role

    init(key: SecretBytes, transcript: [UInt8], role: CPace.Role) {
        self.key = key
        self.transcript = transcript
        self.role = role
    }

    private func mac(_ label: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let input = Array(label.utf8) + transcript
        key.withBytes { key in
            _ = crypto_generichash(&out, out.count, input, UInt64(input.count), key, key.count)
        }
        return out
    }

    /// What this side sends to prove it holds the key.
    package var confirmation: [UInt8] { mac(role == .initiator ? "confirm initiator" : "confirm responder") }

    /// Checks the peer's confirmation (in constant time).
    package func checkPeerConfirmation(_ tag: [UInt8]) throws {
        let expected = mac(role == .initiator ? "confirm responder" : "confirm initiator")
        guard tag.count == expected.count, sodium_memcmp(tag, expected, expected.count) == 0 else { throw PairingError.wrongCode }
    }

    /// Bytes both sides share and nobody else has: what each side signs with
    /// its identity, binding that identity to this exchange.
    package var binding: [UInt8] { mac("identity binding") }

    /// A 32-byte key for the exchange that follows the confirmation.
    package var sessionKey: [UInt8] { mac("session key") }

    /// Encrypts `plaintext` for the peer: XChaCha20-Poly1305 under the
    /// session key, the nonce naming the sender's role and message number.
    package func seal(_ plaintext: [UInt8], number: UInt8) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        var length: UInt64 = 0
        let key = sessionKey
        try Sodium.check(crypto_aead_xchacha20poly1305_ietf_encrypt(
            &out, &length, plaintext, UInt64(plaintext.count), transcript, UInt64(transcript.count), nil, nonce(role, number), key), "crypto_aead_xchacha20poly1305_ietf_encrypt")
        return out
    }

    /// Decrypts what the peer sealed as its message `number`; wrongCode if it does not open.
    package func open(_ sealed: [UInt8], number: UInt8) throws -> [UInt8] {
        guard sealed.count >= Int(crypto_aead_xchacha20poly1305_ietf_ABYTES) else { throw PairingError.wrongCode }
        var out = [UInt8](repeating: 0, count: sealed.count - Int(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        var length: UInt64 = 0
        let peer: CPace.Role = role == .initiator ? .responder : .initiator
        guard crypto_aead_xchacha20poly1305_ietf_decrypt(
            &out, &length, nil, sealed, UInt64(sealed.count), transcript, UInt64(transcript.count), nonce(peer, number), sessionKey) == 0 else {
            throw PairingError.wrongCode
        }
        return out
    }

    private func nonce(_ sender: CPace.Role, _ number: UInt8) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES))
        nonce[0] = sender.rawValue
        nonce[1] = number
        return nonce
    }

    /// Six digits both screens show: equal exactly when both sides hold the same key.
    package var verifier: String {
        let bytes = mac("verifier")
        let number = (UInt32(bytes[0]) << 16 | UInt32(bytes[1]) << 8 | UInt32(bytes[2])) % 1_000_000
        let digits = String(number)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
