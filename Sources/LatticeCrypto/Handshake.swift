import CSodium

/// Why a handshake failed. Every case ends the connection; none is a crash.
package enum HandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case unsupportedVersion(theirs: ClosedRange<UInt8>, ours: ClosedRange<UInt8>)
    case badSignature
    case unexpectedMessage(String)

    package var description: String {
        switch self {
        case .malformed(let why): return "malformed handshake message: \(why)"
        case .unsupportedVersion(let theirs, let ours):
            return "no common protocol version (they speak \(theirs.lowerBound)–\(theirs.upperBound), we speak \(ours.lowerBound)–\(ours.upperBound))"
        case .badSignature: return "the peer's signature over the handshake does not verify"
        case .unexpectedMessage(let why): return "unexpected handshake message: \(why)"
        }
    }
}

/// What both ends hold after a handshake: the peer's identity, the agreed
/// protocol version, and one key per direction.
package struct HandshakeResult: Sendable {
    package let peerPublicKey: [UInt8]
    package let peerDeviceID: DeviceID
    package let version: UInt8
    package let sendKey: SecretBytes
    package let receiveKey: SecretBytes

    /// Derives the direction keys from the crypto_kx pair and wipes the pair.
    init(peerPublicKey: [UInt8], version: UInt8, kx: inout (send: [UInt8], receive: [UInt8]), transcript: [UInt8], directions: (send: String, receive: String)) throws {
        defer {
            Sodium.wipe(&kx.send)
            Sodium.wipe(&kx.receive)
        }
        self.peerPublicKey = peerPublicKey
        peerDeviceID = try DeviceID(publicKey: peerPublicKey)
        self.version = version
        var send = try Handshake.directionKey(kx.send, transcript: transcript, direction: directions.send)
        var receive = try Handshake.directionKey(kx.receive, transcript: transcript, direction: directions.receive)
        sendKey = SecretBytes(taking: &send)
        receiveKey = SecretBytes(taking: &receive)
    }
}

/// The handshake, a SIGMA-style exchange of three messages over libsodium:
///
///     M1  I → R   "LTHS" · min version · max version · eI
///     M2  R → I   "LTHS" · version · eR · idR · Sign(idR, "R" · H(M1 · M2 without signature))
///     M3  I → R   idI · Sign(idI, "I" · H(M1 · M2 · idI))
///
/// `eI`, `eR` are fresh X25519 keys (crypto_kx); `idI`, `idR` Ed25519
/// identities; H is BLAKE2b-256 with a domain label. Each side signs the
/// transcript including the other's fresh key, so no message can be replayed
/// into another handshake, and the keys of each direction are the crypto_kx
/// session keys hashed with the whole transcript. Ephemeral keys live only in
/// this value: a stolen identity later cannot decrypt a recorded session.
package enum Handshake {
    package static let magic: [UInt8] = Array("LTHS".utf8)
    static let keyLength = Int(crypto_kx_PUBLICKEYBYTES)
    static let signLength = Int(crypto_sign_BYTES)
    static let identityLength = Int(crypto_sign_PUBLICKEYBYTES)
    package static let firstMessageLength = 4 + 2 + keyLength
    package static let secondMessageLength = 4 + 1 + keyLength + identityLength + signLength
    package static let thirdMessageLength = identityLength + signLength
    /// The largest handshake message: a frame decoder may refuse anything bigger before the handshake ends.
    package static let maximumMessageLength = secondMessageLength

    static func transcriptHash(_ parts: [UInt8]...) throws -> [UInt8] {
        let message = Array("lattice handshake transcript v1".utf8) + parts.joined()
        var out = [UInt8](repeating: 0, count: 32)
        try Sodium.check(crypto_generichash(&out, out.count, message, UInt64(message.count), nil, 0), "crypto_generichash")
        return out
    }

    /// A direction's key: the crypto_kx key bound to the transcript and the direction.
    static func directionKey(_ kxKey: [UInt8], transcript: [UInt8], direction: String) throws -> [UInt8] {
        let message = transcript + Array(direction.utf8)
        var out = [UInt8](repeating: 0, count: Int(crypto_secretstream_xchacha20poly1305_KEYBYTES))
        try Sodium.check(crypto_generichash(&out, out.count, message, UInt64(message.count), kxKey, kxKey.count), "crypto_generichash")
        return out
    }

    static func ephemeralKeyPair() throws -> (public: [UInt8], secret: SecretBytes) {
        try Sodium.ready()
        var publicKey = [UInt8](repeating: 0, count: keyLength)
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_kx_SECRETKEYBYTES))
        try Sodium.check(crypto_kx_keypair(&publicKey, &secretKey), "crypto_kx_keypair")
        return (publicKey, SecretBytes(taking: &secretKey))
    }

    /// The crypto_kx session keys, or a malformed-message error for a bad peer key.
    static func sessionKeys(client: Bool, ephemeral: (public: [UInt8], secret: SecretBytes), peerEphemeral: [UInt8]) throws -> (send: [UInt8], receive: [UInt8]) {
        var receive = [UInt8](repeating: 0, count: Int(crypto_kx_SESSIONKEYBYTES))
        var send = [UInt8](repeating: 0, count: Int(crypto_kx_SESSIONKEYBYTES))
        let code = ephemeral.secret.withBytes { secret in
            client
                ? crypto_kx_client_session_keys(&receive, &send, ephemeral.public, secret, peerEphemeral)
                : crypto_kx_server_session_keys(&receive, &send, ephemeral.public, secret, peerEphemeral)
        }
        do {
            try Sodium.check(code, client ? "crypto_kx_client_session_keys" : "crypto_kx_server_session_keys")
        } catch {
            throw HandshakeError.malformed("the peer's ephemeral key is not a valid X25519 key")
        }
        return (send, receive)
    }
}

