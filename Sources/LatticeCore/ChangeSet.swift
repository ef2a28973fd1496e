/// What opens a change set: which zone it is for and which writes it accounts for.
///
/// A change set holds what its sender has that a version vector (`base`)
/// lacks. When it `claimsTop`, applying it completely to a replica that has
/// everything up to `base` gives that replica everything up to `top`. Parts
/// of a split change set do not claim; their records still merge.
@_spi(Tools) public struct ChangeSetHeader: Hashable, Sendable {
    /// The zone every record of the change set belongs to.
    public var zone: ZoneKey
    /// The zone's incarnation at the sender and its stamp, merged into the receiver's before any record.
    public var zoneState: ZoneState
    /// The vector the change set was made for: its records are what the sender has that `base` lacks.
    public var base: VersionVector
    /// The sender's vector: what a replica at `base` holds once it applies a claiming change set whole.
    public var top: VersionVector
    /// Whether applying it whole at `base` gives everything up to `top`; if not, its records still merge.
    public var claimsTop: Bool
    /// Every replica a stamp in this change set may name.
    public var replicas: [ReplicaID]
    /// The sender's schema, merged into the receiver's; empty where the sender sends none.
    public var schema: Schema
    /// A shared zone's: how its writers belong to accounts
    /// (`AccountMembership.encoded`), for the receiver to judge their rights.
    public var memberships: [[UInt8]] = []
    /// Whether live records leave out their ghosts of writes `base` covers
    /// (format version 5), so a concurrent edit of a record does not carry
    /// every field it replaced a second time. A receiver at `base` needs
    /// none of them: where the merged state shows such a write, the state
    /// held there shows it too, with all its parts or their ghosts, and the
    /// merge takes the ghosts from there (`reconcileGhosts`). A receiver that
    /// lacks such a write is told so (`ChangeSetError.madeForMoreThanHeld`).
    public var elidesCoveredGhosts = false

    /// A header as given: `replicas` must name every replica a stamp in it or in its records carries;
    /// `memberships` empty and `elidesCoveredGhosts` false until set.
    public init(zone: ZoneKey, zoneState: ZoneState, base: VersionVector, top: VersionVector, claimsTop: Bool, replicas: [ReplicaID], schema: Schema) {
        self.zone = zone
        self.zoneState = zoneState
        self.base = base
        self.top = top
        self.claimsTop = claimsTop
        self.replicas = replicas
        self.schema = schema
    }
}

extension ChangeSetHeader {
    /// The header a replica sends for `zone`, whose state is `sync`, to a peer at
    /// `base`: the one builder the store and the in-memory replica share.
    ///
    /// Its replica table names every replica a stamp of the header or of the
    /// zone's records can carry: every record's stamps are covered by the
    /// record's vector, and every merged or written vector by the zone's knowledge.
    public init(zone: ZoneKey, sync: ZoneSyncState, base: VersionVector, schema: Schema, claimsTop: Bool = true) {
        var replicas = Set<ReplicaID>()
        for vector in [sync.knowledge, sync.vector, base] { replicas.formUnion(vector.entries.lazy.map(\.replica)) }
        replicas.insert(sync.zoneState.stamp.replica)
        for definition in schema.definitions { replicas.insert(definition.stamp.replica) }
        if let deployed = schema.deployed { replicas.insert(deployed.replica) }
        self.init(zone: zone, zoneState: sync.zoneState, base: base, top: sync.vector, claimsTop: claimsTop, replicas: replicas.sorted(), schema: schema)
    }
}

extension ChangeSetHeader {
    /// Whether a change set of `zone` for a replica at `base` leaves out the
    /// ghosts of the writes `base` covers. In the private database alone: a
    /// shared zone's replica can cover writes it dropped since (void writes
    /// of a revoked participant, refetched from its peers), and a public
    /// name's state can give way whole to another creator's.
    public static func elides(in zone: ZoneKey, base: VersionVector) -> Bool {
        zone.scope == .private && !base.isEmpty
    }
}

