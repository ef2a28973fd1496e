import CSodium

/// A device's ID: the SHA-256 of its public key, in base32 with a check
/// character per 13, grouped by 7 — the form Syncthing made familiar, easy to
/// read aloud and compare, and a typo in it is caught rather than trusted.
@_spi(Tools) public struct DeviceID: Hashable, Sendable, CustomStringConvertible {
    /// SHA-256 of the Ed25519 public key.
    public let digest: [UInt8]
    /// `XXXXXXX-XXXXXXX-…`, eight groups of seven; made once, as logs and the store key peers by it.
    public let description: String

    /// The ID of the device whose Ed25519 public key is `publicKey`; throws if libsodium fails.
    public init(publicKey: [UInt8]) throws {
        try Sodium.ready()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        try Sodium.check(crypto_hash_sha256(&digest, publicKey, UInt64(publicKey.count)), "crypto_hash_sha256")
        self.init(digest: digest)
    }

    /// The device whose public key's SHA-256 is `digest` (32 bytes, as the wire carries it).
    public init(digest: [UInt8]) {
        precondition(digest.count == 32, "a device ID is a 32-byte digest")
        self.digest = digest
        description = Self.printed(digest)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    private static func printed(_ digest: [UInt8]) -> String {
        let plain = base32(digest)
        var withChecks: [Character] = []
        for chunk in stride(from: 0, to: 52, by: 13) {
            let part = Array(plain[chunk..<chunk + 13])
            withChecks += part
            withChecks.append(luhn32(part))
        }
        return stride(from: 0, to: 56, by: 7).map { String(withChecks[$0..<$0 + 7]) }.joined(separator: "-")
    }

    /// Parses the printed form; spaces, dashes and case do not matter, check characters do.
    public init?(_ text: String) {
        let chars = Array(text.uppercased().filter { $0 != "-" && $0 != " " })
        guard chars.count == 56 else { return nil }
        var plain: [Character] = []
        for chunk in stride(from: 0, to: 56, by: 14) {
            let part = Array(chars[chunk..<chunk + 13])
            guard Self.luhn32(part) == chars[chunk + 13] else { return nil }
            plain += part
        }
        guard let digest = Self.unbase32(plain) else { return nil }
        self.init(digest: digest)
    }

    private static func base32(_ bytes: [UInt8]) -> [Character] {
        var out: [Character] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return out
    }

    private static func unbase32(_ chars: [Character]) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for char in chars {
            guard let value = alphabet.firstIndex(of: char) else { return nil }
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return out.count == 32 ? out : nil
    }

    /// Luhn mod 32 check character.
    private static func luhn32(_ chars: [Character]) -> Character {
        var factor = 1
        var sum = 0
        for char in chars {
            let code = alphabet.firstIndex(of: char) ?? 0
            var addend = factor * code
            factor = factor == 2 ? 1 : 2
            addend = addend / 32 + addend % 32
            sum += addend
        }
        return alphabet[(32 - sum % 32) % 32]
    }
}
