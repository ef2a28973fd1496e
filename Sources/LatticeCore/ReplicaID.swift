@_spi(Tools) import LatticeCrypto

/// The identity of one replica (one device's store) in stamps and version vectors.
///
/// 128 bits taken from the device's public-key fingerprint, so two devices
/// never share one by accident. Ordered lexicographically: the order breaks
/// ties between writes stamped with the same clock reading.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The first 8 of the ID's 16 bytes, big-endian.
    public let high: UInt64
    /// The last 8 of the ID's 16 bytes, big-endian.
    public let low: UInt64

    /// The ID whose 16 bytes are `high` then `low`, each big-endian.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Builds an ID from the first 16 bytes of `bytes` (big-endian).
    public init<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        precondition(bytes.count >= 16, "a replica ID needs 16 bytes")
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.prefix(16).enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(16)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
        return out
    }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    /// 32 lowercase hex digits.
    public var description: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The replica a device writes as: the first 16 bytes of its ID's digest
    /// (both are SHA-256 of its public key, `WriteBlock.replica(of:)`).
    package init(device: DeviceID) { self.init(bytes: Array(device.digest.prefix(16))) }

    /// Parses the 32-hex-digit form printed by `description`.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 32 else { return nil }
        var bytes = [UInt8]()
        for index in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(decoding: utf8[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(bytes: bytes)
    }

    /// Parses exactly the spelling `description` prints (lowercase), as
    /// names that embed a replica need: one replica, one name.
    public init?<Text: StringProtocol>(canonicalHex text: Text) {
        guard let replica = ReplicaID(hex: String(text)), replica.description == text else { return nil }
        self = replica
    }
}
