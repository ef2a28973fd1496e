@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// The protocol's wire constants.
@_spi(Tools) public enum SyncWire {
    /// Protocol versions this build speaks, negotiated in the handshake.
    /// Version 2 adds relaying (`Hello.relays`, `neighbors`, `holds`) and digest
    /// comparisons (`reconcile`): a session with a version-1 peer does neither,
    /// and its hello says nothing of them.
    /// Version 3 adds `collected`, for a device back after the tombstone horizon.
    /// Version 4 signs it: each residue names its delete, and the message
    /// carries the deletes' blocks (a version-3 `collected` still decodes, and
    /// changes only what the receiver holds as deleted already).
    /// Version 5 peers take change sets that leave out the ghosts of writes
    /// their vector covers (change set format 5).
    /// Version 6 peers say in their hello which zones they do not replicate (selective sync).
    public static let versions: ClosedRange<UInt8> = 1...6
    /// The first version whose peers relay and compare digests.
    public static let relayingVersion: UInt8 = 2
    /// The first version whose peers understand `collected` with its deletes' blocks.
    public static let collectingVersion: UInt8 = 4
    /// The first version whose peers restore ghosts a change set leaves out.
    public static let elidingVersion: UInt8 = 5
    /// The first version whose peers read `Hello.excluded`.
    public static let selectiveVersion: UInt8 = 6
    /// The largest message (plaintext) a peer may send; frames carry at most this plus the cipher's overhead.
    public static let maximumMessageSize = 1 << 20
    /// Change-set bytes per `changes` message.
    public static let partSize = 256 * 1024
    /// A hello's membership: `AccountMembership.maximumLength` entries of a few hundred bytes.
    public static let maximumMembershipBytes = 8 * 1024
    /// Zones in one hello.
    public static let maximumZones = 100_000
}

extension SyncMessage {
    /// In a hello's grants byte: the sender only compares digests.
    static let comparesOnlyBit: UInt8 = 0x08
    /// In a hello's grants byte: the sender relays (`Hello.relays`).
    static let relaysBit: UInt8 = 0x10
    /// In a hello's grants byte: the zones the sender does not replicate follow its membership.
    static let excludesBit: UInt8 = 0x20
    /// In a hello's grants byte: the private zones the sender replicates alone follow.
    static let onlyBit: UInt8 = 0x40
    /// Devices in one `neighbors` message: a node holds far fewer sessions.
    package static let maximumNeighbors = 4096

    private enum Kind: UInt8 {
        case hello = 1, streamStart, changes, acknowledgement, caughtUp, ping, pong, roster, caughtUpAfter, grants, assetRequest, assetReply, reconcile, reconcileReply, neighbors, holdsRequest, holds, unsignedCollected, collected
    }

    /// Records in one `collected` message: each at most a name of 255 bytes and a vector, well under a megabyte.
    package static let maximumCollectedRecords = 2048
    /// Blocks in one `collected` message: each at most 256 entries of about 37 bytes.
    package static let maximumCollectedBlocks = 32
    /// What a sender puts in one `collected` message at most, well under `SyncWire.maximumMessageSize`.
    package static let maximumCollectedBytes = 512 * 1024

