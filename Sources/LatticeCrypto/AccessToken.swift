import CSodium

/// The cryptography of a bearer secret for a node's HTTP surface: random
/// bytes to make one, the BLAKE2b hash the store keeps instead of it (a copy
/// of the store hands out no access), and a comparison in constant time.
package enum AccessToken {
    /// `count` bytes from the system's entropy.
    package static func randomBytes(_ count: Int) throws -> [UInt8] {
        try Sodium.ready()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, bytes.count)
        return bytes
    }

    /// The hash kept of a token (32 bytes of BLAKE2b).
    package static func hash(_ token: String) -> [UInt8] {
        let input = Array(token.utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&digest, digest.count, input, UInt64(input.count), nil, 0)
        return digest
    }

    /// Whether two hashes are equal, in time that does not depend on where they differ.
    package static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        lhs.count == rhs.count && lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
