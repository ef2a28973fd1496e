import CSodium

/// A device's Ed25519 identity. The secret stays in this value and in the
/// store's key file; everything else uses the public key or the device ID.
@_spi(Tools) public struct Identity: Sendable {
    /// Bytes in an Ed25519 seed: what `init(seed:)` takes and the key file stores.
    public static let seedLength = 32
    /// The Ed25519 public key, 32 bytes: what peers check this device's signatures with.
    public let publicKey: [UInt8]
    /// The device's ID: the SHA-256 of `publicKey`.
    public let deviceID: DeviceID
    private let secretKey: SecretBytes

    /// A new identity from the system's entropy.
    public static func generate() throws -> Identity {
        try Sodium.ready()
        var seed = [UInt8](repeating: 0, count: seedLength)
        randombytes_buf(&seed, seedLength) // returns nothing: it cannot fail once sodium_init succeeded
        defer { Sodium.wipe(&seed) }
        return try Identity(seed: seed)
    }

    /// The identity a 32-byte seed determines (what the key file stores).
    public init(seed: [UInt8]) throws {
        try Sodium.ready()
        guard seed.count == Self.seedLength else { throw CryptoError.invalidKey("a seed has \(Self.seedLength) bytes, got \(seed.count)") }
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        defer { Sodium.wipe(&secretKey) }
        try Sodium.check(crypto_sign_seed_keypair(&publicKey, &secretKey, seed), "crypto_sign_seed_keypair")
        self.publicKey = publicKey
        self.secretKey = SecretBytes(taking: &secretKey)
        deviceID = try DeviceID(publicKey: publicKey)
    }

    /// A deterministic identity numbered `n`, for tests, fuzzers and
    /// benchmarks that replay exactly. Never for a store: anyone can derive it.
    public static func numbered(_ n: UInt64) -> Identity {
        var seed = [UInt8](repeating: 0x4C, count: seedLength)
        for index in 0..<8 { seed[index] = UInt8(truncatingIfNeeded: n >> UInt64(8 * index)) }
        // A 32-byte seed always makes a key pair once libsodium is up.
        return try! Identity(seed: seed)
    }

    /// The seed, for the key file: a copy the caller wipes (`Sodium.wipe`) once written.
    public func seed() -> [UInt8] { secretKey.withBytes { Array($0.prefix(Self.seedLength)) } }

    /// The Ed25519 signature of `message`, 64 bytes; throws if libsodium fails.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        try secretKey.withBytes { key in
            try Sodium.check(crypto_sign_detached(&signature, nil, message, UInt64(message.count), key), "crypto_sign_detached")
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`; false for a
    /// signature or key of the wrong size.
    public static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard (try? Sodium.ready()) != nil, signature.count == Int(crypto_sign_BYTES), publicKey.count == Int(crypto_sign_PUBLICKEYBYTES) else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}