    /// The message's bytes inside the channel.
    package func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        switch self {
        case .hello(let hello):
            writer.byte(Kind.hello.rawValue)
            writer.string(hello.container)
            Self.write(hello.zones, into: &writer)
            writer.blob(hello.roster)
            let flags = (hello.comparesOnly ? Self.comparesOnlyBit : 0) | (hello.relays ? Self.relaysBit : 0) | (hello.excluded.isEmpty ? 0 : Self.excludesBit)
                | (hello.replicatesOnly == nil ? 0 : Self.onlyBit)
            writer.byte(hello.grants.reduce(flags) { $0 | 1 << ($1.rawValue - 1) })
            Self.write(hello.sharedGrants, into: &writer)
            writer.blob(hello.membership)
            if !hello.excluded.isEmpty {
                writer.varint(hello.excluded.count)
                for zone in hello.excluded { Self.write(zone, into: &writer) }
            }
            if let only = hello.replicatesOnly {
                writer.varint(only.count)
                for zone in only { Self.write(zone, into: &writer) }
            }
        case .grants(let grants):
            writer.byte(Kind.grants.rawValue)
            Self.write(grants.sharedZones, into: &writer)
            Self.write(grants.zones, into: &writer)
        case .caughtUpAfter(let count):
            writer.byte(Kind.caughtUpAfter.rawValue)
            writer.varint(count)
        case .streamStart(let start):
            writer.byte(Kind.streamStart.rawValue)
            Self.write(start.zone, into: &writer)
            writer.varint(start.records)
            writer.varint(start.bytes)
        case .changes(let part):
            writer.byte(Kind.changes.rawValue)
            Self.write(part.zone, into: &writer)
            if let end = part.end {
                writer.byte(end.final ? 2 : 1)
                Self.write(end.cursor, into: &writer)
                writer.varint(end.records)
            } else {
                writer.byte(0)
            }
            writer.blob(part.bytes)
        case .acknowledgement(let ack):
            writer.byte(Kind.acknowledgement.rawValue)
            Self.write(ack.zone, into: &writer)
            Self.write(ack.cursor, into: &writer)
            Self.write(ack.vector, into: &writer)
        case .caughtUp: writer.byte(Kind.caughtUp.rawValue)
        case .ping: writer.byte(Kind.ping.rawValue)
        case .pong: writer.byte(Kind.pong.rawValue)
        case .roster(let bytes):
            writer.byte(Kind.roster.rawValue)
            writer.blob(bytes)
        case .assetRequest(let request):
            writer.byte(Kind.assetRequest.rawValue)
            writer.raw(request.hash)
            writer.varint(UInt64(request.size))
            writer.varint(request.chunk.map { $0 + 1 } ?? 0)
        case .assetReply(let reply):
            writer.byte(Kind.assetReply.rawValue)
            Self.write(reply, into: &writer)
        case .reconcile(let message):
            writer.byte(Kind.reconcile.rawValue)
            Self.write(message, into: &writer)
        case .reconcileReply(let message):
            writer.byte(Kind.reconcileReply.rawValue)
            Self.write(message, into: &writer)
        case .neighbors(let devices):
            writer.byte(Kind.neighbors.rawValue)
            writer.varint(devices.count)
            for device in devices { writer.raw(device.digest) }
        case .holdsRequest: writer.byte(Kind.holdsRequest.rawValue)
        case .holds(let zones):
            writer.byte(Kind.holds.rawValue)
            Self.write(zones, into: &writer)
        case .collected(let zone, let zoneIncarnation, let records, let blocks):
            writer.byte(Kind.collected.rawValue)
            Self.write(zone, into: &writer)
            writer.varint(zoneIncarnation)
            writer.varint(records.count)
            for record in records {
                writer.string(record.name)
                writer.varint(record.residue.causalLength)
                Self.write(record.residue.vector, into: &writer)
                if let deletion = record.residue.deletion {
                    writer.byte(1)
                    Self.write(deletion, into: &writer)
                } else {
                    writer.byte(0)
                }
            }
            writer.varint(blocks.count)
            for block in blocks {
                writer.raw(block.publicKey)
                writer.varint(block.last.rawValue)
                writer.raw(block.signature)
                WriteBlockEntries.encode(block.entries ?? [], into: &writer)
            }
        }
        return writer.bytes
    }

    /// Decodes one message; anything a local encoder could not have made is refused.
    package init(decoding bytes: [UInt8]) throws(ProtocolError) {
        guard bytes.count <= SyncWire.maximumMessageSize else {
            throw .limitExceeded("a message of \(bytes.count) bytes is over the \(SyncWire.maximumMessageSize)-byte maximum")
        }
        var reader = BinaryReader(bytes)
        do {
            let code = try reader.byte()
            guard let kind = Kind(rawValue: code) else { throw ProtocolError.malformed("unknown message type \(code)") }
            switch kind {
            case .hello:
                let container = try reader.string()
                guard !container.isEmpty, container.utf8.count <= 255, !container.contains("/") else { throw ProtocolError.malformed("\"\(container)\" is not a container identifier") }
                let zones = try Self.readAdverts(from: &reader)
                let roster = try reader.blob()
                let bits = try reader.byte()
                guard bits & ~(0b111 | Self.comparesOnlyBit | Self.relaysBit | Self.excludesBit | Self.onlyBit) == 0 else { throw ProtocolError.malformed("unknown databases granted (\(bits))") }
                let grants = Set(DatabaseScope.allCases.filter { bits & (1 << ($0.rawValue - 1)) != 0 })
                let sharedGrants = try Self.readSharedZones(from: &reader)
                let membership = try reader.blob()
                guard membership.count <= SyncWire.maximumMembershipBytes else { throw ProtocolError.malformed("a membership of \(membership.count) bytes") }
                var hello = Hello(container: container, zones: zones, roster: roster, grants: grants, sharedGrants: sharedGrants, membership: membership)
                hello.comparesOnly = bits & Self.comparesOnlyBit != 0
                hello.relays = bits & Self.relaysBit != 0
                if bits & Self.excludesBit != 0 {
                    var excluded = Set<ZoneKey>()
                    for _ in 0..<(try reader.count(below: min(SyncWire.maximumZones, reader.remaining) + 1, "excluded zones")) {
                        guard excluded.insert(try Self.readZone(from: &reader)).inserted else { throw ProtocolError.malformed("a zone excluded twice") }
                    }
                    guard !excluded.isEmpty else { throw ProtocolError.malformed("an empty list of excluded zones") }
                    hello.excluded = excluded.sorted { $0.description < $1.description }
                }
                if bits & Self.onlyBit != 0 {
                    var only = Set<ZoneKey>()
                    for _ in 0..<(try reader.count(below: min(SyncWire.maximumZones, reader.remaining) + 1, "replicated zones")) {
                        let zone = try Self.readZone(from: &reader)
                        guard zone.scope == .private, only.insert(zone).inserted else { throw ProtocolError.malformed("a zone listed twice, or not private, among those replicated alone") }
                    }
                    hello.replicatesOnly = only.sorted { $0.description < $1.description }
                }
                self = .hello(hello)
            case .streamStart:
                let zone = try Self.readZone(from: &reader)
                let records = try reader.varint()
                let bytes = try reader.varint()
                guard records < 1 << 48, bytes < 1 << 56 else { throw ProtocolError.malformed("stream totals out of range") }
                self = .streamStart(StreamStart(zone: zone, records: Int(records), bytes: Int(bytes)))
            case .changes:
                let zone = try Self.readZone(from: &reader)
                let flag = try reader.byte()
                var end: ChangesPart.End?
                switch flag {
                case 0: end = nil
                case 1, 2:
                    let cursor = try Self.readCursor(from: &reader)
                    let records = try reader.varint()
                    guard records < 1 << 48 else { throw ProtocolError.malformed("batch record count out of range") }
                    end = ChangesPart.End(cursor: cursor, final: flag == 2, records: Int(records))
                default: throw ProtocolError.malformed("unknown batch flag \(flag)")
                }
                self = .changes(ChangesPart(zone: zone, bytes: try reader.blob(), end: end))
            case .acknowledgement:
                let zone = try Self.readZone(from: &reader)
                let cursor = try Self.readCursor(from: &reader)
                self = .acknowledgement(Acknowledgement(zone: zone, cursor: cursor, vector: try Self.readVector(from: &reader)))
            case .caughtUp: self = .caughtUp
            case .caughtUpAfter:
                let count = try reader.varint()
                guard count < 1 << 32 else { throw ProtocolError.malformed("a grants count out of range") }
                self = .caughtUpAfter(grants: Int(count))
            case .grants:
                let sharedZones = try Self.readSharedZones(from: &reader)
                let zones = try Self.readAdverts(from: &reader)
                guard zones.allSatisfy({ $0.zone.scope == .shared && sharedZones.contains($0.zone.zoneID) }) else {
                    throw ProtocolError.malformed("grants advertise a zone they do not grant")
                }
                self = .grants(Grants(sharedZones: sharedZones, zones: zones))
            case .ping: self = .ping
            case .pong: self = .pong
            case .roster: self = .roster(try reader.blob())
            case .assetRequest:
                let hash = Array(try reader.raw(AssetOutline.hashLength))
                let size = try reader.varint()
                guard size <= UInt64(AssetOutline.maximumChunks) * UInt64(AssetOutline.chunkSize) else { throw ProtocolError.malformed("an asset of \(size) bytes") }
                let chunk = try reader.varint()
                guard chunk <= UInt64(AssetOutline.chunkCount(size: Int64(size))) else { throw ProtocolError.malformed("chunk \(chunk - 1) of an asset of \(size) bytes") }
                self = .assetRequest(AssetRequest(hash: hash, size: Int64(size), chunk: chunk == 0 ? nil : Int(chunk - 1)))
            case .assetReply: self = .assetReply(try Self.readAssetReply(from: &reader))
            case .reconcile: self = .reconcile(try Self.readReconcile(from: &reader))
            case .reconcileReply: self = .reconcileReply(try Self.readReconcile(from: &reader))
            case .neighbors:
                let count = try reader.count(below: min(Self.maximumNeighbors, reader.remaining / 32) + 1, "neighbor count")
                var devices: [DeviceID] = []
                for _ in 0..<count { devices.append(DeviceID(digest: Array(try reader.raw(32)))) }
                guard Set(devices).count == devices.count else { throw ProtocolError.malformed("a neighbor listed twice") }
                self = .neighbors(devices)
            case .holdsRequest: self = .holdsRequest
            case .holds:
                let zones = try Self.readAdverts(from: &reader)
                guard zones.allSatisfy({ $0.resume == nil }) else { throw ProtocolError.malformed("a holds message with resume points") }
                self = .holds(zones)
            case .collected, .unsignedCollected:
                let signed = kind == .collected
                let zone = try Self.readZone(from: &reader)
                let zoneIncarnation = try reader.varint()
                // Records are collected only in a zone that exists: an odd incarnation.
                guard zoneIncarnation % 2 == 1, zoneIncarnation < 1 << 62 else { throw ProtocolError.malformed("collected records of zone incarnation \(zoneIncarnation)") }
                let count = try reader.count(below: min(Self.maximumCollectedRecords, reader.remaining / 3) + 1, "collected record count")
                var records: [CollectedRecord] = []
                var names = Set<String>()
                for _ in 0..<count {
                    let name = try reader.string()
                    guard !name.isEmpty, name.utf8.count <= 255, names.insert(name).inserted else { throw ProtocolError.malformed("collected record name \"\(name.prefix(40))\"") }
                    let causalLength = try reader.varint()
                    // A tombstone's causal length is even (and not zero).
                    guard causalLength > 0, causalLength % 2 == 0, causalLength < 1 << 62 else { throw ProtocolError.malformed("a collected record of causal length \(causalLength)") }
                    var residue = RecordResidue(causalLength: causalLength, vector: try Self.readVector(from: &reader))
                    if signed {
                        switch try reader.byte() {
                        case 0: break
                        case 1: residue.deletion = try Self.readStamp(from: &reader)
                        case let other: throw ProtocolError.malformed("a collected record's deletion flag \(other)")
                        }
                    }
                    records.append(CollectedRecord(name: name, residue: residue))
                }
                var blocks: [WriteBlock] = []
                if signed {
                    let count = try reader.count(below: Self.maximumCollectedBlocks + 1, "collected block count")
                    for _ in 0..<count { blocks.append(try Self.readWholeBlock(from: &reader, in: zone)) }
                }
                self = .collected(zone: zone, zoneIncarnation: zoneIncarnation, records: records, blocks: blocks)
            }
            guard reader.isAtEnd else { throw ProtocolError.malformed("\(reader.remaining) trailing bytes after a \(kind) message") }
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    // MARK: Parts

    private static func write(_ reply: AssetReply, into writer: inout BinaryWriter) {
        switch reply {
        case .outline(let hash, let chunks):
            writer.byte(0)
            writer.raw(hash)
            writer.varint(chunks.count)
            for chunk in chunks { writer.raw(chunk) }
        case .chunk(let hash, let index, let leaves, let bytes):
            writer.byte(1)
            writer.raw(hash)
            writer.varint(index)
            writer.varint(leaves.count)
            for leaf in leaves { writer.raw(leaf) }
            writer.blob(bytes)
        case .unavailable(let hash, let chunk, let reason):
            writer.byte(2)
            writer.raw(hash)
            writer.varint(chunk.map { $0 + 1 } ?? 0)
            writer.string(String(reason.prefix(200)))
        }
    }

    private static func readAssetReply(from reader: inout BinaryReader) throws -> AssetReply {
        let kind = try reader.byte()
        let hash = Array(try reader.raw(AssetOutline.hashLength))
        func hashes(below limit: Int, _ what: String) throws -> [[UInt8]] {
            let count = try reader.count(below: limit + 1, what)
            return try (0..<count).map { _ in Array(try reader.raw(AssetOutline.hashLength)) }
        }
        switch kind {
        case 0:
            return .outline(hash: hash, chunks: try hashes(below: AssetOutline.maximumChunks, "chunk hashes"))
        case 1:
            let index = try reader.varint()
            guard index < UInt64(AssetOutline.maximumChunks) else { throw ProtocolError.malformed("asset chunk \(index)") }
            let leaves = try hashes(below: AssetOutline.leavesPerChunk, "leaf hashes")
            let bytes = try reader.blob()
            guard bytes.count <= AssetOutline.chunkSize else { throw ProtocolError.malformed("an asset chunk of \(bytes.count) bytes") }
            return .chunk(hash: hash, index: Int(index), leaves: leaves, bytes: bytes)
        case 2:
            let chunk = try reader.varint()
            guard chunk <= UInt64(AssetOutline.maximumChunks) else { throw ProtocolError.malformed("asset chunk \(chunk)") }
            let reason = try reader.string()
            guard reason.utf8.count <= 800 else { throw ProtocolError.malformed("an unavailable asset's reason of \(reason.utf8.count) bytes") }
            return .unavailable(hash: hash, chunk: chunk == 0 ? nil : Int(chunk - 1), reason: reason)
        default:
            throw ProtocolError.malformed("unknown asset reply \(kind)")
        }
    }

    private static func write(_ adverts: [ZoneAdvert], into writer: inout BinaryWriter) {
        writer.varint(adverts.count)
        for advert in adverts {
            write(advert.zone, into: &writer)
            writer.varint(advert.zoneState.causalLength)
            write(advert.zoneState.stamp, into: &writer)
            write(advert.vector, into: &writer)
            if let resume = advert.resume {
                writer.byte(1)
                write(resume, into: &writer)
            } else {
                writer.byte(0)
            }
        }
    }

    private static func readAdverts(from reader: inout BinaryReader) throws -> [ZoneAdvert] {
        let count = try reader.count(below: min(SyncWire.maximumZones, reader.remaining) + 1, "zone count")
        var zones: [ZoneAdvert] = []
        zones.reserveCapacity(count)
        var seen = Set<ZoneKey>()
        for _ in 0..<count {
            let zone = try readZone(from: &reader)
            guard seen.insert(zone).inserted else { throw ProtocolError.malformed("zone \(zone) advertised twice") }
            let causalLength = try reader.varint()
            guard causalLength > 0, causalLength <= Limits.maximumCausalLength else { throw ProtocolError.malformed("zone causal length \(causalLength) is out of range") }
            let stamp = try readStamp(from: &reader)
            let vector = try readVector(from: &reader)
            let resume = try reader.byte() != 0 ? try readCursor(from: &reader) : nil
            zones.append(ZoneAdvert(zone: zone, zoneState: ZoneState(causalLength: causalLength, stamp: stamp), vector: vector, resume: resume))
        }
        return zones
    }

    private static func write(_ zones: [ZoneID], into writer: inout BinaryWriter) {
        writer.varint(zones.count)
        for zone in zones {
            writer.string(zone.zoneName)
            writer.string(zone.ownerName)
        }
    }

    private static func readSharedZones(from reader: inout BinaryReader) throws -> [ZoneID] {
        var zones: [ZoneID] = []
        for _ in 0..<(try reader.count(below: min(SyncWire.maximumZones, reader.remaining) + 1, "shared zone count")) {
            let zone = ZoneID(zoneName: try reader.string(), ownerName: try reader.string())
            guard Limits.isZoneName(zone.zoneName), Limits.isRecordName(zone.ownerName) else { throw ProtocolError.malformed("\"\(zone)\" is not a shared zone") }
            zones.append(zone)
        }
        guard Set(zones).count == zones.count else { throw ProtocolError.malformed("a shared zone granted twice") }
        return zones
    }

    static func write(_ zone: ZoneKey, into writer: inout BinaryWriter) {
        writer.byte(zone.scope.rawValue)
        writer.string(zone.zoneID.zoneName)
        writer.string(zone.zoneID.ownerName)
    }

    static func readZone(from reader: inout BinaryReader) throws -> ZoneKey {
        let code = try reader.byte()
        guard let scope = DatabaseScope(rawValue: code) else { throw ProtocolError.malformed("unknown database scope \(code)") }
        let name = try reader.string()
        let owner = try reader.string()
        guard Limits.isZoneName(name), Limits.isRecordName(owner) else { throw ProtocolError.malformed("\"\(name)\" of \"\(owner)\" is not a zone") }
        return ZoneKey(scope: scope, zoneID: ZoneID(zoneName: name, ownerName: owner))
    }

    private static func write(_ stamp: Stamp, into writer: inout BinaryWriter) {
        writer.raw(stamp.replica.bytes)
        writer.varint(stamp.time.rawValue)
    }

    private static func readStamp(from reader: inout BinaryReader) throws -> Stamp {
        let replica = ReplicaID(bytes: try reader.raw(16))
        return Stamp(time: HLCTimestamp(rawValue: try reader.varint()), replica: replica)
    }

    /// A whole signed block, as `collected` carries it (times as rising deltas, each with its digest).
    private static func readWholeBlock(from reader: inout BinaryReader, in zone: ZoneKey) throws -> WriteBlock {
        let publicKey = Array(try reader.raw(WriteBlock.publicKeyLength))
        let last = HLCTimestamp(rawValue: try reader.varint())
        let signature = Array(try reader.raw(WriteBlock.signatureLength))
        let entries = try WriteBlockEntries.decode(from: &reader)
        guard entries.last.map({ $0.time <= last }) ?? true else { throw ProtocolError.malformed("a block's entries past its last stamp") }
        do {
            return try WriteBlock(zone: zone, publicKey: publicKey, last: last, entries: entries, signature: signature)
        } catch {
            throw ProtocolError.malformed("a block's key: \(error)")
        }
    }

    private static func write(_ vector: VersionVector, into writer: inout BinaryWriter) {
        writer.varint(vector.entries.count)
        for entry in vector.entries {
            writer.raw(entry.replica.bytes)
            writer.varint(entry.time.rawValue)
        }
    }

    private static func readVector(from reader: inout BinaryReader) throws -> VersionVector {
        let count = try reader.count(below: reader.remaining / 17 + 1, "vector length")
        var vector = VersionVector()
        for _ in 0..<count {
            let replica = ReplicaID(bytes: try reader.raw(16))
            let time = HLCTimestamp(rawValue: try reader.varint())
            guard vector[replica] == .zero else { throw ProtocolError.malformed("replica \(replica) twice in one vector") }
            vector.advance(replica, to: time)
        }
        return vector
    }

    private static func write(_ cursor: StreamCursor, into writer: inout BinaryWriter) {
        writer.varint(cursor.sequence)
        writer.varint(cursor.row)
    }

    private static func readCursor(from reader: inout BinaryReader) throws -> StreamCursor {
        let sequence = try reader.varint()
        let row = try reader.varint()
        guard sequence < 1 << 62, row < 1 << 62 else { throw ProtocolError.malformed("cursor out of range") }
        return StreamCursor(sequence: sequence, row: row)
    }
}