/// Why a change set was refused.
package enum ChangeSetError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAChangeSet
    case unsupportedVersion(UInt8)
    case checksumMismatch(frame: Int)
    case truncated
    case malformed(String)
    case frameTooLarge(Int)
    /// A stamp names a replica the header's table lacks (a writer's bug, refused rather than sent).
    case replicaMissingFromHeader(String)
    /// A change set that leaves out ghosts (format 5) made for a base beyond what the receiver holds.
    case madeForMoreThanHeld(replica: String)

    package var description: String {
        switch self {
        case .notAChangeSet: return "not a Lattice change set (bad magic bytes)"
        case .unsupportedVersion(let version): return "change set format version \(version) is not supported by this build (supports \(ChangeSetFormat.readableVersions.lowerBound)-\(ChangeSetFormat.readableVersions.upperBound))"
        case .madeForMoreThanHeld(let replica):
            return "this change set leaves out what a replica at its base holds (writes of replica \(replica.prefix(8)) this one lacks): make it for this replica's vector"
        case .checksumMismatch(let frame): return "change set is corrupt: checksum mismatch in frame \(frame)"
        case .truncated: return "change set is truncated"
        case .malformed(let what): return "change set is malformed: \(what)"
        case .frameTooLarge(let size): return "change set frame of \(size) bytes exceeds the \(ChangeSetFormat.maximumFrameSize)-byte limit"
        case .replicaMissingFromHeader(let what): return "cannot write the change set: \(what) names a replica missing from its header"
        }
    }
}

/// The framing shared by writer and reader.
///
/// `"LTCS"` and a version byte, then frames: kind, 32-bit length, payload and
/// a CRC-32C chained from the previous frame's, so a dropped, repeated or
/// reordered frame is caught as surely as a flipped bit. An end frame with
/// the record count closes the change set; without it nothing is applied.
package enum ChangeSetFormat {
    package static let magic: [UInt8] = Array("LTCS".utf8)
    /// Version 2 added conflicts and target incarnations to record states;
    /// version 3 the schema's field indexes in the header and the compact
    /// record form (front-coded names, a lone vector entry as a flag);
    /// version 4 ghosts in records and proofs frames (signed blocks);
    /// version 5 the same frames with the ghosts of writes the base covers
    /// left out of live records (`ChangeSetHeader.elidesCoveredGhosts`), and
    /// a record's ghost count only where it has ghosts (a bit of its causal length).
    package static let version: UInt8 = 4
    package static let elidingVersion: UInt8 = 5
    package static let readableVersions: ClosedRange<UInt8> = 1...5
    /// Proofs frames are cut after this many blocks.
    static let blocksPerProofsFrame = 128
    /// Frames are cut near this size, so writer and reader hold one frame at a time.
    package static let targetFrameSize = 64 * 1024
    package static let maximumFrameSize = 16 * 1024 * 1024

    /// The CRC chain starts from the opening bytes (from version 2), so a
    /// flipped version byte is caught like any other.
    static func chainSeed(_ opening: [UInt8]) -> UInt32 {
        guard opening[4] >= 2 else { return 0 }
        return opening.withUnsafeBufferPointer { CRC32C.checksum($0, seed: 0) }
    }

    enum Kind: UInt8 {
        case header = 1, records = 2, end = 3, proofs = 4
    }
}

