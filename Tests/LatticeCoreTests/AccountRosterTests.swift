import LatticeCore
import LatticeCrypto
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

    @Test func anEntryByADeviceNoOneAddedOrAfterAnEntryNotHeldIsRefused() throws {
        var roster = AccountRoster(founder: founder.publicKey)
        #expect(throws: RosterError.unknownAuthor) { try roster.sign(.add(name: "mine"), subject: tablet.publicKey, by: phone, at: 1) }
        #expect(throws: RosterError.unknownAuthor) { try roster.sign(.remove(writesUpTo: .zero), subject: founder.publicKey, by: phone, at: 2) }
        // An entry following one that does not exist would hold every later entry back: refused.
        let dangling = try RosterEntry(account: founder.publicKey, subject: laptop.publicKey, action: .add(name: "x"), time: 3,
                                       parents: [[UInt8](repeating: 7, count: RosterEntry.hashLength)], by: founder)
        #expect(throws: RosterError.missingParent) { try roster.insert(dangling) }
        #expect(roster.entries.isEmpty && members(roster) == [founder.publicKey])
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
            guard let author = authors.randomElement(using: &rng), let subject = identities.randomElement(using: &rng) else { continue }
            let action: RosterEntry.Action = Int.random(in: 0..<3, using: &rng) == 0 ? .remove(writesUpTo: HLCTimestamp(rawValue: clock)) : .add(name: "d")
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
}
