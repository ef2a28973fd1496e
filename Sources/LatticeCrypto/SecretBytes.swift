import CSodium

/// Key material held in one place and wiped (`sodium_memzero`) when the last
/// reference to it goes, so a secret does not linger in freed memory. Copies
/// out of it (`withBytes`) are the caller's to wipe.
package final class SecretBytes: @unchecked Sendable, Equatable {
    // Immutable after init; only deinit writes it.
    private var storage: [UInt8]

    /// Takes `bytes` over and wipes the caller's copy.
    package init(taking bytes: inout [UInt8]) {
        storage = bytes
        Sodium.wipe(&bytes)
    }

    package var count: Int { storage.count }

    package func withBytes<T>(_ body: ([UInt8]) throws -> T) rethrows -> T { try body(storage) }

    /// Constant-time comparison.
    package static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        lhs.count == rhs.count && lhs.storage.withUnsafeBytes { a in rhs.storage.withUnsafeBytes { b in sodium_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }

    deinit { Sodium.wipe(&storage) }
}
