/// Maps replica IDs to the small indexes a change set or a store writes instead.
package struct ReplicaTable: Sendable {
    package private(set) var replicas: [ReplicaID] = []
    private var indexes: [ReplicaID: Int] = [:]

    package init(_ replicas: [ReplicaID] = []) {
        for replica in replicas { _ = index(of: replica) }
    }

    /// The index of `replica`, adding it if new.
    package mutating func index(of replica: ReplicaID) -> Int {
        if let index = indexes[replica] { return index }
        indexes[replica] = replicas.count
        replicas.append(replica)
        return replicas.count - 1
    }

    package func existingIndex(of replica: ReplicaID) -> Int? { indexes[replica] }
}

/// Field names and record types written once per frame, then by index.
struct NameTable {
    private var indexes: [String: Int] = [:]
    private(set) var names: [String] = []
    /// Off for one-record blobs, where every name is new and a lookup is wasted.
    var interning = true

    mutating func write(_ name: String, into writer: inout BinaryWriter) {
        guard interning else {
            writer.varint(0)
            writer.string(name)
            return
        }
        if let index = indexes[name] {
            writer.varint(index + 1)
        } else {
            writer.varint(0)
            writer.string(name)
            indexes[name] = names.count
            names.append(name)
        }
    }

    /// Field names and record types share the identifier rule: checked once, as each is first read.
    mutating func read(from reader: inout BinaryReader) throws -> String {
        let reference = try reader.count(below: names.count + 1, "name index")
        if reference > 0 { return names[reference - 1] }
        let at = reader.offset
        let name = try reader.string()
        guard Limits.isIdentifier(name) else { throw BinaryDecodingError.malformed("\"\(name)\" is not a field name or record type", offset: at) }
        names.append(name)
        return name
    }

    mutating func reset() {
        indexes.removeAll(keepingCapacity: true)
        names.removeAll(keepingCapacity: true)
    }
}

/// The binary form of a `RecordState`, shared by change sets and the store.
///
/// Stamps are written relative to the record's latest stamp, which is itself a
/// delta from the previous record's; the common case of a record whose fields
/// were all written together costs one flag bit per record instead of a stamp
/// per field.
struct RecordCodec {
    private struct Flags {
        static let alive: UInt8 = 1
        static let fieldsShareLatest: UInt8 = 2
        static let typeIsLatest: UInt8 = 4
        static let createdIsLatest: UInt8 = 8
        static let deletedIsLatest: UInt8 = 16
        /// Each field is followed by a byte saying whether target incarnations
        /// and losing writes follow (absent in most records, and in older blobs).
        static let fieldExtras: UInt8 = 32
        /// The vector is the latest stamp alone (compact form only).
        static let vectorIsLatest: UInt8 = 64
        /// The record type was set with the record's creation (compact form only).
        static let typeIsCreated: UInt8 = 128
        /// Ghosts follow the fields (store form only; change sets from
        /// format 4 always write their count).
        static let ghosts: UInt8 = 64
        static let known: UInt8 = 127
        static let knownCompact: UInt8 = 255
    }

    private struct Extras {
        static let targetIncarnations: UInt8 = 1
        static let losers: UInt8 = 2
    }

    var names = NameTable()
    var previousTime: UInt64 = 0
    /// Change-set format 3: a record name is written as the bytes it shares
    /// with the previous record's and the rest (records of a frame come in
    /// change order, which is mostly name order), and a vector that is the
    /// latest stamp alone as a flag.
    var compact = false
    private var previousName: [UInt8] = []
    /// Compact form: a creation stamp is written as a delta from the
    /// previous record's (records of a batch are mostly created together).
    private var previousCreated: UInt64 = 0

    /// Change-set format 4: every record ends with its ghost count.
    var ghostCount = false
    /// Change-set format 5: the causal length's low bit says whether ghosts
    /// follow, so the many records without any (all of them, where a
    /// change set leaves out the ghosts of covered writes) spend no byte on them.
    var ghostBit = false

    init(compact: Bool = false, ghostCount: Bool = false, ghostBit: Bool = false) {
        self.compact = compact
        self.ghostCount = ghostCount
        self.ghostBit = ghostBit
    }

    mutating func reset() {
        names.reset()
        previousTime = 0
        previousName.removeAll(keepingCapacity: true)
        previousCreated = 0
    }

    private mutating func writeName(_ name: String, into writer: inout BinaryWriter) {
        guard compact else { return writer.string(name) }
        var name = name
        name.withUTF8 { utf8 in
            var shared = 0
            let limit = min(utf8.count, previousName.count)
            while shared < limit, utf8[shared] == previousName[shared] { shared += 1 }
            writer.varint(shared)
            writer.varint(utf8.count - shared)
            writer.raw(utf8[shared...])
            previousName.removeAll(keepingCapacity: true)
            previousName.append(contentsOf: utf8)
        }
    }

