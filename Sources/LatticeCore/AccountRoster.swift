import LatticeCrypto

/// An account's roster: the founder's key and every signed entry (who added
/// whom, removals), a grow-only set that syncs like the data. Its meaning,
/// `state`, depends on the set alone, so every device that holds the same
/// entries trusts the same devices.
public struct AccountRoster: Sendable, Equatable {
    /// Entries an account keeps: its order costs up to the square of this to compute.
    public static let maximumEntries = 1024

    /// The founder's public key. A device that never paired is the founder of an account of one.
    public let founder: [UInt8]
    public private(set) var entries: [[UInt8]: RosterEntry] = [:]

    public init(founder: [UInt8]) {
        self.founder = founder
    }

    /// Takes an entry of this account; returns whether it was new. An entry
    /// must follow entries held here (its parents), and its author must be
    /// the founder or a device some entry added: an entry naming one that
    /// does not exist, or signed by a key nobody added, would otherwise
    /// become a head every later entry waits behind, for good.
    @discardableResult
    public mutating func insert(_ entry: RosterEntry) throws(RosterError) -> Bool {
        guard entry.account == founder else { throw .otherAccount }
        guard entries[entry.hash] == nil else { return false }
        guard entry.parents.allSatisfy({ entries[$0] != nil }) else { throw .missingParent }
        guard entry.author == founder || added.contains(entry.author) else { throw .unknownAuthor }
        guard entries.count < Self.maximumEntries else { throw .tooLarge(entries.count + 1) }
        entries[entry.hash] = entry
        if case .add = entry.action { added.insert(entry.subject) }
        return true
    }

    /// Takes what it can of `incoming` (another copy of this account's
    /// roster), parents first, whatever order they come in; entries that
    /// cannot follow any held entry are left out. Returns the entries taken.
    @discardableResult
    public mutating func merge(_ incoming: some Collection<RosterEntry>) throws(RosterError) -> [RosterEntry] {
        var waiting = incoming.filter { entries[$0.hash] == nil }
        var taken: [RosterEntry] = []
        var progress = true
        while progress, !waiting.isEmpty {
            progress = false
            var still: [RosterEntry] = []
            for entry in waiting {
                do {
                    if try insert(entry) { taken.append(entry) }
                    progress = true
                } catch .missingParent {
                    still.append(entry)
                } catch .unknownAuthor {
                    still.append(entry)
                }
            }
            waiting = still
        }
        return taken
    }

    /// Every device an add entry names: the keys an entry may be signed by (with the founder's).
    private var added = Set<[UInt8]>()

