@_spi(Tools) import LatticeCrypto

/// One element of a zone's digest set: a key and the hash of what it holds.
/// Records are keyed by their name's UTF-8 bytes; the zone's own state (its
/// causal length and stamp) is the element with the empty key, which no record
/// name can be, so it sorts first.
@_spi(Tools) public struct DigestItem: Hashable, Sendable {
    /// The record name's UTF-8 bytes; empty for the zone's own state.
    public var key: [UInt8]
    /// BLAKE2b-256 of the element's whole state (`RecordState.digestHash`).
    /// It must cover the key too (a record's state holds its name): sums
    /// add hashes alone, so one item moved to another key would not show.
    public var hash: [UInt8]

    /// An item from its key and its full hash (BLAKE2b-256, 32 bytes).
    public init(key: [UInt8], hash: [UInt8]) {
        self.key = key
        self.hash = hash
    }

    /// The item of a record: its name, and the hash of its whole state.
    public init(_ state: RecordState) throws {
        self.init(key: Array(state.recordName.utf8), hash: try state.digestHash())
    }

    /// The item of a zone's own state.
    public init(_ zone: ZoneState) throws {
        self.init(key: [], hash: try zone.digestHash())
    }

    /// The first bytes of the hash: what an item list carries (a collision
    /// of 12 bytes between two states of one record is out of reach).
    public var shortHash: [UInt8] { Array(hash.prefix(DigestFingerprint.shortLength)) }
}

/// Keys compare as their bytes (SQLite's BINARY order, memcmp), not as Swift
/// strings do (Unicode canonical equivalence).
@inline(__always) package func digestKeyPrecedes(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    lhs.lexicographicallyPrecedes(rhs)
}

/// The sum of item hashes, each read as a 256-bit little-endian number,
/// modulo 2^256: adding and removing an item are O(1), and the sum does not
/// depend on the order items were added in.
@_spi(Tools) public struct DigestSum: Hashable, Sendable {
    /// The sum as four 64-bit limbs, least significant first.
    public private(set) var limbs: [UInt64] = [0, 0, 0, 0]
    /// How many items the sum holds: those added less those removed.
    public private(set) var count: Int = 0

    /// The empty sum: zero, over no item.
    public init() {}

    /// A sum as stored; bytes past 32 are ignored and missing ones read as
    /// zero (a damaged table then only makes the digest differ).
    public init(bytes: [UInt8], count: Int) {
        for limb in 0..<4 {
            var value: UInt64 = 0
            for byte in 0..<8 where limb * 8 + byte < bytes.count { value |= UInt64(bytes[limb * 8 + byte]) << (8 * byte) }
            limbs[limb] = value
        }
        self.count = count
    }

    /// The sum as 32 bytes, little-endian: what the store keeps (`init(bytes:count:)` reads it).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for limb in limbs { for byte in 0..<8 { out.append(UInt8(truncatingIfNeeded: limb >> (8 * byte))) } }
        return out
    }

    /// Adds an item by its hash, modulo 2^256: O(1), in any order.
    public mutating func add(_ hash: [UInt8]) {
        let other = DigestSum(bytes: hash, count: 1)
        var carry: UInt64 = 0
        for index in 0..<4 {
            let (partial, overflow1) = limbs[index].addingReportingOverflow(other.limbs[index])
            let (sum, overflow2) = partial.addingReportingOverflow(carry)
            limbs[index] = sum
            carry = (overflow1 ? 1 : 0) + (overflow2 ? 1 : 0)
        }
        count += 1
    }

    /// Takes out an item added before, subtracting its hash modulo 2^256.
    public mutating func remove(_ hash: [UInt8]) {
        let other = DigestSum(bytes: hash, count: 1)
        var borrow: UInt64 = 0
        for index in 0..<4 {
            let (partial, overflow1) = limbs[index].subtractingReportingOverflow(other.limbs[index])
            let (difference, overflow2) = partial.subtractingReportingOverflow(borrow)
            limbs[index] = difference
            borrow = (overflow1 ? 1 : 0) + (overflow2 ? 1 : 0)
        }
        count -= 1
    }

    /// The fingerprint a range holding these items is compared by.
    public var fingerprint: DigestFingerprint { DigestFingerprint(self) }
}

/// What a range of a digest set is compared by: a keyed BLAKE2b of its sum
/// and count, cut short (a sum alone would let items that cancel out pass).
@_spi(Tools) public struct DigestFingerprint: Hashable, Sendable, CustomStringConvertible {
    /// Bytes in a print (`bytes`): BLAKE2b-256 cut short, as sent.
    public static let length = 12
    /// Bytes of an item's hash an item list carries.
    public static let shortLength = 12

    /// The print: `length` bytes as computed, compared as received.
    public var bytes: [UInt8]

    /// A fingerprint as received, taken as is.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// The print of `sum`: BLAKE2b-256 of a tag, the sum and its count, cut to `length` bytes.
    public init(_ sum: DigestSum) {
        var writer = BinaryWriter(capacity: 48)
        writer.raw(Array("lattice digest v1".utf8))
        writer.raw(sum.bytes)
        writer.varint(UInt64(truncatingIfNeeded: sum.count))
        // BLAKE2b cannot fail on bytes in memory once libsodium is up; an all-zero print would only mismatch.
        bytes = Array(((try? ContentHasher.hash(writer.bytes)) ?? [UInt8](repeating: 0, count: 32)).prefix(Self.length))
    }

    public var description: String { bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}

extension RecordState {
    /// BLAKE2b-256 of the record's whole state (fields, conflicts, stamps,
    /// tombstone, vector, ghosts) in a form that does not depend on the store
    /// holding it: replica IDs in full, in the order the state first uses them.
    /// Two replicas hold byte-identical states exactly when these are equal.
    public func digestHash() throws -> [UInt8] {
        var replicas = ReplicaTable()
        let blob = RecordBlob.encode(self, replicas: &replicas)
        var writer = BinaryWriter(capacity: blob.count + 16 * replicas.replicas.count + 24)
        writer.raw(Array("lattice record v1".utf8))
        writer.varint(replicas.replicas.count)
        for replica in replicas.replicas { writer.raw(replica.bytes) }
        writer.raw(blob)
        return try ContentHasher.hash(writer.bytes)
    }
}

extension ZoneState {
    /// BLAKE2b-256 of the zone's causal length and stamp.
    public func digestHash() throws -> [UInt8] {
        var writer = BinaryWriter(capacity: 64)
        writer.raw(Array("lattice zone v1".utf8))
        writer.varint(causalLength)
        writer.raw(RecordBlob.encodeStamp(stamp))
        return try ContentHasher.hash(writer.bytes)
    }
}
