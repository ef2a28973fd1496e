import CSodium

/// Why an encrypted frame was refused: the connection must end.
package enum SecretStreamError: Error, Equatable, Sendable, CustomStringConvertible {
    case badHeader
    /// Modified, replayed, reordered or from another stream: authentication failed.
    case forged
    /// A frame after the final one.
    case afterFinal

    package var description: String {
        switch self {
        case .badHeader: return "the stream header is malformed"
        case .forged: return "a frame failed authentication (modified, replayed, reordered or forged)"
        case .afterFinal: return "a frame arrived after the stream's final frame"
        }
    }
}

/// The sending half of an XChaCha20-Poly1305 secretstream: each frame is
/// encrypted and authenticated under a nonce the stream advances, so the
/// receiver detects a dropped, repeated or reordered frame.
@_spi(Tools) public struct SecretStreamSender: Sendable {
    /// Bytes in `header`: 24 (libsodium's secretstream header).
    public static let headerLength = Int(crypto_secretstream_xchacha20poly1305_HEADERBYTES)
    /// Bytes a sealed frame adds to its plaintext: 17, a tag byte and a 16-byte MAC.
    public static let overhead = Int(crypto_secretstream_xchacha20poly1305_ABYTES)
    private var state = crypto_secretstream_xchacha20poly1305_state()
    /// Sent once, in clear, before the first frame.
    public let header: [UInt8]

    /// A new stream under the 32-byte `key`, with a random `header`; throws `CryptoError.invalidKey` for another size.
    public init(key: [UInt8]) throws {
        try Sodium.ready()
        guard key.count == Int(crypto_secretstream_xchacha20poly1305_KEYBYTES) else { throw CryptoError.invalidKey("a stream key has 32 bytes") }
        var header = [UInt8](repeating: 0, count: Self.headerLength)
        try Sodium.check(crypto_secretstream_xchacha20poly1305_init_push(&state, &header, key), "crypto_secretstream_xchacha20poly1305_init_push")
        self.header = header
    }

    /// Encrypts one frame; `final` marks the orderly end of the stream.
    public mutating func seal(_ plaintext: [UInt8], final: Bool = false) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.overhead)
        let tag = final ? UInt8(crypto_secretstream_xchacha20poly1305_TAG_FINAL) : UInt8(crypto_secretstream_xchacha20poly1305_TAG_MESSAGE)
        try Sodium.check(
            crypto_secretstream_xchacha20poly1305_push(&state, &out, nil, plaintext, UInt64(plaintext.count), nil, 0, tag),
            "crypto_secretstream_xchacha20poly1305_push")
        return out
    }

    /// Zeroes the stream's state (its key): the stream cannot be used after.
    public mutating func wipe() {
        withUnsafeMutableBytes(of: &state) { buffer in sodium_memzero(buffer.baseAddress, buffer.count) }
    }
}

/// The receiving half.
@_spi(Tools) public struct SecretStreamReceiver: Sendable {
    private var state = crypto_secretstream_xchacha20poly1305_state()
    /// Whether the final frame was opened: a frame after it throws `afterFinal`.
    public private(set) var finished = false

    /// The stream the sender's `header` opens under the 32-byte `key`; throws `CryptoError.invalidKey`
    /// for a key of another size, `SecretStreamError.badHeader` for a header that is not one.
    public init(key: [UInt8], header: [UInt8]) throws {
        try Sodium.ready()
        guard key.count == Int(crypto_secretstream_xchacha20poly1305_KEYBYTES) else { throw CryptoError.invalidKey("a stream key has 32 bytes") }
        guard header.count == SecretStreamSender.headerLength,
              crypto_secretstream_xchacha20poly1305_init_pull(&state, header, key) == 0 else { throw SecretStreamError.badHeader }
    }

    /// Decrypts and authenticates one frame; `final` is set on the orderly last one.
    public mutating func open(_ ciphertext: [UInt8]) throws -> (plaintext: [UInt8], final: Bool) {
        guard !finished else { throw SecretStreamError.afterFinal }
        guard ciphertext.count >= SecretStreamSender.overhead else { throw SecretStreamError.forged }
        var out = [UInt8](repeating: 0, count: ciphertext.count - SecretStreamSender.overhead)
        var tag: UInt8 = 0
        guard crypto_secretstream_xchacha20poly1305_pull(&state, &out, nil, &tag, ciphertext, UInt64(ciphertext.count), nil, 0) == 0 else {
            throw SecretStreamError.forged
        }
        finished = tag == UInt8(crypto_secretstream_xchacha20poly1305_TAG_FINAL)
        return (out, finished)
    }

    /// Zeroes the stream's state (its key): the stream cannot be used after.
    public mutating func wipe() {
        withUnsafeMutableBytes(of: &state) { buffer in sodium_memzero(buffer.baseAddress, buffer.count) }
    }

}
