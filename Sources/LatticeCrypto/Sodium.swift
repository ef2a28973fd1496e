import CSodium

/// Why a libsodium operation failed.
package enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    case initializationFailed
    case operationFailed(String)
    case invalidKey(String)

    package var description: String {
        switch self {
        case .initializationFailed: return "libsodium could not initialize (no entropy source?)"
        case .operationFailed(let what): return "libsodium \(what) failed"
        case .invalidKey(let why): return "invalid key: \(why)"
        }
    }
}

/// The one place libsodium is called from: initializes it once and turns
/// return codes into typed errors.
package enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    static func ready() throws {
        guard initialized else { throw CryptoError.initializationFailed }
    }

    /// Every libsodium call that returns a status goes through here.
    static func check(_ code: Int32, _ what: String) throws {
        guard code == 0 else { throw CryptoError.operationFailed(what) }
    }

    /// Overwrites `bytes` with zeros in place, in a way the compiler may not skip.
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
        }
    }
}