    private mutating func readName(from reader: inout BinaryReader) throws -> String {
        guard compact else { return try reader.string() }
        let shared = try reader.count(below: previousName.count + 1, "shared name length")
        let rest = try reader.length("name length")
        previousName.removeSubrange(shared...)
        let at = reader.offset
        previousName.append(contentsOf: try reader.raw(rest))
        guard let name = String(validating: previousName, as: UTF8.self) else { throw BinaryDecodingError.malformed("invalid UTF-8", offset: at) }
        return name
    }

    mutating func encode(_ state: RecordState, into writer: inout BinaryWriter, replicas: inout ReplicaTable) {
        let latest = state.lastModified
        var flags: UInt8 = state.isAlive ? Flags.alive : 0
        if !state.fields.isEmpty, state.fields.allSatisfy({ $0.stamp == latest }) { flags |= Flags.fieldsShareLatest }
        if state.typeStamp == latest { flags |= Flags.typeIsLatest }
        if state.created == latest { flags |= Flags.createdIsLatest }
        if state.deleted == latest { flags |= Flags.deletedIsLatest }
        if state.fields.contains(where: \.hasExtras) { flags |= Flags.fieldExtras }
        let vectorIsLatest = compact && state.vector.entries.count == 1 && state.vector.entries[0].replica == latest.replica
            && state.vector.entries[0].time == latest.time
        if vectorIsLatest { flags |= Flags.vectorIsLatest }
        if compact, state.typeStamp == state.created, state.typeStamp != latest { flags |= Flags.typeIsCreated }
        if !compact, !state.ghosts.isEmpty { flags |= Flags.ghosts }
        writer.byte(flags)
        writeName(state.recordName, into: &writer)
        writer.varint(ghostBit ? state.causalLength << 1 | (state.ghosts.isEmpty ? 0 : 1) : state.causalLength)
        writer.zigzag(Int64(bitPattern: latest.time.rawValue &- previousTime))
        previousTime = latest.time.rawValue
        writer.varint(replicas.index(of: latest.replica))
        if !vectorIsLatest {
            writer.varint(state.vector.entries.count)
            for entry in state.vector.entries {
                writer.varint(replicas.index(of: entry.replica))
                writer.zigzag(Int64(bitPattern: latest.time.rawValue &- entry.time.rawValue))
            }
        }
        names.write(state.recordType, into: &writer)
        func stamp(_ stamp: Stamp) {
            writer.varint(replicas.index(of: stamp.replica))
            writer.varint(latest.time.rawValue - stamp.time.rawValue)
        }
        if compact {
            if flags & Flags.createdIsLatest == 0 {
                writer.varint(replicas.index(of: state.created.replica))
                writer.zigzag(Int64(bitPattern: state.created.time.rawValue &- previousCreated))
            }
            if flags & (Flags.typeIsLatest | Flags.typeIsCreated) == 0 { stamp(state.typeStamp) }
            previousCreated = state.created.time.rawValue
        } else {
            if flags & Flags.typeIsLatest == 0 { stamp(state.typeStamp) }
            if flags & Flags.createdIsLatest == 0 { stamp(state.created) }
        }
        if let deleted = state.deleted, flags & Flags.deletedIsLatest == 0 {
            writer.byte(1)
            stamp(deleted)
        } else {
            writer.byte(state.deleted == nil ? 0 : 2)
        }
        writer.varint(state.fields.count)
        func incarnations(_ list: [UInt64]) {
            writer.varint(list.count)
            for incarnation in list { writer.varint(incarnation) }
        }
        for field in state.fields {
            names.write(field.name, into: &writer)
            if flags & Flags.fieldsShareLatest == 0 { stamp(field.stamp) }
            ValueCodec.encode(field.value, into: &writer)
            guard flags & Flags.fieldExtras != 0 else { continue }
            let extras = (field.targetIncarnations.isEmpty ? 0 : Extras.targetIncarnations) | (field.losers.isEmpty ? 0 : Extras.losers)
            writer.byte(extras)
            if extras & Extras.targetIncarnations != 0 { incarnations(field.targetIncarnations) }
            if extras & Extras.losers != 0 {
                writer.varint(field.losers.count)
                for loser in field.losers {
                    stamp(loser.stamp)
                    ValueCodec.encode(loser.value, into: &writer)
                    incarnations(loser.targetIncarnations)
                }
            }
        }
        guard ghostCount || flags & Flags.ghosts != 0, !ghostBit || !state.ghosts.isEmpty else { return }
        writer.varint(state.ghosts.count)
        for ghost in state.ghosts {
            stamp(ghost.stamp)
            switch ghost.key {
            case WritePart.typeKey: writer.byte(0)
            case WritePart.createdKey: writer.byte(1)
            case WritePart.deletedKey: writer.byte(2)
            default:
                writer.byte(3)
                names.write(ghost.key, into: &writer)
            }
            writer.blob(ghost.item)
        }
    }