/// Writes a change set as a stream of frames handed to `sink` as they fill.
package struct ChangeSetWriter {
    private let sink: ([UInt8]) throws -> Void
    private let proofs: ProofCollector?
    /// With format 5: the base whose writes' ghosts live records leave out.
    private let elisionBase: VersionVector?
    /// The receiver's own replica, whose writes keep their ghosts: a store
    /// restored from an older copy can be told its own writes are held that it lost.
    private let receiver: ReplicaID?
    private var replicas: ReplicaTable
    private var codec = RecordCodec()
    private var frame = BinaryWriter(capacity: ChangeSetFormat.targetFrameSize + 4096)
    private var frameRecords = 0
    private var chain: UInt32 = 0
    private var failure: ChangeSetError?
    package private(set) var recordCount = 0
    package private(set) var byteCount = 0

    /// `proofs` gathers the blocks that let the receiver check the writes
    /// (nil only where no replica signs: tests under made-up replica IDs).
    /// `receiver`: in a change set that leaves out ghosts (format 5), the
    /// replica it is for, whose own writes keep theirs.
    package init(header: ChangeSetHeader, proofs: ProofCollector?, receiver: ReplicaID? = nil, sink: @escaping ([UInt8]) throws -> Void) throws {
        self.receiver = receiver
        self.sink = sink
        self.proofs = proofs
        proofs?.note(header)
        proofs?.elides = header.elidesCoveredGhosts
        replicas = ReplicaTable(header.replicas)
        let version = header.elidesCoveredGhosts ? ChangeSetFormat.elidingVersion : ChangeSetFormat.version
        elisionBase = header.elidesCoveredGhosts ? header.base : nil
        codec = RecordCodec(compact: true, ghostCount: true, ghostBit: version >= ChangeSetFormat.elidingVersion)
        let opening = ChangeSetFormat.magic + [version]
        chain = ChangeSetFormat.chainSeed(opening)
        try emit(opening)
        var payload = BinaryWriter()
        try HeaderCodec.encode(header, version: version, into: &payload)
        try writeFrame(.header, payload.bytes)
    }

    package mutating func append(_ state: RecordState) throws {
        if let failure { throw failure }
        let before = replicas.replicas.count
        var trimmed: RecordState?
        if let elisionBase, state.isAlive {
            let receiver = receiver
            func leftOut(_ ghost: WriteGhost) -> Bool { elisionBase.covers(ghost.stamp) && ghost.stamp.replica != receiver }
            // Copied only when a ghost goes: removing from a shared array copies it even if nothing goes.
            if state.ghosts.contains(where: leftOut) {
                trimmed = state
                trimmed!.ghosts.removeAll(where: leftOut)
            }
        }
        codec.encode(trimmed ?? state, into: &frame, replicas: &replicas)
        proofs?.note(state)
        guard replicas.replicas.count == before else {
            // The frame now holds what no reader could decode: nothing more goes out.
            failure = .replicaMissingFromHeader("record \"\(state.recordName)\"")
            throw failure!
        }
        frameRecords += 1
        recordCount += 1
        if frame.count >= ChangeSetFormat.targetFrameSize { try flushRecords() }
    }

    /// Writes the last records and the end frame. Nothing may be appended after.
    package mutating func finish() throws {
        if let failure { throw failure }
        try flushRecords()
        if let proofs {
            let blocks = try proofs.blocks()
            var start = 0
            while start < blocks.count {
                let end = min(start + ChangeSetFormat.blocksPerProofsFrame, blocks.count)
                var frame = BinaryWriter(capacity: (end - start) * 1024)
                ProofFrameCodec.encode(Array(blocks[start..<end]), into: &frame)
                try writeFrame(.proofs, frame.bytes)
                start = end
            }
        }
        var payload = BinaryWriter()
        payload.varint(recordCount)
        try writeFrame(.end, payload.bytes)
    }

    private mutating func flushRecords() throws {
        guard frameRecords > 0 else { return }
        var payload = BinaryWriter(capacity: frame.count + 8)
        payload.varint(frameRecords)
        payload.raw(frame.bytes)
        try writeFrame(.records, payload.bytes)
        frame.removeAll()
        frameRecords = 0
        codec.reset()
    }

    private mutating func writeFrame(_ kind: ChangeSetFormat.Kind, _ payload: [UInt8]) throws {
        var out = BinaryWriter(capacity: payload.count + 9)
        out.byte(kind.rawValue)
        out.fixed32(UInt32(payload.count))
        out.raw(payload)
        chain = out.bytes.withUnsafeBufferPointer { CRC32C.checksum($0, seed: chain) }
        out.fixed32(chain)
        try emit(out.bytes)
    }

    private mutating func emit(_ bytes: [UInt8]) throws {
        byteCount += bytes.count
        try sink(bytes)
    }
}

/// Where a change-set reader gets its bytes: a file, a socket, an array.
public protocol ByteSource {
    /// Up to `count` bytes; fewer only at the end of the stream.
    mutating func read(upTo count: Int) throws -> [UInt8]
}

/// A byte source over bytes in memory.
@_spi(Tools) public struct ArrayByteSource: ByteSource {
    private let bytes: [UInt8]
    private var offset = 0

