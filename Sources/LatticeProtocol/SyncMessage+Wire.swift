import LatticeCore

/// The protocol's wire constants.
public enum SyncWire {
    /// Protocol versions this build speaks, negotiated in the handshake.
    public static let versions: ClosedRange<UInt8> = 1...1
    /// The largest message (plaintext) a peer may send; frames carry at most this plus the cipher's overhead.
    public static let maximumMessageSize = 1 << 20
    /// Change-set bytes per `changes` message.
    public static let partSize = 256 * 1024
    /// Zones in one hello.
    public static let maximumZones = 100_000
}

extension SyncMessage {
    private enum Kind: UInt8 {
        case hello = 1, streamStart, changes, acknowledgement, caughtUp, ping, pong, roster
    }

    /// The message's bytes inside the channel.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        switch self {
        case .hello(let hello):
            writer.byte(Kind.hello.rawValue)
            writer.string(hello.container)
            writer.varint(hello.zones.count)
            for advert in hello.zones {
                Self.write(advert.zone, into: &writer)
                writer.varint(advert.zoneState.causalLength)
                Self.write(advert.zoneState.stamp, into: &writer)
                Self.write(advert.vector, into: &writer)
                if let resume = advert.resume {
                    writer.byte(1)
                    Self.write(resume, into: &writer)
                } else {
                    writer.byte(0)
                }
            }
            writer.blob(hello.roster)
            writer.byte(hello.grants.reduce(0) { $0 | 1 << ($1.rawValue - 1) })
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
        }
        return writer.bytes
    }

    /// Decodes one message; anything a local encoder could not have made is refused.
    public init(decoding bytes: [UInt8]) throws(ProtocolError) {
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
                let count = try reader.count(below: min(SyncWire.maximumZones, reader.remaining) + 1, "zone count")
                var zones: [ZoneAdvert] = []
                zones.reserveCapacity(count)
                var seen = Set<ZoneKey>()
                for _ in 0..<count {
                    let zone = try Self.readZone(from: &reader)
                    guard seen.insert(zone).inserted else { throw ProtocolError.malformed("zone \(zone) advertised twice") }
                    let causalLength = try reader.varint()
                    guard causalLength > 0, causalLength <= Limits.maximumCausalLength else { throw ProtocolError.malformed("zone causal length \(causalLength) is out of range") }
                    let stamp = try Self.readStamp(from: &reader)
                    let vector = try Self.readVector(from: &reader)
                    let resume = try reader.byte() != 0 ? try Self.readCursor(from: &reader) : nil
                    zones.append(ZoneAdvert(zone: zone, zoneState: ZoneState(causalLength: causalLength, stamp: stamp), vector: vector, resume: resume))
                }
                let roster = try reader.blob()
                let bits = try reader.byte()
                guard bits & ~0b111 == 0 else { throw ProtocolError.malformed("unknown databases granted (\(bits))") }
                let grants = Set(DatabaseScope.allCases.filter { bits & (1 << ($0.rawValue - 1)) != 0 })
                self = .hello(Hello(container: container, zones: zones, roster: roster, grants: grants))
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
            case .ping: self = .ping
            case .pong: self = .pong
            case .roster: self = .roster(try reader.blob())
            }
            guard reader.isAtEnd else { throw ProtocolError.malformed("\(reader.remaining) trailing bytes after a \(kind) message") }
        } catch let error as ProtocolError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    // MARK: Parts

    private static func write(_ zone: ZoneKey, into writer: inout BinaryWriter) {
        writer.byte(zone.scope.rawValue)
        writer.string(zone.zoneID.zoneName)
        writer.string(zone.zoneID.ownerName)
    }

    private static func readZone(from reader: inout BinaryReader) throws -> ZoneKey {
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