    /// The entries no other entry names: what a new entry follows.
    public var heads: [[UInt8]] {
        let named = Set(entries.values.flatMap(\.parents))
        return entries.keys.filter { !named.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Signs a new entry by `identity` after every entry held now, and takes it.
    public mutating func sign(_ action: RosterEntry.Action, subject: [UInt8], by identity: Identity, at time: UInt64) throws -> RosterEntry {
        let entry = try RosterEntry(account: founder, subject: subject, action: action, time: time, parents: Array(heads.prefix(RosterEntry.maximumParents)), by: identity)
        try insert(entry)
        return entry
    }

    // MARK: Meaning

    public struct Member: Hashable, Sendable {
        public var publicKey: [UInt8]
        public var name: String
        /// Who added it; nil for the founder.
        public var addedBy: [UInt8]?
        /// When, by the adder's clock (milliseconds since 1970).
        public var addedAt: UInt64?
        /// Steps from the founder: the more senior member's entry goes first among concurrent ones.
        public var seniority: Int
    }

    public struct Removal: Hashable, Sendable {
        public var publicKey: [UInt8]
        public var name: String
        public var removedBy: [UInt8]
        public var removedAt: UInt64
        /// The device's writes stamped after this are refused.
        public var writesUpTo: HLCTimestamp
    }

    public struct State: Equatable, Sendable {
        public var members: [[UInt8]: Member] = [:]
        public var removed: [[UInt8]: Removal] = [:]
    }

    /// Who is in the account and who was removed. Entries are taken in one
    /// order every replica computes alike: an entry after the entries it
    /// names; among entries ready together, the more senior author's first,
    /// then by hash. An entry counts only if its author is a member when it
    /// is taken, so of two members removing each other at once the senior
    /// one stays, and what a removed member signed concurrently with its
    /// removal is void. A removed device cannot be added again (it joins
    /// with a new identity). Entries naming an entry not held wait for it.
    public var state: State {
        var state = State()
        state.members[founder] = Member(publicKey: founder, name: "", addedBy: nil, addedAt: nil, seniority: 0)
        // Kahn's order: an entry is ready once every entry it names is taken.
        var missing: [[UInt8]: Int] = [:]
        var followers: [[UInt8]: [RosterEntry]] = [:]
        var ready: [RosterEntry] = []
        for entry in entries.values {
            let parents = Set(entry.parents)
            missing[entry.hash] = parents.count
            for parent in parents { followers[parent, default: []].append(entry) }
            if parents.isEmpty { ready.append(entry) }
        }
        while !ready.isEmpty {
            var best = 0
            for index in ready.indices.dropFirst() where Self.precedes(ready[index], ready[best], in: state) { best = index }
            ready.swapAt(best, ready.count - 1)
            let entry = ready.removeLast()
            Self.take(entry, into: &state)
            for follower in followers[entry.hash] ?? [] {
                missing[follower.hash]! -= 1
                if missing[follower.hash] == 0 { ready.append(follower) }
            }
        }
        return state
    }

    private static func precedes(_ lhs: RosterEntry, _ rhs: RosterEntry, in state: State) -> Bool {
        let left = state.members[lhs.author]?.seniority ?? .max, right = state.members[rhs.author]?.seniority ?? .max
        return left != right ? left < right : lhs.hash.lexicographicallyPrecedes(rhs.hash)
    }

    private static func take(_ entry: RosterEntry, into state: inout State) {
        guard let author = state.members[entry.author] else { return }
        switch entry.action {
        case .add(let name):
            guard state.members[entry.subject] == nil, state.removed[entry.subject] == nil else { return }
            state.members[entry.subject] = Member(
                publicKey: entry.subject, name: name, addedBy: entry.author, addedAt: entry.time, seniority: author.seniority + 1)
        case .remove(let writesUpTo):
            guard let member = state.members.removeValue(forKey: entry.subject) else { return }
            state.removed[entry.subject] = Removal(
                publicKey: entry.subject, name: member.name, removedBy: entry.author, removedAt: entry.time, writesUpTo: writesUpTo)
        case .held(let writesUpTo):
            guard var removal = state.removed[entry.subject] else { return }
            removal.writesUpTo = max(removal.writesUpTo, writesUpTo)
            state.removed[entry.subject] = removal
        }
    }

    // MARK: Wire

    /// The founder's key, then every entry, in hash order (so equal rosters encode alike).
    public var encoded: [UInt8] {
        Self.encode(founder: founder, entries: entries.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { entries[$0]!.bytes })
    }

    /// The encoding of a roster from its entries' bytes, already in hash order
    /// (a store reads them so, without checking signatures again).
    public static func encode(founder: [UInt8], entries: [[UInt8]]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.raw(founder)
        writer.varint(entries.count)
        for entry in entries { writer.blob(entry) }
        return writer.bytes
    }

    /// Reads a roster and checks every entry's signature and account.
    public init(decoding bytes: [UInt8]) throws(RosterError) {
        var reader = BinaryReader(bytes)
        do {
            founder = Array(try reader.raw(RosterEntry.keyLength))
            let count = try reader.count(below: Self.maximumEntries + 1, "roster entries")
            var read: [RosterEntry] = []
            for _ in 0..<count {
                let entry = try RosterEntry(bytes: try reader.blob())
                guard entry.account == founder else { throw RosterError.otherAccount }
                read.append(entry)
            }
            try merge(read)
            guard reader.isAtEnd else { throw RosterError.malformed("bytes after the roster") }
        } catch let error as RosterError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }
}
