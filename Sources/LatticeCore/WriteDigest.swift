@_spi(Tools) import LatticeCrypto

/// The digests writers sign: one per write, over everything the write set.
///
/// A record write's digest covers its zone, its record, its stamp and its
/// items (`WritePart`) in key order; a zone write's covers the zone, its
/// incarnation and its stamp. A replica checks a write it receives by
/// computing the digest from the state it got (shown parts and ghosts) and
/// finding it in a block its writer signed (`WriteBlock`).
package enum WriteDigest {
    package static let length = 32

    /// The digest of the record write `stamp` as `state` shows it, in `zone`.
    package static func record(_ state: RecordState, stamp: Stamp, in zone: ZoneKey) -> [UInt8] {
        var writer = opening("LTWR", state.recordName, stamp, zone)
        for (key, item) in state.items(of: stamp) {
            writer.string(key)
            writer.blob(item)
        }
        return hash(writer.bytes)
    }

    /// The digest of the zone write that gave the zone `state`.
    package static func zone(_ state: ZoneState, in zone: ZoneKey) -> [UInt8] {
        var writer = BinaryWriter(capacity: 96)
        writer.raw("LTWZ".utf8)
        encode(zone, into: &writer)
        writer.raw(state.stamp.replica.bytes)
        writer.varint(state.stamp.time.rawValue)
        writer.varint(state.causalLength)
        return hash(writer.bytes)
    }

    /// The entry of a write its own commit already replaced (a record saved
    /// twice, a conflict clear): signed so the commit's stamps all have one.
    static func gone(_ recordName: String, stamp: Stamp, in zone: ZoneKey) -> [UInt8] {
        hash(opening("LTWG", recordName, stamp, zone).bytes)
    }

    /// The digest of every write `state` shows, by stamp.
    package static func writes(of state: RecordState, in zone: ZoneKey) -> [(stamp: Stamp, digest: [UInt8])] {
        if let only = state.onlyStamp { return [(only, singleWrite(state, stamp: only, in: zone))] }
        // One pass over the parts and ghosts, grouped by stamp and sorted by key (as `items(of:)` gives
        // each), their items encoded straight into each digest's buffer.
        enum Source { case created, deleted, type, version(FieldVersion), ghost([UInt8]) }
        var parts: [(stamp: Stamp, key: String, source: Source)] = []
        parts.reserveCapacity(state.fields.count + state.ghosts.count + 3)
        parts.append((state.created, WritePart.createdKey, .created))
        if let deleted = state.deleted { parts.append((deleted, WritePart.deletedKey, .deleted)) }
        parts.append((state.typeStamp, WritePart.typeKey, .type))
        for field in state.fields {
            parts.append((field.stamp, field.name, .version(field.winner)))
            for loser in field.losers { parts.append((loser.stamp, field.name, .version(loser))) }
        }
        let shownCount = parts.count
        for ghost in state.ghosts { parts.append((ghost.stamp, ghost.key, .ghost(ghost.item))) }
        // Only the writes the state shows have digests (ghosts of any other are no write's).
        var shownStamps = Set<Stamp>(minimumCapacity: 4)
        for part in parts[..<shownCount] { shownStamps.insert(part.stamp) }
        parts.sort { $0.stamp != $1.stamp ? $0.stamp < $1.stamp : $0.key < $1.key }
        var result: [(stamp: Stamp, digest: [UInt8])] = []
        result.reserveCapacity(shownStamps.count)
        var scratch = BinaryWriter(capacity: 64)
        var index = 0
        while index < parts.count {
            let stamp = parts[index].stamp
            guard shownStamps.contains(stamp) else {
                index += 1
                continue
            }
            var writer = opening("LTWR", state.recordName, stamp, zone)
            while index < parts.count, parts[index].stamp == stamp {
                let part = parts[index]
                index += 1
                writer.string(part.key)
                switch part.source {
                case .ghost(let item): writer.blob(item)
                case .created: encodeItem(into: &writer, scratch: &scratch) { $0.varint(state.createdIncarnation) }
                case .deleted: encodeItem(into: &writer, scratch: &scratch) { $0.varint(state.causalLength) }
                case .type: encodeItem(into: &writer, scratch: &scratch) { $0.raw(state.recordType.utf8) }
                case .version(let version):
                    encodeItem(into: &writer, scratch: &scratch) { out in
                        ValueCodec.encode(version.value, into: &out)
                        for incarnation in version.targetIncarnations { out.varint(incarnation) }
                    }
                }
            }
            result.append((stamp, hash(writer.bytes)))
        }
        return result
    }

    /// A part's item (`WritePart.item` of the bytes `fill` writes) as a blob, straight into `writer`.
    private static func encodeItem(into writer: inout BinaryWriter, scratch: inout BinaryWriter, _ fill: (inout BinaryWriter) -> Void) {
        scratch.removeAll()
        fill(&scratch)
        if scratch.count > WritePart.inlineLimit {
            writer.varint(1 + ContentHasher.length)
            writer.byte(1)
            writer.raw(hash(scratch.bytes))
        } else {
            writer.varint(1 + scratch.count)
            writer.byte(0)
            writer.raw(scratch.bytes)
        }
    }

    /// `record` for a state all of whose parts one write made (most records):
    /// the same bytes, encoded straight into one buffer.
    static func singleWrite(_ state: RecordState, stamp: Stamp, in zone: ZoneKey) -> [UInt8] {
        var writer = opening("LTWR", state.recordName, stamp, zone)
        var scratch = BinaryWriter(capacity: 64)
        // Keys in order: "#c" < "#d" < "#t" < field names (which start with a letter).
        func item(_ key: String, _ fill: (inout BinaryWriter) -> Void) {
            writer.string(key)
            encodeItem(into: &writer, scratch: &scratch, fill)
        }
        item(WritePart.createdKey) { $0.varint(state.createdIncarnation) }
        if state.deleted != nil { item(WritePart.deletedKey) { $0.varint(state.causalLength) } }
        item(WritePart.typeKey) { $0.raw(state.recordType.utf8) }
        for field in state.fields {
            item(field.name) { out in
                ValueCodec.encode(field.value, into: &out)
                for incarnation in field.targetIncarnations { out.varint(incarnation) }
            }
        }
        return hash(writer.bytes)
    }

    /// What every record write's digest starts with: its kind, zone, record and stamp.
    private static func opening(_ tag: String, _ recordName: String, _ stamp: Stamp, _ zone: ZoneKey) -> BinaryWriter {
        var writer = BinaryWriter(capacity: 256)
        writer.raw(tag.utf8)
        encode(zone, into: &writer)
        writer.string(recordName)
        writer.raw(stamp.replica.bytes)
        writer.varint(stamp.time.rawValue)
        return writer
    }

    static func encode(_ zone: ZoneKey, into writer: inout BinaryWriter) {
        writer.byte(zone.scope.rawValue)
        writer.string(zone.zoneID.zoneName)
        writer.string(zone.zoneID.ownerName)
    }

    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        // BLAKE2b cannot fail on bytes in memory once libsodium is initialized,
        // which the store and every replica's identity did first.
        (try? ContentHasher.hash(bytes)) ?? [UInt8](repeating: 0, count: length)
    }
}
