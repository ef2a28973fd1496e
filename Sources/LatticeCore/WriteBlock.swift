@_spi(Tools) import LatticeCrypto

/// What one replica signed for one zone: the digests of a run of its writes
/// (`WriteDigest`), in stamp order, up to `last`.
///
/// Each commit seals a block per zone it wrote to, and its `last` is the
/// replica's entry in the zone's vector after the commit, so a block is also
/// the replica's signed head: a claim that a peer holds a replica's writes up
/// to `last` is bounded by it. The signature covers the zone, the replica's
/// key, `last`, the entry count and a hash of the entries; a relay can send
/// the signature with the entry hash alone (a head) when the receiver needs
/// no entry of it.
@_spi(Tools) public struct WriteBlock: Hashable, Sendable {
    /// One write the block signs: its stamp time and its digest.
    public struct Entry: Hashable, Sendable {
        /// The write's stamp time; the block's replica made it.
        public var time: HLCTimestamp
        /// The write's digest (`WriteDigest`), 32 bytes.
        public var digest: [UInt8]

        /// An entry for the write at `time`, signing its digest.
        public init(time: HLCTimestamp, digest: [UInt8]) {
            self.time = time
            self.digest = digest
        }
    }

    /// The most entries one block holds: a commit of more writes seals several blocks.
    public static let maximumEntries = 256
    /// How far small commits extend one block: a block that grew this way is
    /// re-signed and re-sent whole at each commit, so it stays short, while a
    /// commit of many writes fills blocks of `maximumEntries`.
    public static let maximumRollingEntries = maximumEntries / rollingFraction
    /// What part of a full block a rolling one grows to.
    public static let rollingFraction = 8
    /// Bytes in an Ed25519 signature.
    public static let signatureLength = 64
    /// Bytes in an Ed25519 public key.
    public static let publicKeyLength = 32

    /// The zone the writes were made in; the signature covers it.
    public var zone: ZoneKey
    /// The writer's Ed25519 public key, `publicKeyLength` bytes.
    public var publicKey: [UInt8]
    /// The replica `publicKey` writes as (`replica(of:)`).
    public var replica: ReplicaID
    /// The replica's entry in the zone's vector after the sealing commit; no entry is later.
    public var last: HLCTimestamp
    /// How many entries the block signs; known for a head too.
    public var count: Int
    /// BLAKE2b-256 of the entries' times and digests: what the signature covers of them.
    public var entriesHash: [UInt8]
    /// The Ed25519 signature (`signatureLength` bytes) of the zone, the key, `last`, `count`
    /// and `entriesHash`.
    public var signature: [UInt8]
    /// The entries, or nil for a head.
    public var entries: [Entry]?

    /// The replica a public key writes as: the first 16 bytes of its SHA-256,
    /// as the device ID is its whole SHA-256.
    public static func replica(of publicKey: [UInt8]) throws -> ReplicaID {
        guard publicKey.count == publicKeyLength else { throw CryptoError.invalidKey("an Ed25519 public key has \(publicKeyLength) bytes") }
        return ReplicaID(bytes: try ContentHasher.sha256(publicKey))
    }

    /// Signs `entries` (sorted by time, all at or before `last`) as `identity`.
    public static func seal(_ entries: [Entry], last: HLCTimestamp, in zone: ZoneKey, by identity: Identity) throws -> WriteBlock {
        var block = WriteBlock(
            zone: zone, publicKey: identity.publicKey, replica: try replica(of: identity.publicKey), last: last,
            count: entries.count, entriesHash: hash(of: entries), signature: [], entries: entries)
        block.signature = try identity.sign(block.signedMessage)
        return block
    }

    /// A block as read: `entries` nil for a head. Check it with `verified()`.
    public init(zone: ZoneKey, publicKey: [UInt8], replica: ReplicaID, last: HLCTimestamp, count: Int, entriesHash: [UInt8], signature: [UInt8], entries: [Entry]?) {
        self.zone = zone
        self.publicKey = publicKey
        self.replica = replica
        self.last = last
        self.count = count
        self.entriesHash = entriesHash
        self.signature = signature
        self.entries = entries
    }

    /// A whole block as read from a peer: its replica and entry hash follow
    /// from the key and the entries. Check it with `isSignatureValid`.
    public init(zone: ZoneKey, publicKey: [UInt8], last: HLCTimestamp, entries: [Entry], signature: [UInt8]) throws {
        self.init(zone: zone, publicKey: publicKey, replica: try Self.replica(of: publicKey), last: last, count: entries.count,
                  entriesHash: Self.hash(of: entries), signature: signature, entries: entries)
    }

    /// Whether this is a head: the signature and entry hash, without the entries.
    public var isHead: Bool { entries == nil }

    /// The same block without its entries.
    public var head: WriteBlock {
        var head = self
        head.entries = nil
        return head
    }