    /// A source that reads `bytes` from the first.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset >= bytes.count }

    /// The next `count` bytes, fewer only at the end; never throws.
    public mutating func read(upTo count: Int) throws -> [UInt8] {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

/// Reads a change set frame by frame: memory stays at one frame whatever the size.
@_spi(Tools) public struct ChangeSetReader<Source: ByteSource> {
    /// The source, read up to where the reader is: once `nextRecord` returned nil, where a next change set starts.
    public private(set) var source: Source
    /// The header `readHeader` read; nil until it returned one.
    public private(set) var header: ChangeSetHeader?
    /// The blocks the change set's proofs frames carried, complete once `nextRecord` returned nil.
    public private(set) var proofs: [BlockProof] = []
    private var codec = RecordCodec()
    private var frame = BinaryReader([])
    private var recordsLeftInFrame = 0
    private var recordsRead = 0
    private var chain: UInt32 = 0
    private var frameIndex = 0
    private var finished = false

    /// A reader at the start of `source`: `readHeader` comes first, then `nextRecord`.
    public init(source: Source) { self.source = source }

    /// Reads the magic bytes and the header. Returns nil at a clean end of stream
    /// (no further change set), for readers of several concatenated change sets.
    public mutating func readHeader() throws -> ChangeSetHeader? {
        let magic = try source.read(upTo: 5)
        if magic.isEmpty { return nil }
        guard magic.count == 5, Array(magic.prefix(4)) == ChangeSetFormat.magic else { throw ChangeSetError.notAChangeSet }
        guard ChangeSetFormat.readableVersions.contains(magic[4]) else { throw ChangeSetError.unsupportedVersion(magic[4]) }
        chain = ChangeSetFormat.chainSeed(magic)
        let (kind, payload) = try readFrame()
        guard kind == .header else { throw ChangeSetError.malformed("first frame is not a header") }
        var reader = BinaryReader(payload)
        var header = try wrap { try HeaderCodec.decode(from: &reader, version: magic[4]) }
        header.elidesCoveredGhosts = magic[4] >= ChangeSetFormat.elidingVersion
        codec = RecordCodec(compact: magic[4] >= 3, ghostCount: magic[4] >= 4, ghostBit: magic[4] >= ChangeSetFormat.elidingVersion)
        self.header = header
        return header
    }

    /// The next record, or nil once the end frame is read and verified.
    public mutating func nextRecord() throws -> RecordState? {
        guard let header else { throw ChangeSetError.malformed("records read before the header") }
        while recordsLeftInFrame == 0 {
            if finished { return nil }
            guard frame.isAtEnd else { throw ChangeSetError.malformed("trailing bytes in a records frame") }
            let (kind, payload) = try readFrame()
            var reader = BinaryReader(payload)
            switch kind {
            case .records:
                recordsLeftInFrame = try wrap { try reader.count(below: payload.count + 1, "record count") }
                guard recordsLeftInFrame > 0 else { throw ChangeSetError.malformed("empty records frame") }
                frame = BinaryReader(payload, from: reader.offset)
                codec.reset()
            case .end:
                let declared = try wrap { try reader.varint() }
                guard declared == UInt64(recordsRead) else {
                    throw ChangeSetError.malformed("end frame counts \(declared) records, \(recordsRead) were read")
                }
                finished = true
                return nil
            case .proofs:
                proofs += try wrap { try ProofFrameCodec.decode(payload, zone: header.zone) }
            case .header:
                throw ChangeSetError.malformed("a second header inside one change set")
            }
        }
        recordsLeftInFrame -= 1
        recordsRead += 1
        let replicas = header.replicas
        return try wrap { try codec.decode(from: &frame, replicas: replicas) }
    }

    private mutating func readFrame() throws -> (ChangeSetFormat.Kind, [UInt8]) {
        let head = try source.read(upTo: 5)
        guard head.count == 5 else { throw ChangeSetError.truncated }
        let length = Int(UInt32(head[1]) | UInt32(head[2]) << 8 | UInt32(head[3]) << 16 | UInt32(head[4]) << 24)
        guard length <= ChangeSetFormat.maximumFrameSize else { throw ChangeSetError.frameTooLarge(length) }
        let payload = try source.read(upTo: length)
        let tail = try source.read(upTo: 4)
        guard payload.count == length, tail.count == 4 else { throw ChangeSetError.truncated }
        var crc = head.withUnsafeBufferPointer { CRC32C.checksum($0, seed: chain) }
        crc = payload.withUnsafeBufferPointer { CRC32C.checksum($0, seed: crc) }
        let stored = UInt32(tail[0]) | UInt32(tail[1]) << 8 | UInt32(tail[2]) << 16 | UInt32(tail[3]) << 24
        frameIndex += 1
        guard crc == stored else { throw ChangeSetError.checksumMismatch(frame: frameIndex) }
        chain = stored
        guard let kind = ChangeSetFormat.Kind(rawValue: head[0]) else { throw ChangeSetError.malformed("unknown frame kind \(head[0])") }
        return (kind, payload)
    }

    private func wrap<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as BinaryDecodingError {
            throw ChangeSetError.malformed(error.description)
        }
    }
}

/// The header frame's payload.
enum HeaderCodec {
    static func encode(_ header: ChangeSetHeader, version: UInt8, into writer: inout BinaryWriter) throws {
        writer.byte(header.zone.scope.rawValue)
        writer.string(header.zone.zoneID.zoneName)
        writer.string(header.zone.zoneID.ownerName)
        writer.byte(header.claimsTop ? 1 : 0)
        writer.varint(header.replicas.count)
        for replica in header.replicas { writer.raw(replica.bytes) }
        let table = ReplicaTable(header.replicas)
        func index(_ replica: ReplicaID, _ what: @autoclosure () -> String) throws -> Int {
            guard let index = table.existingIndex(of: replica) else { throw ChangeSetError.replicaMissingFromHeader(what()) }
            return index
        }
        func stamp(_ stamp: Stamp, _ what: @autoclosure () -> String) throws {
            writer.varint(try index(stamp.replica, what()))
            writer.varint(stamp.time.rawValue)
        }
        func vector(_ vector: VersionVector, _ what: String) throws {
            writer.varint(vector.entries.count)
            for entry in vector.entries {
                writer.varint(try index(entry.replica, what))
                writer.varint(entry.time.rawValue)
            }
        }
        writer.varint(header.zoneState.causalLength)
        try stamp(header.zoneState.stamp, "the zone's stamp")
        try vector(header.base, "the base vector")
        try vector(header.top, "the top vector")
        let fields = header.schema.sortedFields
        writer.varint(fields.count)
        for field in fields {
            writer.string(field.recordType)
            writer.string(field.field)
            writer.byte(field.type.code)
            try stamp(field.stamp, "the schema definition of \(field.recordType).\(field.field)")
        }
        let types = header.schema.recordTypes.sorted()
        writer.varint(types.count)
        for type in types { writer.string(type) }
        writer.byte(header.schema.deployed == nil ? 0 : 1)
        if let deployed = header.schema.deployed { try stamp(deployed, "the schema deployment") }
        guard version >= 3 else { return }
        let indexes = header.schema.indexes.sorted { $0.key < $1.key }
        writer.varint(indexes.count)
        for (key, kinds) in indexes {
            writer.string(key.recordType)
            writer.string(key.field)
            writer.byte(kinds.rawValue)
        }
        if header.zone.scope == .shared {
            writer.varint(header.memberships.count)
            for membership in header.memberships { writer.blob(membership) }
        }
    }

