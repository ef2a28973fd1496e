/// Writes of a participant that a device of the owner's account held when
/// it learned that the participant's read-write time had ended: what keeps
/// a revoked participant from backdating (issue 38, finding 2).
///
/// A participant's write is judged first by the permission it had at the
/// write's stamp (`Share.permission(of:at:)`). But a stamp is the writer's
/// word: a participant removed or downgraded can set its clock back and
/// stamp new writes inside its read-write time. So once the owner ends that
/// time, a write stamped inside it counts only if a device of the owner's
/// account vouches for it: the revoking device names, in the same signed
/// write as the revocation, every write of the participant's devices its
/// records show; each other owner device adds those it took before it
/// learned of the revocation (as the roster's *held* entries do). A write
/// made after the revocation, whatever its stamp, is in no such list, and
/// every replica refuses it — the revoked party cannot add to a list the
/// owner's devices sign (Keyhive's rule: a revocation names what it follows).
///
/// Each owner device writes its list in a field of the share of its own
/// (`held_` and its replica ID), so two devices vouching at once lose
/// nothing to last-writer-wins. A write is named by its stamp and the first
/// `digestPrefix` bytes of its digest (`WriteDigest`), so a write signed
/// again under a vouched stamp with other content is not vouched for.
package struct VouchedWrites: Hashable, Sendable {
    /// Bytes of a write's digest kept: a second write matching them takes 2^128 work.
    package static let digestPrefix = 16
    /// A list this long still leaves the share record room (1 MB in all): about 24 bytes a write.
    /// Past it a revocation is refused, never cut short (a write left out would be void).
    package static let maximumWrites = 30_000
    static let fieldPrefix = "held_"
    static let formatVersion: UInt8 = 1

    package private(set) var digests: [Stamp: [UInt8]]
    /// Per participant replica, the latest of its writes the voucher's
    /// records had seen (their vectors' entries): a state may say it saw that
    /// replica's writes up to there, and no further, inside the time the owner ended.
    package private(set) var heads: [ReplicaID: HLCTimestamp] = [:]

    package init(_ digests: [Stamp: [UInt8]] = [:]) {
        self.digests = digests.mapValues { Array($0.prefix(Self.digestPrefix)) }
    }

    package var count: Int { digests.count }
    package var isEmpty: Bool { digests.isEmpty && heads.isEmpty }

    /// Raises the head of `replica` to `time`.
    package mutating func noteHead(_ replica: ReplicaID, at time: HLCTimestamp) {
        heads[replica] = max(heads[replica] ?? .zero, time)
    }

    /// Whether the write `stamp`, whose digest is `digest`, is vouched for.
    package func vouches(for stamp: Stamp, digest: [UInt8]) -> Bool {
        guard let held = digests[stamp] else { return false }
        return held.elementsEqual(digest.prefix(Self.digestPrefix))
    }

    package mutating func insert(_ stamp: Stamp, digest: [UInt8]) {
        digests[stamp] = Array(digest.prefix(Self.digestPrefix))
    }

    /// Both lists: a stamp both name with different digests keeps neither
    /// (someone signed two writes under it, and neither is vouched for).
    package mutating func formUnion(_ other: VouchedWrites) {
        for (stamp, digest) in other.digests {
            if let mine = digests[stamp], mine != digest { digests[stamp] = [] } else { digests[stamp] = digest }
        }
        for (replica, time) in other.heads { noteHead(replica, at: time) }
    }

    // MARK: The share's fields

    /// The field in which `replica`, a device of the owner's account, vouches.
    package static func field(of replica: ReplicaID) -> String { fieldPrefix + replica.description }

    /// Whether a share field is a vouching one.
    static func isField(_ name: String) -> Bool {
        name.hasPrefix(fieldPrefix) && ReplicaID(hex: String(name.dropFirst(fieldPrefix.count))) != nil
    }

    /// The field's bytes: per replica (in order), its writes' times as
    /// rising deltas, each with its digest prefix; then the heads.
    package var encoded: [UInt8] {
        var writer = BinaryWriter(capacity: digests.count * 24 + 8)
        writer.byte(Self.formatVersion)
        let byReplica = Dictionary(grouping: digests.filter { $0.value.count == Self.digestPrefix }.keys, by: \.replica)
        writer.varint(byReplica.count)
        for replica in byReplica.keys.sorted() {
            let times = byReplica[replica]!.map(\.time).sorted()
            writer.raw(replica.bytes)
            writer.varint(times.count)
            var previous: UInt64 = 0
            for time in times {
                writer.varint(time.rawValue - previous)
                previous = time.rawValue
                writer.raw(digests[Stamp(time: time, replica: replica)]!)
            }
        }
        writer.varint(heads.count)
        for replica in heads.keys.sorted() {
            writer.raw(replica.bytes)
            writer.varint(heads[replica]!.rawValue)
        }
        return writer.bytes
    }

    /// Reads a field's bytes; throws on anything `encoded` does not write.
    package init(decoding bytes: [UInt8]) throws {
        var reader = BinaryReader(bytes)
        guard try reader.byte() == Self.formatVersion else { throw BinaryDecodingError.malformed("unknown vouched-writes format", offset: 0) }
        var digests: [Stamp: [UInt8]] = [:]
        let replicas = try reader.count(below: bytes.count / 17 + 1, "replica count")
        var previousReplica: ReplicaID?
        for _ in 0..<replicas {
            let replica = ReplicaID(bytes: try reader.raw(16))
            guard previousReplica.map({ $0 < replica }) ?? true else { throw BinaryDecodingError.malformed("replicas out of order", offset: reader.offset) }
            previousReplica = replica
            let count = try reader.count(below: reader.remaining / (Self.digestPrefix + 1) + 1, "write count")
            var time: UInt64 = 0
            for index in 0..<count {
                let delta = try reader.varint()
                let (next, overflow) = time.addingReportingOverflow(delta)
                guard !overflow, index == 0 || delta > 0 else { throw BinaryDecodingError.malformed("write times out of order", offset: reader.offset) }
                time = next
                digests[Stamp(time: HLCTimestamp(rawValue: time), replica: replica)] = Array(try reader.raw(Self.digestPrefix))
            }
        }
        let headCount = try reader.count(below: reader.remaining / 17 + 1, "head count")
        var heads: [ReplicaID: HLCTimestamp] = [:]
        var previousHead: ReplicaID?
        for _ in 0..<headCount {
            let replica = ReplicaID(bytes: try reader.raw(16))
            guard previousHead.map({ $0 < replica }) ?? true else { throw BinaryDecodingError.malformed("heads out of order", offset: reader.offset) }
            previousHead = replica
            heads[replica] = HLCTimestamp(rawValue: try reader.varint())
        }
        guard reader.isAtEnd else { throw BinaryDecodingError.malformed("trailing bytes in vouched writes", offset: reader.offset) }
        self.digests = digests
        self.heads = heads
    }
}