    /// Whether the signature holds for the entries (or, for a head, the entry hash).
    public var isSignatureValid: Bool {
        if let entries {
            guard entries.count == count, Self.hash(of: entries) == entriesHash else { return false }
            var previous: HLCTimestamp?
            for entry in entries {
                guard entry.time <= last, previous.map({ $0 < entry.time }) ?? true else { return false }
                previous = entry.time
            }
        }
        return Identity.verify(signature, of: signedMessage, publicKey: publicKey)
    }

    /// The digest this block signs for the write at `time`, if it holds one.
    public func digest(at time: HLCTimestamp) -> [UInt8]? {
        guard let entries else { return nil }
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].time < time { low = mid + 1 } else { high = mid }
        }
        return low < entries.count && entries[low].time == time ? entries[low].digest : nil
    }

    /// Whether this block is a later version of `other`: a commit extends its
    /// replica's latest block (up to `maximumEntries`) and signs it again, so
    /// `other` (whole or a head) is superseded when its entries begin this one's.
    /// A block folded into the one before it (see `sealLocalWrites`) is
    /// superseded the same way by the joined block, which ends where it
    /// ended with its entries last.
    public func supersedes(_ other: WriteBlock) -> Bool {
        guard let entries, other.replica == replica, other.zone == zone, other.last <= last, other.count <= entries.count else { return false }
        let runs = other.last == last && other.count < entries.count ? [entries.prefix(other.count), entries.suffix(other.count)] : [entries.prefix(other.count)]
        if let older = other.entries { return runs.contains { Array($0) == older } }
        return other.count > 0 && runs.contains { Self.hash(of: Array($0)) == other.entriesHash }
    }

    /// A time at which both blocks hold a write with different digests: two
    /// writes signed under one stamp.
    public func conflict(with other: WriteBlock) -> HLCTimestamp? {
        guard let entries, other.entries != nil else { return nil }
        for entry in entries { if let digest = other.digest(at: entry.time), digest != entry.digest { return entry.time } }
        return nil
    }

    /// The time of the first entry; nil for a head or a block with none.
    public var firstTime: HLCTimestamp? { entries?.first?.time }

    var signedMessage: [UInt8] {
        var writer = BinaryWriter(capacity: 160)
        writer.raw("LTBK1".utf8)
        WriteDigest.encode(zone, into: &writer)
        writer.raw(publicKey)
        writer.varint(last.rawValue)
        writer.varint(count)
        writer.raw(entriesHash)
        return writer.bytes
    }

    static func hash(of entries: [Entry]) -> [UInt8] {
        var writer = BinaryWriter(capacity: entries.count * 42 + 8)
        for entry in entries {
            writer.varint(entry.time.rawValue)
            writer.raw(entry.digest)
        }
        return WriteDigest.hash(writer.bytes)
    }
}

extension WriteBlock {
    /// A block's identity where blocks are gathered (its signature too: a
    /// forged copy of a block is another one).
    public struct Key: Hashable, Sendable {
        var replica: ReplicaID
        var last: HLCTimestamp
        var entriesHash: [UInt8]
        var signature: [UInt8]
    }

    /// This block's `Key`: its replica, `last`, entry hash and signature.
    public var key: Key { Key(replica: replica, last: last, entriesHash: entriesHash, signature: signature) }
}

/// A block's entries as the store keeps them and `collected` carries them:
/// their count, then each time as a rising delta with its digest.
package enum WriteBlockEntries {
    package static func encode(_ entries: [WriteBlock.Entry], into writer: inout BinaryWriter) {
        writer.varint(entries.count)
        var previous: UInt64 = 0
        for entry in entries {
            writer.varint(entry.time.rawValue - previous)
            previous = entry.time.rawValue
            writer.raw(entry.digest)
        }
    }

    package static func encode(_ entries: [WriteBlock.Entry]) -> [UInt8] {
        var writer = BinaryWriter(capacity: entries.count * 36 + 4)
        encode(entries, into: &writer)
        return writer.bytes
    }

    /// Throws on entries out of order or past the clock's range.
    package static func decode(from reader: inout BinaryReader) throws -> [WriteBlock.Entry] {
        var entries: [WriteBlock.Entry] = []
        var previous: UInt64 = 0
        for index in 0..<(try reader.count(below: WriteBlock.maximumEntries + 1, "block entries")) {
            let delta = try reader.varint()
            let (time, overflow) = previous.addingReportingOverflow(delta)
            guard !overflow else { throw BinaryDecodingError.malformed("a block entry's time past the clock's range", offset: reader.offset) }
            guard index == 0 || delta > 0 else { throw BinaryDecodingError.malformed("block entries out of order", offset: reader.offset) }
            previous = time
            entries.append(WriteBlock.Entry(time: HLCTimestamp(rawValue: time), digest: Array(try reader.raw(WriteDigest.length))))
        }
        return entries
    }

    package static func decode(_ bytes: [UInt8]) throws -> [WriteBlock.Entry] {
        var reader = BinaryReader(bytes)
        return try decode(from: &reader)
    }
}
