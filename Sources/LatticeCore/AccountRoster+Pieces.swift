/// A roster travels in pieces: each a roster encoding of its own (the
/// founder, then some of the entries), so that a receiver merges them, in the
/// order sent (`causalOrder`), one message each, to the roster they came from. An account of
/// thousands of entries is larger than a message may be (1 MiB).
extension AccountRoster {
    /// The largest piece a hello or a roster message carries.
    package static let maximumPieceBytes = 256 * 1024

    /// The founder and each entry's bytes of an encoded roster, read without
    /// checking signatures (the sender's own roster, or a peer's that the
    /// store checks as it merges it); nil for bytes that are no roster.
    package static func entryBytes(of encoded: [UInt8]) -> (founder: [UInt8], entries: [[UInt8]])? {
        var reader = BinaryReader(encoded)
        guard let founder = try? reader.raw(RosterEntry.keyLength), let count = try? reader.count(below: maximumStoredEntries + 1, "roster entries") else { return nil }
        var entries: [[UInt8]] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            guard let entry = try? reader.blob() else { return nil }
            entries.append(entry)
        }
        return reader.isAtEnd ? (Array(founder), entries) : nil
    }

    /// `encoded` cut into pieces of at most `maximumBytes` (a piece holds at
    /// least one entry, and one entry is far smaller): the roster itself when
    /// it fits. Taken in the order given, each piece's entries find what they
    /// need in the pieces before (`causalOrder`).
    package static func pieces(of encoded: [UInt8], maximumBytes: Int = maximumPieceBytes) -> [[UInt8]] {
        guard encoded.count > maximumBytes, let roster = try? AccountRoster(decoding: encoded) else { return [encoded] }
        return pieces(founder: roster.founder, entries: roster.causalOrder().map(\.bytes), maximumBytes: maximumBytes)
    }

    /// The entries in an order a receiver can take them one by one: every
    /// entry after the add of its author and, for a removal or a held mark,
    /// the add of its subject; a member's removal before the entries that
    /// member signed (they then do not count against the bounds).
    package func causalOrder() -> [RosterEntry] {
        // A device's level: how many adds from the founder.
        var level: [[UInt8]: Int] = [founder: 0]
        var changed = true
        while changed {
            changed = false
            for entry in entries.values {
                guard case .add = entry.action, let author = level[entry.author], author + 1 < level[entry.subject] ?? .max else { continue }
                level[entry.subject] = author + 1
                changed = true
            }
        }
        func rank(_ entry: RosterEntry) -> Int {
            let author = level[entry.author] ?? .max / 4
            if case .add = entry.action { return 2 * author + 1 }
            return 2 * max(author, (level[entry.subject] ?? .max / 4) - 1) + 2
        }
        let ranked = entries.values.map { (rank: rank($0), entry: $0) }
        return ranked.sorted { $0.rank != $1.rank ? $0.rank < $1.rank : $0.entry.hash.lexicographicallyPrecedes($1.entry.hash) }.map(\.entry)
    }

    /// The entries of a piece, each checked (signature, account), without
    /// merging them: they may need entries of earlier pieces, which the
    /// receiver holds.
    package static func checkedEntries(of piece: [UInt8]) throws(RosterError) -> (founder: [UInt8], entries: [RosterEntry]) {
        guard let (founder, blobs) = entryBytes(of: piece) else { throw .malformed("a roster piece that does not read") }
        var entries: [RosterEntry] = []
        for blob in blobs {
            let entry = try RosterEntry(bytes: blob)
            guard entry.account == founder else { throw .otherAccount }
            entries.append(entry)
        }
        return (founder, entries)
    }

    /// The entries of `new` that `old` lacks, in pieces (nil when it lacks
    /// none): what a peer told `old` needs to learn `new`. A roster of
    /// another founder goes whole.
    package static func newPieces(from old: [UInt8], to new: [UInt8], maximumBytes: Int = maximumPieceBytes) -> [[UInt8]]? {
        guard old != new else { return nil }
        guard let (founder, entries) = entryBytes(of: new), let (oldFounder, oldEntries) = entryBytes(of: old), founder == oldFounder else {
            return pieces(of: new, maximumBytes: maximumBytes)
        }
        let told = Set(oldEntries)
        guard entries.contains(where: { !told.contains($0) }) else { return nil }
        guard let roster = try? AccountRoster(decoding: new) else { return [new] }
        let fresh = roster.causalOrder().map(\.bytes).filter { !told.contains($0) }
        return pieces(founder: founder, entries: fresh, maximumBytes: maximumBytes)
    }

    private static func pieces(founder: [UInt8], entries: [[UInt8]], maximumBytes: Int) -> [[UInt8]] {
        // The founder, a count (at most 3 bytes) and each entry with its length (at most 3 bytes).
        let overhead = RosterEntry.keyLength + 3
        var pieces: [[UInt8]] = []
        var current: [[UInt8]] = []
        var size = overhead
        for entry in entries {
            if !current.isEmpty, size + entry.count + 3 > maximumBytes {
                pieces.append(encode(founder: founder, entries: current))
                current = []
                size = overhead
            }
            current.append(entry)
            size += entry.count + 3
        }
        if !current.isEmpty || pieces.isEmpty { pieces.append(encode(founder: founder, entries: current)) }
        return pieces
    }

    /// The roster in at most `maximumBytes`, for one message that must carry
    /// what the receiver needs first: the membership chains of `keys` and
    /// every removal, then the other entries as they fit (the rest comes in
    /// pieces when the receiver first syncs with the account).
    package func encoded(fitting maximumBytes: Int, first keys: [[UInt8]]) -> [UInt8] {
        let whole = encoded
        guard whole.count > maximumBytes else { return whole }
        var chosen: [[UInt8]: RosterEntry] = [:]
        // A device's adds back to the founder: what an entry about it, or by it, needs first.
        var addsOf: [[UInt8]: [RosterEntry]] = [:]
        for entry in entries.values { if case .add = entry.action { addsOf[entry.subject, default: []].append(entry) } }
        func chooseChain(of key: [UInt8]) {
            var pending = [key]
            while let current = pending.popLast() {
                for add in addsOf[current] ?? [] where chosen[add.hash] == nil {
                    chosen[add.hash] = add
                    pending.append(add.author)
                }
            }
        }
        for key in keys { chooseChain(of: key) }
        for entry in entries.values {
            if case .add = entry.action { continue }
            chosen[entry.hash] = entry
            chooseChain(of: entry.subject)
            chooseChain(of: entry.author)
        }
        var size = RosterEntry.keyLength + 3 + chosen.values.reduce(0) { $0 + $1.bytes.count + 3 }
        for hash in entries.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) where chosen[hash] == nil {
            let entry = entries[hash]!
            guard size + entry.bytes.count + 3 <= maximumBytes else { continue }
            chosen[hash] = entry
            size += entry.bytes.count + 3
        }
        return Self.encode(founder: founder, entries: chosen.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { chosen[$0]!.bytes })
    }
}