    static func decode(from reader: inout BinaryReader, version: UInt8) throws -> ChangeSetHeader {
        let scopeByte = try reader.byte()
        guard let scope = DatabaseScope(rawValue: scopeByte) else { throw BinaryDecodingError.malformed("unknown database scope \(scopeByte)", offset: reader.offset) }
        let zoneName = try reader.string()
        let ownerName = try reader.string()
        guard Limits.isZoneName(zoneName), Limits.isRecordName(ownerName) else {
            throw BinaryDecodingError.malformed("\"\(zoneName)\" of \"\(ownerName)\" is not a zone", offset: reader.offset)
        }
        let claimsTop = try reader.byte() != 0
        let replicaCount = try reader.count(below: reader.remaining / 16 + 1, "replica count")
        var replicas: [ReplicaID] = []
        for _ in 0..<replicaCount { replicas.append(ReplicaID(bytes: try reader.raw(16))) }
        guard Set(replicas).count == replicas.count else { throw BinaryDecodingError.malformed("duplicate replica in header", offset: reader.offset) }
        func stamp() throws -> Stamp {
            let replica = replicas[try reader.count(below: replicas.count, "replica index")]
            return Stamp(time: HLCTimestamp(rawValue: try reader.varint()), replica: replica)
        }
        func vector() throws -> VersionVector {
            var vector = VersionVector()
            for _ in 0..<(try reader.count(below: replicas.count + 1, "vector length")) {
                let replica = replicas[try reader.count(below: replicas.count, "replica index")]
                vector.advance(replica, to: HLCTimestamp(rawValue: try reader.varint()))
            }
            return vector
        }
        let causalLength = try reader.varint()
        guard causalLength > 0, causalLength <= Limits.maximumCausalLength else {
            throw BinaryDecodingError.malformed("zone causal length \(causalLength) is out of range", offset: reader.offset)
        }
        let zoneState = ZoneState(causalLength: causalLength, stamp: try stamp())
        let base = try vector()
        let top = try vector()
        var schema = Schema()
        for _ in 0..<(try reader.count(below: reader.remaining + 1, "schema size")) {
            let recordType = try reader.string()
            let field = try reader.string()
            guard Limits.isIdentifier(recordType), Limits.isIdentifier(field) else {
                throw BinaryDecodingError.malformed("schema definition \"\(recordType).\(field)\" is not a record type and field name", offset: reader.offset)
            }
            let code = try reader.byte()
            guard let type = FieldType(code: code) else { throw BinaryDecodingError.malformed("unknown field type \(code)", offset: reader.offset) }
            schema.merge(SchemaField(recordType: recordType, field: field, type: type, stamp: try stamp()))
        }
        for _ in 0..<(try reader.count(below: reader.remaining + 1, "record type count")) {
            let recordType = try reader.string()
            guard Limits.isIdentifier(recordType) else { throw BinaryDecodingError.malformed("\"\(recordType)\" is not a record type", offset: reader.offset) }
            schema.addRecordType(recordType)
        }
        if try reader.byte() != 0 { schema.merge(deployed: try stamp()) }
        if version >= 3 {
            for _ in 0..<(try reader.count(below: reader.remaining + 1, "index count")) {
                let recordType = try reader.string()
                let field = try reader.string()
                guard Limits.isIdentifier(recordType), Limits.isIdentifier(field) else {
                    throw BinaryDecodingError.malformed("index \"\(recordType).\(field)\" is not a record type and field name", offset: reader.offset)
                }
                let kinds = IndexKinds(rawValue: try reader.byte())
                guard !kinds.isEmpty, IndexKinds.all.isSuperset(of: kinds) else {
                    throw BinaryDecodingError.malformed("unknown index kinds \(kinds.rawValue) on \(recordType).\(field)", offset: reader.offset)
                }
                schema.merge(index: kinds, field: field, of: recordType)
                guard schema.indexedFields(of: recordType).count <= Limits.maximumIndexedFieldsPerType else {
                    throw BinaryDecodingError.malformed("more than \(Limits.maximumIndexedFieldsPerType) indexed fields on \(recordType)", offset: reader.offset)
                }
            }
        }
        var memberships: [[UInt8]] = []
        if scope == .shared, version >= 4 {
            for _ in 0..<(try reader.count(below: min(reader.remaining, Limits.maximumMembershipsPerChangeSet) + 1, "membership count")) {
                memberships.append(try reader.blob())
            }
        }
        guard reader.isAtEnd else { throw BinaryDecodingError.malformed("trailing bytes in header", offset: reader.offset) }
        var header = ChangeSetHeader(
            zone: ZoneKey(scope: scope, zoneID: ZoneID(zoneName: zoneName, ownerName: ownerName)),
            zoneState: zoneState, base: base, top: top, claimsTop: claimsTop, replicas: replicas, schema: schema)
        header.memberships = memberships
        return header
    }
}