    /// What precedes the fields: enough to tell whether a merge would change anything.
    private mutating func decodePrefix(from reader: inout BinaryReader, replicas: [ReplicaID]) throws -> (flags: UInt8, recordName: String, causalLength: UInt64, latest: Stamp, vector: VersionVector, ghosts: Bool) {
        let flags = try reader.byte()
        guard flags & ~(compact ? Flags.knownCompact : Flags.known) == 0 else { throw BinaryDecodingError.malformed("unknown record flags \(flags)", offset: reader.offset) }
        let recordName = try readName(from: &reader)
        guard Limits.isStoredRecordName(recordName) else { throw BinaryDecodingError.malformed("\"\(recordName)\" is not a record name", offset: reader.offset) }
        var causalLength = try reader.varint()
        let ghostsFollow = ghostBit ? causalLength & 1 == 1 : ghostCount
        if ghostBit { causalLength >>= 1 }
        guard causalLength > 0, causalLength <= Limits.maximumCausalLength, (causalLength % 2 == 1) == (flags & Flags.alive != 0) else {
            throw BinaryDecodingError.malformed("causal length \(causalLength) disagrees with the record's liveness", offset: reader.offset)
        }
        let latestTime = previousTime &+ UInt64(bitPattern: try reader.zigzag())
        previousTime = latestTime
        let latest = Stamp(time: HLCTimestamp(rawValue: latestTime), replica: replicas[try reader.count(below: replicas.count, "replica index")])
        var vector = VersionVector()
        if compact, flags & Flags.vectorIsLatest != 0 {
            vector.advance(latest.replica, to: latest.time)
        } else {
            for _ in 0..<(try reader.count(below: replicas.count + 1, "vector length")) {
                let replica = replicas[try reader.count(below: replicas.count, "replica index")]
                vector.advance(replica, to: HLCTimestamp(rawValue: latestTime &- UInt64(bitPattern: try reader.zigzag())))
            }
        }
        return (flags, recordName, causalLength, latest, vector, ghostsFollow)
    }

    mutating func decodeVersion(from reader: inout BinaryReader, replicas: [ReplicaID]) throws -> RecordVersion {
        let prefix = try decodePrefix(from: &reader, replicas: replicas)
        return RecordVersion(causalLength: prefix.causalLength, vector: prefix.vector)
    }