/// The side that connects.
package struct HandshakeInitiator: Sendable {
    package let identity: Identity
    package let versions: ClosedRange<UInt8>
    private let ephemeral: (public: [UInt8], secret: SecretBytes)
    private var firstMessage: [UInt8] = []

    package init(identity: Identity, versions: ClosedRange<UInt8>) throws {
        self.identity = identity
        self.versions = versions
        ephemeral = try Handshake.ephemeralKeyPair()
    }

    /// M1, the opening message.
    package mutating func start() -> [UInt8] {
        firstMessage = Handshake.magic + [versions.lowerBound, versions.upperBound] + ephemeral.public
        return firstMessage
    }

    /// Reads M2; returns M3 to send and the session.
    package func receive(_ message: [UInt8]) throws -> (reply: [UInt8], result: HandshakeResult) {
        guard !firstMessage.isEmpty else { throw HandshakeError.unexpectedMessage("a reply before the opening message") }
        guard message.count == Handshake.secondMessageLength else {
            throw HandshakeError.malformed("the reply has \(message.count) bytes, expected \(Handshake.secondMessageLength)")
        }
        guard Array(message[0..<4]) == Handshake.magic else { throw HandshakeError.malformed("not a Lattice peer (bad magic)") }
        let version = message[4]
        guard versions.contains(version) else { throw HandshakeError.unsupportedVersion(theirs: version...version, ours: versions) }
        var offset = 5
        func take(_ count: Int) -> [UInt8] {
            defer { offset += count }
            return Array(message[offset..<offset + count])
        }
        let peerEphemeral = take(Handshake.keyLength)
        let peerIdentity = take(Handshake.identityLength)
        let signedPart = Array(message[0..<offset])
        let signature = take(Handshake.signLength)
        let responderTranscript = try Handshake.transcriptHash(firstMessage, signedPart)
        guard Identity.verify(signature, of: Array("R".utf8) + responderTranscript, publicKey: peerIdentity) else { throw HandshakeError.badSignature }

        let transcript = try Handshake.transcriptHash(firstMessage, message, identity.publicKey)
        let reply = identity.publicKey + (try identity.sign(Array("I".utf8) + transcript))
        var keys = try Handshake.sessionKeys(client: true, ephemeral: ephemeral, peerEphemeral: peerEphemeral)
        let final = try Handshake.transcriptHash(firstMessage, message, reply)
        let result = try HandshakeResult(peerPublicKey: peerIdentity, version: version, kx: &keys, transcript: final, directions: ("I->R", "R->I"))
        return (reply, result)
    }
}

/// The side that accepts.
package struct HandshakeResponder: Sendable {
    package let identity: Identity
    package let versions: ClosedRange<UInt8>
    private let ephemeral: (public: [UInt8], secret: SecretBytes)
    private var firstMessage: [UInt8] = []
    private var secondMessage: [UInt8] = []
    private var peerEphemeral: [UInt8] = []

    package init(identity: Identity, versions: ClosedRange<UInt8>) throws {
        self.identity = identity
        self.versions = versions
        ephemeral = try Handshake.ephemeralKeyPair()
    }

    /// Reads M1; returns M2.
    package mutating func receiveOpening(_ message: [UInt8]) throws -> [UInt8] {
        guard firstMessage.isEmpty else { throw HandshakeError.unexpectedMessage("a second opening message") }
        guard message.count == Handshake.firstMessageLength else {
            throw HandshakeError.malformed("the opening message has \(message.count) bytes, expected \(Handshake.firstMessageLength)")
        }
        guard Array(message[0..<4]) == Handshake.magic else { throw HandshakeError.malformed("not a Lattice peer (bad magic)") }
        guard message[4] <= message[5] else { throw HandshakeError.malformed("version range \(message[4])–\(message[5]) is empty") }
        let theirs = message[4]...message[5]
        guard let version = theirs.clamped(to: versions).max(), theirs.overlaps(versions) else {
            throw HandshakeError.unsupportedVersion(theirs: theirs, ours: versions)
        }
        firstMessage = message
        peerEphemeral = Array(message[6...])
        let signedPart = Handshake.magic + [version] + ephemeral.public + identity.publicKey
        let signature = try identity.sign(Array("R".utf8) + (try Handshake.transcriptHash(firstMessage, signedPart)))
        secondMessage = signedPart + signature
        return secondMessage
    }

    /// Reads M3; returns the session.
    package func receiveProof(_ message: [UInt8]) throws -> HandshakeResult {
        guard !secondMessage.isEmpty else { throw HandshakeError.unexpectedMessage("a proof before the opening message") }
        guard message.count == Handshake.thirdMessageLength else {
            throw HandshakeError.malformed("the proof has \(message.count) bytes, expected \(Handshake.thirdMessageLength)")
        }
        let peerIdentity = Array(message[0..<Handshake.identityLength])
        let signature = Array(message[Handshake.identityLength...])
        let transcript = try Handshake.transcriptHash(firstMessage, secondMessage, peerIdentity)
        guard Identity.verify(signature, of: Array("I".utf8) + transcript, publicKey: peerIdentity) else { throw HandshakeError.badSignature }
        var keys = try Handshake.sessionKeys(client: false, ephemeral: ephemeral, peerEphemeral: peerEphemeral)
        let final = try Handshake.transcriptHash(firstMessage, secondMessage, message)
        return try HandshakeResult(peerPublicKey: peerIdentity, version: secondMessage[4], kx: &keys, transcript: final, directions: ("R->I", "I->R"))
    }
}
