@_spi(Tools) import LatticeCrypto

/// A part of one write that a record no longer shows: a field (or the type,
/// or the creation) that a later write replaced while other parts of the
/// same write are still live.
///
/// A write's proof is a digest over all its parts (`WriteDigest`); a replica
/// that shows only some of them keeps the others as ghosts, so it can still
/// prove what it shows. Ghosts are a function of the live parts and the
/// writes' contents, so replicas holding the same live state hold the same
/// ghosts (they converge like the rest of the state).
@_spi(Tools) public struct WriteGhost: Hashable, Sendable {
    /// The stamp of the write the part belongs to.
    public var stamp: Stamp
    /// `#t` (type), `#c` (creation), `#d` (deletion) or a field name.
    public var key: String
    /// The part's item: its bytes when short, else a tag and their hash (`WritePart.item`).
    public var item: [UInt8]

    /// The ghost of part `key` of the write stamped `stamp`, held as `item`.
    public init(stamp: Stamp, key: String, item: [UInt8]) {
        self.stamp = stamp
        self.key = key
        self.item = item
    }

    static func precedes(_ lhs: WriteGhost, _ rhs: WriteGhost) -> Bool {
        lhs.stamp != rhs.stamp ? lhs.stamp < rhs.stamp : lhs.key < rhs.key
    }
}

/// The parts a record state shows, each with the stamp of the write it came from.
enum WritePart {
    static let typeKey = "#t"
    static let createdKey = "#c"
    static let deletedKey = "#d"
    /// Items up to this size are kept as they are; longer ones as a tag and a hash.
    static let inlineLimit = 32

    /// The item of a part whose canonical bytes are `bytes`: short enough to
    /// keep as a ghost whatever the value's size.
    static func item(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count > inlineLimit else { return [0] + bytes }
        return [1] + ((try? ContentHasher.hash(bytes)) ?? [])
    }

    static func item(of version: FieldVersion) -> [UInt8] { item(ValueOrder.canonicalBytes(version)) }

    static func lengthItem(_ length: UInt64) -> [UInt8] {
        var writer = BinaryWriter(capacity: 10)
        writer.varint(length)
        return item(writer.bytes)
    }
}

extension RecordState {
    /// The causal length of the incarnation the state's creation stamp created.
    var createdIncarnation: UInt64 { isAlive ? causalLength : causalLength - 1 }

    /// Calls `body` with the stamp and key of every part the state shows, and
    /// a way to get its item (computed only when asked).
    func forEachPart(_ body: (Stamp, String, () -> [UInt8]) -> Void) {
        body(typeStamp, WritePart.typeKey) { WritePart.item(Array(recordType.utf8)) }
        body(created, WritePart.createdKey) { WritePart.lengthItem(createdIncarnation) }
        if let deleted { body(deleted, WritePart.deletedKey) { WritePart.lengthItem(causalLength) } }
        for field in fields {
            body(field.stamp, field.name) { WritePart.item(of: field.winner) }
            for loser in field.losers { body(loser.stamp, field.name) { WritePart.item(of: loser) } }
        }
    }

    /// The stamp of every part, when one write made them all and no ghost is
    /// kept (most records): their digest needs no per-part work.
    var onlyStamp: Stamp? {
        guard ghosts.isEmpty, typeStamp == created, deleted.map({ $0 == created }) ?? true else { return nil }
        for field in fields where field.stamp != created || field.hasLosers { return nil }
        return created
    }

    /// Whether a ghost repeats a part the state shows (no merge makes one;
    /// a modified client can, and an earlier build's migration did).
    var hasGhostOfShownPart: Bool {
        guard !ghosts.isEmpty else { return false }
        var found = false
        forEachPart { stamp, key, _ in
            if !found, ghosts.contains(where: { $0.stamp == stamp && $0.key == key }) { found = true }
        }
        return found
    }

    /// Every stamp a part of the state shows, each once.
    public var liveStamps: Set<Stamp> {
        var stamps = Set<Stamp>()
        forEachPart { stamp, _, _ in stamps.insert(stamp) }
        return stamps
    }

    /// The items of the write stamped `stamp` (shown parts and ghosts), sorted
    /// by key: what its digest covers.
    func items(of stamp: Stamp) -> [(key: String, item: [UInt8])] {
        var items: [(key: String, item: [UInt8])] = []
        forEachPart { partStamp, key, item in if partStamp == stamp { items.append((key, item())) } }
        for ghost in ghosts where ghost.stamp == stamp { items.append((ghost.key, ghost.item)) }
        items.sort { $0.key < $1.key }
        return items
    }

    /// Sets the ghosts after a change that came from `sources` (the states
    /// merged, or the state before a local write): for every write the state
    /// still shows, the parts it no longer shows, as the sources knew them.
    mutating func reconcileGhosts(with sources: [RecordState]) {
        var shown: [(stamp: Stamp, key: String)] = []
        shown.reserveCapacity(fields.count + 3)
        forEachPart { stamp, key, _ in shown.append((stamp, key)) }
        // Most records have a handful of parts, where lists beat hashing their keys; many take sets.
        let hashed = shown.count > 24 ? Set(shown.map { PartKey(stamp: $0.stamp, key: $0.key) }) : nil
        let hashedStamps = hashed.map { Set($0.map(\.stamp)) }
        var taken = Set<PartKey>()
        var ghosts: [WriteGhost] = []
        func consider(_ stamp: Stamp, _ key: String, _ item: () -> [UInt8]) {
            if let hashed, let hashedStamps {
                guard hashedStamps.contains(stamp), !hashed.contains(PartKey(stamp: stamp, key: key)), taken.insert(PartKey(stamp: stamp, key: key)).inserted else { return }
            } else {
                var writeShown = false
                for part in shown where part.stamp == stamp {
                    if part.key == key { return }
                    writeShown = true
                }
                guard writeShown, !ghosts.contains(where: { $0.stamp == stamp && $0.key == key }) else { return }
            }
            ghosts.append(WriteGhost(stamp: stamp, key: key, item: item()))
        }
        // The sources' ghosts first: kept as they are, where a part would have its item computed again.
        for source in sources { for ghost in source.ghosts { consider(ghost.stamp, ghost.key) { ghost.item } } }
        for source in sources { source.forEachPart(consider) }
        ghosts.sort(by: WriteGhost.precedes)
        self.ghosts = ghosts
    }
}

private struct PartKey: Hashable {
    var stamp: Stamp
    var key: String
}
