@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeTestSupport
import Testing

/// The account roster as a value: signed entries, their one order, and what
/// it means for who is trusted, whatever order the entries arrive in.
@Suite struct AccountRosterTests {
    let founder = Identity.numbered(1)
    let laptop = Identity.numbered(2)
    let phone = Identity.numbered(3)
    let tablet = Identity.numbered(4)

    func members(_ roster: AccountRoster) -> Set<[UInt8]> { Set(roster.state.members.keys) }

    @Test func pairingsChainAndEveryDeviceReadsTheSameMembers() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        try roster.sign(.add(name: "phone"), subject: phone.publicKey, by: laptop, at: 2)
        #expect(members(roster) == [founder.publicKey, laptop.publicKey, phone.publicKey])
        #expect(roster.state.members[phone.publicKey]?.addedBy == laptop.publicKey)
        let decoded = try AccountRoster(decoding: roster.encoded)
        #expect(decoded == roster)
        #expect(decoded.state == roster.state)
    }

    @Test func anEntryByADeviceNoOneAddedWaitsAndOneAfterAnEntryNotHeldIsTaken() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        #expect(throws: RosterError.unknownAuthor) { try roster.sign(.add(name: "mine"), subject: tablet.publicKey, by: phone, at: 1) }
        #expect(throws: RosterError.unknownAuthor) { try roster.sign(.remove(writesUpTo: .zero), subject: founder.publicKey, by: phone, at: 2) }
        // A removal names a device some entry added: one of a key made up would only grow the roster.
        #expect(throws: RosterError.unknownSubject) { try roster.sign(.remove(writesUpTo: .zero), subject: tablet.publicKey, by: founder, at: 2) }
        #expect(roster.entries.isEmpty && members(roster) == [founder.publicKey])
        // An entry following one never received is taken: its parents order it, they do not hold it back.
        let dangling = try RosterEntry(account: founder.publicKey, subject: laptop.publicKey, action: .add(name: "x"), time: 3,
                                       parents: [[UInt8](repeating: 7, count: RosterEntry.hashLength)], by: founder)
        #expect(try roster.insert(dangling))
        #expect(members(roster) == [founder.publicKey, laptop.publicKey])
        // A whole roster read in any order is taken parents first.
        var source = AccountRoster(founder: founder.publicKey)
        try source.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        try source.sign(.add(name: "phone"), subject: phone.publicKey, by: laptop, at: 2)
        try source.sign(.add(name: "tablet"), subject: tablet.publicKey, by: phone, at: 3)
        var copy = AccountRoster(founder: founder.publicKey)
        #expect(try copy.merge(source.entries.values.sorted { $0.time > $1.time }).count == 3)
        #expect(copy.state == source.state)
    }

    @Test func aForgedOrAlteredEntryIsRefused() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        let entry = try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        for index in stride(from: 0, to: entry.bytes.count, by: 7) {
            var bytes = entry.bytes
            bytes[index] ^= 0x20
            #expect(throws: RosterError.self) { try RosterEntry(bytes: bytes) }
        }
        #expect(throws: RosterError.self) { try RosterEntry(bytes: Array(entry.bytes.dropLast())) }
        var other = AccountRoster(founder: phone.publicKey)
        #expect(throws: RosterError.otherAccount) { try other.insert(entry) }
    }

    @Test func ofTwoDevicesRemovingEachOtherAtOnceTheSeniorStays() throws {
        var base = AccountRoster(founder: founder.publicKey)
        try base.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        try base.sign(.add(name: "phone"), subject: phone.publicKey, by: laptop, at: 2)
        var one = base, two = base
        let removesPhone = try one.sign(.remove(writesUpTo: .zero), subject: phone.publicKey, by: laptop, at: 3)
        let removesLaptop = try two.sign(.remove(writesUpTo: .zero), subject: laptop.publicKey, by: phone, at: 3)
        // Concurrently, the phone adds the tablet: void, as its author's removal comes first.
        let addsTablet = try two.sign(.add(name: "tablet"), subject: tablet.publicKey, by: phone, at: 4)
        try one.insert(removesLaptop)
        try one.insert(addsTablet)
        try two.insert(removesPhone)
        #expect(one.state == two.state)
        #expect(members(one) == [founder.publicKey, laptop.publicKey])
        #expect(one.state.removed.keys.contains(phone.publicKey))
    }

    @Test func aRemovedDeviceCannotBeAddedAgainAndAHeldEntryRaisesTheMark() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        try roster.sign(.add(name: "phone"), subject: phone.publicKey, by: founder, at: 2)
        try roster.sign(.remove(writesUpTo: HLCTimestamp(rawValue: 100)), subject: phone.publicKey, by: founder, at: 3)
        try roster.sign(.add(name: "phone again"), subject: phone.publicKey, by: laptop, at: 4)
        #expect(!members(roster).contains(phone.publicKey))
        try roster.sign(.held(writesUpTo: HLCTimestamp(rawValue: 150)), subject: phone.publicKey, by: laptop, at: 5)
        try roster.sign(.held(writesUpTo: HLCTimestamp(rawValue: 120)), subject: phone.publicKey, by: founder, at: 6)
        #expect(roster.state.removed[phone.publicKey]?.writesUpTo == HLCTimestamp(rawValue: 150))
    }

    /// Several devices sign entries with partial knowledge and exchange them
    /// in random orders and subsets: every device that ends with the same
    /// entries reads the same state, and no device is both in and out.
    @Test(arguments: 0..<40) func devicesThatHoldTheSameEntriesAgree(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let identities = (1...6).map { Identity.numbered(UInt64($0)) }
        var replicas = Array(repeating: AccountRoster(founder: identities[0].publicKey), count: 4)
        var clock: UInt64 = 0
        for _ in 0..<30 {
            let at = Int.random(in: 0..<replicas.count, using: &rng)
            if Bool.random(using: &rng) {
                // Gossip: a random subset of one replica's entries reaches another.
                let from = Int.random(in: 0..<replicas.count, using: &rng)
                // Some of them: those whose parents never arrive are left out, as a relay that withholds would make it.
                try replicas[at].merge(replicas[from].entries.values.filter { _ in Bool.random(using: &rng) })
                continue
            }
            clock += 1
            let state = replicas[at].state
            let authors = identities.filter { state.members[$0.publicKey] != nil }
            let removing = Int.random(in: 0..<3, using: &rng) == 0
            // A removal names a device this replica knows was added (or was, and is gone).
            let known = identities.filter { state.members[$0.publicKey] != nil || state.removed[$0.publicKey] != nil }
            guard let author = authors.randomElement(using: &rng), let subject = (removing ? known : identities).randomElement(using: &rng) else { continue }
            let action: RosterEntry.Action = removing ? .remove(writesUpTo: HLCTimestamp(rawValue: clock)) : .add(name: "d")
            try replicas[at].sign(action, subject: subject.publicKey, by: author, at: clock)
        }
        var union = replicas[0]
        for replica in replicas { try union.merge(replica.entries.values) }
        var shuffled = AccountRoster(founder: identities[0].publicKey)
        try shuffled.merge(union.entries.values.shuffled(using: &rng))
        #expect(shuffled.entries.count == union.entries.count)
        #expect(shuffled.state == union.state)
        #expect(try AccountRoster(decoding: shuffled.encoded).state == union.state)
        #expect(Set(union.state.members.keys).isDisjoint(with: union.state.removed.keys))
    }

    /// A member that signs all it can (adds of devices of its own) fills the
    /// roster for everyone: the founder still removes it and the devices it
    /// added, and pairing works again once they are gone (issue 38, finding 3).
    @Test func aMemberThatFillsTheRosterIsStillRemovedAndItsShareFreed() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        try roster.sign(.add(name: "hostile"), subject: phone.publicKey, by: founder, at: 1)
        var puppets: [Identity] = []
        // The phone signs its own share of adds, then its puppets sign theirs, until the roster is full.
        var authors = [phone]
        filling: while let author = authors.first {
            authors.removeFirst()
            for index in 0..<AccountRoster.maximumEntriesPerAuthor {
                let puppet = Identity.numbered(UInt64(1000 + puppets.count))
                do {
                    try roster.sign(.add(name: "p\(index)"), subject: puppet.publicKey, by: author, at: 2)
                } catch RosterError.tooLarge {
                    break filling
                }
                puppets.append(puppet)
                if authors.count < 8 { authors.append(puppet) }
            }
        }
        #expect(roster.entries.count == AccountRoster.maximumEntries)
        #expect(throws: RosterError.tooLarge(AccountRoster.maximumEntries + 1)) { try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 3) }
        #expect(throws: RosterError.tooLarge(AccountRoster.maximumEntriesPerAuthor + 1)) { try roster.sign(.add(name: "more"), subject: tablet.publicKey, by: phone, at: 3) }
        // The removal goes through; the phone's entries no longer count, and its puppets' go as they are removed.
        try roster.sign(.remove(writesUpTo: .zero), subject: phone.publicKey, by: founder, at: 4)
        #expect(roster.state.removed[phone.publicKey] != nil)
        try roster.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 5)
        #expect(members(roster).contains(laptop.publicKey))
        // The roster travels and reads the same elsewhere, removals included.
        let decoded = try AccountRoster(decoding: roster.encoded)
        #expect(decoded.state == roster.state)
    }

    /// The hostile member gives two devices two different fillings, so each
    /// refuses the other's: their sessions go on, the founder's removal
    /// reaches the device that never held what it followed, and both end
    /// with one membership for the honest devices (issue 38, finding 3).
    @Test func twoDifferentFillingsDoNotSplitTheAccount() throws {
        var base = AccountRoster(founder: founder.publicKey)
        try base.sign(.add(name: "hostile"), subject: phone.publicKey, by: founder, at: 1)
        try base.sign(.add(name: "laptop"), subject: laptop.publicKey, by: founder, at: 1)
        var x = base, y = base
        var entries: [RosterEntry] = []
        for index in 0..<(2 * AccountRoster.maximumEntriesPerAuthor) {
            // Each entry follows the base alone, as a hostile member signing for two devices would.
            var fork = base
            entries.append(try fork.sign(.add(name: "p\(index)"), subject: Identity.numbered(UInt64(5000 + index)).publicKey, by: phone, at: 2))
        }
        try x.merge(entries.prefix(AccountRoster.maximumEntriesPerAuthor))
        try y.merge(entries.suffix(AccountRoster.maximumEntriesPerAuthor))
        // Each refuses the other's (the phone's share is full), without an error that would end a session.
        #expect(try x.merge(y.entries.values).isEmpty)
        // The founder, on x, removes the phone and every device it added there, and adds a tablet.
        for subject in [phone.publicKey] + x.state.members.values.filter({ $0.addedBy == phone.publicKey }).map(\.publicKey) {
            try x.sign(.remove(writesUpTo: .zero), subject: subject, by: founder, at: 3)
        }
        try x.sign(.add(name: "tablet"), subject: tablet.publicKey, by: founder, at: 4)
        // y takes all of it, though the removals follow entries it never held.
        try y.merge(x.entries.values)
        for roster in [x, y] {
            #expect(roster.state.members[tablet.publicKey] != nil && roster.state.members[laptop.publicKey] != nil)
            #expect(roster.state.removed[phone.publicKey] != nil)
        }
        // y's own puppets of the phone are removed from y in turn, and then both agree on every member.
        for subject in y.state.members.values.filter({ $0.addedBy == phone.publicKey }).map(\.publicKey) {
            try y.sign(.remove(writesUpTo: .zero), subject: subject, by: laptop, at: 5)
        }
        try x.merge(y.entries.values)
        try y.merge(x.entries.values)
        #expect(Set(x.state.members.keys) == Set(y.state.members.keys))
        #expect(Set(x.state.members.keys) == [founder.publicKey, laptop.publicKey, tablet.publicKey])
    }
}