    mutating func decode(from reader: inout BinaryReader, replicas: [ReplicaID]) throws -> RecordState {
        let (flags, recordName, causalLength, latest, vector, ghostsFollow) = try decodePrefix(from: &reader, replicas: replicas)
        let latestTime = latest.time.rawValue
        let recordType = try names.read(from: &reader)
        func stamp() throws -> Stamp {
            let replica = replicas[try reader.count(below: replicas.count, "replica index")]
            let delta = try reader.varint()
            guard delta <= latestTime else { throw BinaryDecodingError.malformed("stamp before the epoch", offset: reader.offset) }
            let stamp = Stamp(time: HLCTimestamp(rawValue: latestTime - delta), replica: replica)
            // The merge tells overwritten writes from unseen ones by the vector: it must cover every stamp.
            guard vector.covers(stamp) else {
                throw BinaryDecodingError.malformed("record \"\(recordName)\" has a version vector that misses its own writes", offset: reader.offset)
            }
            return stamp
        }
        guard vector.covers(latest) else {
            throw BinaryDecodingError.malformed("record \"\(recordName)\" has a version vector that misses its own writes", offset: reader.offset)
        }
        let typeStamp: Stamp
        let created: Stamp
        if compact {
            if flags & Flags.createdIsLatest != 0 {
                created = latest
            } else {
                let replica = replicas[try reader.count(below: replicas.count, "replica index")]
                let time = previousCreated &+ UInt64(bitPattern: try reader.zigzag())
                created = Stamp(time: HLCTimestamp(rawValue: time), replica: replica)
                guard time <= latestTime, vector.covers(created) else {
                    throw BinaryDecodingError.malformed("record \"\(recordName)\" has a creation stamp its vector does not cover", offset: reader.offset)
                }
            }
            typeStamp = flags & Flags.typeIsLatest != 0 ? latest : (flags & Flags.typeIsCreated != 0 ? created : try stamp())
            previousCreated = created.time.rawValue
        } else {
            typeStamp = flags & Flags.typeIsLatest != 0 ? latest : try stamp()
            created = flags & Flags.createdIsLatest != 0 ? latest : try stamp()
        }
        let deleted: Stamp?
        switch try reader.byte() {
        case 0: deleted = nil
        case 1: deleted = try stamp()
        case 2: deleted = latest
        case let other: throw BinaryDecodingError.malformed("unknown deletion marker \(other)", offset: reader.offset)
        }
        func incarnations(for value: FieldValue?) throws -> [UInt64] {
            let count = try reader.count(below: reader.remaining + 1, "incarnation count")
            let list = try (0..<count).map { _ in try reader.varint() }
            guard list.isEmpty || list.count == value.cascadeTargetCount else {
                throw BinaryDecodingError.malformed("record \"\(recordName)\" has \(list.count) target incarnations for \(value.cascadeTargetCount) deleteSelf references", offset: reader.offset)
            }
            return list
        }
        let fieldCount = try reader.count(below: reader.remaining + 1, "field count")
        var fields: [FieldRegister] = []
        fields.reserveCapacity(min(fieldCount, 256)) // a count read off the wire reserves no more than that
        for _ in 0..<fieldCount {
            let name = try names.read(from: &reader)
            if let last = fields.last, last.name >= name {
                throw BinaryDecodingError.malformed("fields out of order at \"\(name)\"", offset: reader.offset)
            }
            let fieldStamp = flags & Flags.fieldsShareLatest != 0 ? latest : try stamp()
            var register = FieldRegister(name: name, value: try ValueCodec.decode(from: &reader), stamp: fieldStamp)
            if flags & Flags.fieldExtras != 0 {
                let extras = try reader.byte()
                guard extras & ~(Extras.targetIncarnations | Extras.losers) == 0 else {
                    throw BinaryDecodingError.malformed("unknown field extras \(extras)", offset: reader.offset)
                }
                if extras & Extras.targetIncarnations != 0 { register.targetIncarnations = try incarnations(for: register.value) }
                if extras & Extras.losers != 0 {
                    let count = try reader.count(below: reader.remaining + 1, "loser count")
                    guard count > 0 else { throw BinaryDecodingError.malformed("empty loser list", offset: reader.offset) }
                    var previous = register.winner
                    for _ in 0..<count {
                        let loserStamp = try stamp()
                        let value = try ValueCodec.decode(from: &reader)
                        let loser = FieldVersion(value: value, stamp: loserStamp, targetIncarnations: try incarnations(for: value))
                        guard loserStamp < previous.stamp else {
                            throw BinaryDecodingError.malformed("record \"\(recordName)\" field \(name): losing writes out of order", offset: reader.offset)
                        }
                        register.losers.append(loser)
                        previous = loser
                    }
                }
            }
            fields.append(register)
        }
        var ghosts: [WriteGhost] = []
        if ghostsFollow || (!compact && flags & Flags.ghosts != 0) {
            let count = try reader.count(below: reader.remaining + 1, "ghost count")
            if ghostBit, count == 0 { throw BinaryDecodingError.malformed("record \"\(recordName)\": an empty ghost list flagged", offset: reader.offset) }
            for _ in 0..<count {
                let ghostStamp = try stamp()
                let key: String
                switch try reader.byte() {
                case 0: key = WritePart.typeKey
                case 1: key = WritePart.createdKey
                case 2: key = WritePart.deletedKey
                case 3: key = try names.read(from: &reader)
                case let other: throw BinaryDecodingError.malformed("unknown ghost kind \(other)", offset: reader.offset)
                }
                let item = try reader.blob()
                guard item.count <= WritePart.inlineLimit + 1 else { throw BinaryDecodingError.malformed("ghost item of \(item.count) bytes", offset: reader.offset) }
                let ghost = WriteGhost(stamp: ghostStamp, key: key, item: item)
                if let last = ghosts.last, !WriteGhost.precedes(last, ghost) {
                    throw BinaryDecodingError.malformed("record \"\(recordName)\": ghosts out of order", offset: reader.offset)
                }
                ghosts.append(ghost)
            }
        }
        let state = RecordState(
            recordName: recordName, causalLength: causalLength, recordType: recordType, typeStamp: typeStamp,
            created: created, deleted: deleted, fields: fields, vector: vector, ghosts: ghosts)
        guard state.isAlive || fields.isEmpty, state.isAlive == (deleted == nil) else {
            throw BinaryDecodingError.malformed("record \"\(recordName)\" mixes a deletion with live fields", offset: reader.offset)
        }
        if !ghosts.isEmpty {
            let live = state.liveStamps
            guard ghosts.allSatisfy({ live.contains($0.stamp) }) else {
                throw BinaryDecodingError.malformed("record \"\(recordName)\" has a ghost of a write it does not show", offset: reader.offset)
            }
        }
        guard state.lastModified == latest else {
            throw BinaryDecodingError.malformed("record \"\(recordName)\" carries a latest stamp it does not hold", offset: reader.offset)
        }
        return state
    }
}
