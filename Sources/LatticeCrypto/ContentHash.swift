import CSodium

/// BLAKE2b-256 of content (roster entries, write digests). Streaming, so
/// a large input is hashed without being read into memory at once. Assets
/// are addressed by a hash tree instead (`AssetOutline`).
package final class ContentHasher {
    package static let length = 32
    // libsodium's state is a 64-byte-aligned struct Swift imports as opaque.
    private let state: UnsafeMutableRawPointer

    package init() throws {
        try Sodium.ready()
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        try Sodium.check(crypto_generichash_init(OpaquePointer(state), nil, 0, Self.length), "crypto_generichash_init")
    }

    deinit { state.deallocate() }

    package func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        try Sodium.check(crypto_generichash_update(OpaquePointer(state), base, UInt64(bytes.count)), "crypto_generichash_update")
    }

    package func finish() throws -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.length)
        try Sodium.check(crypto_generichash_final(OpaquePointer(state), &digest, Self.length), "crypto_generichash_final")
        return digest
    }

    /// The hash of bytes in memory, in one call (no state to allocate).
    package static func hash(_ bytes: [UInt8]) throws -> [UInt8] {
        try Sodium.ready()
        var digest = [UInt8](repeating: 0, count: length)
        try Sodium.check(crypto_generichash(&digest, length, bytes, UInt64(bytes.count), nil, 0), "crypto_generichash")
        return digest
    }

    /// SHA-256, the hash a device ID and a replica ID are made from.
    package static func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
        try Sodium.ready()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        try Sodium.check(crypto_hash_sha256(&digest, bytes, UInt64(bytes.count)), "crypto_hash_sha256")
        return digest
    }
}
