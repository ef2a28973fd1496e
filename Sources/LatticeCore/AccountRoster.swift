@_spi(Tools) import LatticeCrypto

/// An account's roster: the founder's key and every signed entry (who added
/// whom, removals), a grow-only set that syncs like the data. Its meaning,
/// `state`, depends on the set alone, so every device that holds the same
/// entries trusts the same devices.
package struct AccountRoster: Sendable, Equatable {
    /// Entries the account's members (removed ones not counted) may have
    /// signed, removals aside: past it, adds wait until members are removed.
    package static let maximumEntries = 1024
    /// Entries one device may sign: one hostile member fills only its own share.
    package static let maximumEntriesPerAuthor = 512
    /// Entries a roster read from a peer may hold: those counted, removals,
    /// and what removed members signed before they went.
    package static let maximumStoredEntries = 4 * maximumEntries

    /// The founder's public key. A device that never paired is the founder of an account of one.
    package let founder: [UInt8]
    package private(set) var entries: [[UInt8]: RosterEntry] = [:]

    package init(founder: [UInt8]) {
        self.founder = founder
    }

    /// Rosters are equal when they hold the same entries (what is derived from them follows).
    package static func == (lhs: AccountRoster, rhs: AccountRoster) -> Bool {
        lhs.founder == rhs.founder && Set(lhs.entries.keys) == Set(rhs.entries.keys)
    }

    /// Takes an entry of this account; returns whether it was new. Its
    /// author must be the founder or a device some entry added (an entry
    /// signed by a key nobody added waits for that add). The entries it
    /// follows (`parents`) order it; one not held does not hold it back,
    /// so a removal spreads even past entries a device never got.
    ///
    /// Bounds: each author signs at most `maximumEntriesPerAuthor` entries,
    /// and the members' entries (removed members' not counted) stay within
    /// `maximumEntries`; a removal is taken whatever the counts (one per
    /// author and subject), so a member that filled the roster can always be
    /// removed, which frees its share.
    @discardableResult
    package mutating func insert(_ entry: RosterEntry) throws(RosterError) -> Bool {
        guard entry.account == founder else { throw .otherAccount }
        guard entries[entry.hash] == nil else { return false }
        guard entry.author == founder || added.contains(entry.author) else { throw .unknownAuthor }
        if case .remove = entry.action {
            // Outside the counts, so a removal of a member always goes through: one per author and
            // subject, the one with the least hash where an author signed several (every device keeps
            // the same). Its subject must be a device some entry added (else it waits for that add),
            // and past the stored bound only a removal of a present member is taken, so removals of
            // devices gone already cannot grow the roster past what a hello carries.
            guard entry.subject == founder || added.contains(entry.subject) else { throw .unknownSubject }
            let key = entry.author + entry.subject
            if let held = removals[key] {
                guard entry.hash.lexicographicallyPrecedes(held) else { return false }
                entries[held] = nil
                dropped.insert(held)
            } else if entries.count >= Self.maximumStoredEntries, state.members[entry.subject] == nil {
                throw .tooLarge(entries.count + 1)
            }
            removals[key] = entry.hash
            entries[entry.hash] = entry
            return true
        }
        let signed = signedBy[entry.author, default: 0]
        guard signed < Self.maximumEntriesPerAuthor else { throw .tooLarge(signed + 1) }
        guard entries.count < Self.maximumStoredEntries else { throw .tooLarge(entries.count + 1) }
        if counted >= Self.maximumEntries {
            // Members removed since the count was taken no longer count.
            counted = Self.countedEntries(entries.values, removed: Set(state.removed.keys))
            guard counted < Self.maximumEntries else { throw .tooLarge(counted + 1) }
        }
        entries[entry.hash] = entry
        signedBy[entry.author, default: 0] += 1
        counted += 1
        if case .add = entry.action { added.insert(entry.subject) }
        return true
    }

    /// Entries this roster held and let go (a removal replaced by one of the
    /// same author and subject with a smaller hash): a store forgets them too.
    package private(set) var dropped = Set<[UInt8]>()
    /// Per author and subject, the removal kept.
    private var removals: [[UInt8]: [UInt8]] = [:]

    /// Entries that count against `maximumEntries`: not removals, and not by a removed member.
    private static func countedEntries(_ entries: some Collection<RosterEntry>, removed: Set<[UInt8]>) -> Int {
        entries.filter { entry in
            if case .remove = entry.action { return false }
            return !removed.contains(entry.author)
        }.count
    }

    /// Takes what it can of `incoming` (another copy of this account's
    /// roster), whatever order the entries come in: an entry whose author
    /// is not added yet waits for its add; one past a bound is left out (the
    /// roster stays usable, and a later exchange offers it again). Returns
    /// the entries taken.
    @discardableResult
    package mutating func merge(_ incoming: some Collection<RosterEntry>) throws(RosterError) -> [RosterEntry] {
        var waiting = incoming.filter { entries[$0.hash] == nil }
        var taken: [RosterEntry] = []
        var progress = true
        // In rounds: the founder's entries, then removals, then the rest. Removals are outside the counts
        // and free what removed members signed, so taking them before the entries they discount keeps
        // the bounds from dropping an entry that the signer's order took (whatever order entries come in).
        func round(_ take: (RosterEntry) -> Bool) throws(RosterError) {
            var still: [RosterEntry] = []
            for entry in waiting {
                guard take(entry) else { still.append(entry); continue }
                do {
                    if try insert(entry) { taken.append(entry) }
                    progress = true
                } catch .unknownAuthor, .unknownSubject {
                    still.append(entry)
                } catch .tooLarge {
                    continue
                }
            }
            waiting = still
        }
        let founder = founder
        while progress, !waiting.isEmpty {
            progress = false
            try round { $0.author == founder }
            try round { if case .remove = $0.action { return true } else { return false } }
            try round { _ in true }
        }
        return taken
    }

    /// Entries each author signed, and those counted against `maximumEntries`
    /// (an upper bound: removals since it was taken are subtracted when it is reached).
    private var signedBy: [[UInt8]: Int] = [:]
    private var counted = 0

    /// Every device an add entry names: the keys an entry may be signed by (with the founder's).
    private var added = Set<[UInt8]>()

    /// The entries no other entry names: what a new entry follows.
    package var heads: [[UInt8]] {
        let named = Set(entries.values.flatMap(\.parents))
        return entries.keys.filter { !named.contains($0) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Signs a new entry by `identity` after every entry held now, and takes it.
    @discardableResult
    package mutating func sign(_ action: RosterEntry.Action, subject: [UInt8], by identity: Identity, at time: UInt64) throws -> RosterEntry {
        let entry = try RosterEntry(account: founder, subject: subject, action: action, time: time, parents: Array(heads.prefix(RosterEntry.maximumParents)), by: identity)
        try insert(entry)
        return entry
    }

    // MARK: Meaning

    package struct Member: Hashable, Sendable {
        package var publicKey: [UInt8]
        package var name: String
        /// Who added it; nil for the founder.
        package var addedBy: [UInt8]?
        /// When, by the adder's clock (milliseconds since 1970).
        package var addedAt: UInt64?
        /// Steps from the founder: the more senior member's entry goes first among concurrent ones.
        package var seniority: Int
    }

    package struct Removal: Hashable, Sendable {
        package var publicKey: [UInt8]
        package var name: String
        package var removedBy: [UInt8]
        package var removedAt: UInt64
        /// The device's writes stamped after this are refused.
        package var writesUpTo: HLCTimestamp
    }

    package struct State: Equatable, Sendable {
        package var members: [[UInt8]: Member] = [:]
        package var removed: [[UInt8]: Removal] = [:]
    }

    /// Who is in the account and who was removed. Entries are taken in one
    /// order every replica computes alike: an entry after the entries it
    /// names; among entries ready together, the more senior author's first,
    /// then by hash. An entry counts only if its author is a member when it
    /// is taken, so of two members removing each other at once the senior
    /// one stays, and what a removed member signed concurrently with its
    /// removal is void. A removed device cannot be added again (it joins
    /// with a new identity). A parent never received orders nothing: an
    /// entry taken before its author's add waits for it, and a removal taken
    /// before its subject's add makes that add void, so a removal spreads to
    /// a device that never held what its remover held.
    package var state: State {
        var state = State()
        state.members[founder] = Member(publicKey: founder, name: "", addedBy: nil, addedAt: nil, seniority: 0)
        // Kahn's order: an entry is ready once every entry it names is taken.
        var missing: [[UInt8]: Int] = [:]
        var followers: [[UInt8]: [RosterEntry]] = [:]
        var ready: [RosterEntry] = []
        var waiting = Waiting()
        for entry in entries.values {
            // Only the parents held order an entry: one never received holds nothing back.
            let parents = Set(entry.parents).filter { entries[$0] != nil }
            missing[entry.hash] = parents.count
            for parent in parents { followers[parent, default: []].append(entry) }
            if parents.isEmpty { ready.append(entry) }
        }
        while !ready.isEmpty {
            var best = 0
            for index in ready.indices.dropFirst() where Self.precedes(ready[index], ready[best], in: state) { best = index }
            ready.swapAt(best, ready.count - 1)
            let entry = ready.removeLast()
            Self.take(entry, into: &state, waiting: &waiting)
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

    /// Entries taken before what they need: an author's entries before its
    /// add, a held mark before its removal. Their parents would have ordered
    /// them after it, but a parent a device never received orders nothing.
    private struct Waiting {
        var byAuthor: [[UInt8]: [RosterEntry]] = [:]
        var heldBySubject: [[UInt8]: [RosterEntry]] = [:]
    }

    private static func take(_ entry: RosterEntry, into state: inout State, waiting: inout Waiting) {
        guard let author = state.members[entry.author] else {
            // Not added yet: it counts once its author is. Removed: void.
            if state.removed[entry.author] == nil { waiting.byAuthor[entry.author, default: []].append(entry) }
            return
        }
        switch entry.action {
        case .add(let name):
            guard state.members[entry.subject] == nil, state.removed[entry.subject] == nil else { return }
            state.members[entry.subject] = Member(
                publicKey: entry.subject, name: name, addedBy: entry.author, addedAt: entry.time, seniority: author.seniority + 1)
            for waiter in (waiting.byAuthor.removeValue(forKey: entry.subject) ?? []).sorted(by: { $0.hash.lexicographicallyPrecedes($1.hash) }) {
                take(waiter, into: &state, waiting: &waiting)
            }
        case .remove(let writesUpTo):
            // A removal of a device not added yet here removes it before it comes: its add is then void.
            guard state.removed[entry.subject] == nil else { return }
            let member = state.members.removeValue(forKey: entry.subject)
            state.removed[entry.subject] = Removal(
                publicKey: entry.subject, name: member?.name ?? "", removedBy: entry.author, removedAt: entry.time, writesUpTo: writesUpTo)
            waiting.byAuthor[entry.subject] = nil
            for held in (waiting.heldBySubject.removeValue(forKey: entry.subject) ?? []).sorted(by: { $0.hash.lexicographicallyPrecedes($1.hash) }) {
                take(held, into: &state, waiting: &waiting)
            }
        case .held(let writesUpTo):
            guard var removal = state.removed[entry.subject] else {
                waiting.heldBySubject[entry.subject, default: []].append(entry)
                return
            }
            removal.writesUpTo = max(removal.writesUpTo, writesUpTo)
            state.removed[entry.subject] = removal
        }
    }

    // MARK: Wire

    /// The founder's key, then every entry, in hash order (so equal rosters encode alike).
    package var encoded: [UInt8] {
        Self.encode(founder: founder, entries: entries.keys.sorted { $0.lexicographicallyPrecedes($1) }.map { entries[$0]!.bytes })
    }

    /// The encoding of a roster from its entries' bytes, already in hash order
    /// (a store reads them so, without checking signatures again).
    package static func encode(founder: [UInt8], entries: [[UInt8]]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.raw(founder)
        writer.varint(entries.count)
        for entry in entries { writer.blob(entry) }
        return writer.bytes
    }

    /// Reads a roster and checks every entry's signature and account; entries
    /// past a bound are left out, as `merge` leaves them.
    package init(decoding bytes: [UInt8]) throws(RosterError) {
        var reader = BinaryReader(bytes)
        do {
            founder = Array(try reader.raw(RosterEntry.keyLength))
            let count = try reader.count(below: Self.maximumStoredEntries + 1, "roster entries")
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
