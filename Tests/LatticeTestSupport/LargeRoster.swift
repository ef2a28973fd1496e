@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// An account's roster larger than one message (1 MiB): devices added by a
/// few members over time, most of those members removed since, as years of
/// phones and laptops leave a real account's roster. Within every bound a
/// roster keeps (per author, counted, stored).
package enum LargeRoster {
    /// `roster` grown by `authors` members the founder adds, each adding
    /// `devicesPerAuthor` devices with names as long as a roster keeps;
    /// every author but the last is removed once it has. Each entry follows
    /// the eight before it, as many parents as an entry names (`sign` would
    /// name the heads, which costs a scan of the roster per entry): about
    /// 500 bytes an entry, so a roster passes a message with fewer entries.
    package static func grow(_ roster: inout AccountRoster, founder: Identity, authors: Int = 5, devicesPerAuthor: Int = 440) throws {
        let name = String(repeating: "d", count: RosterEntry.maximumNameBytes)
        var last = Array(roster.heads.prefix(RosterEntry.maximumParents))
        func sign(_ action: RosterEntry.Action, _ subject: [UInt8], by identity: Identity) throws {
            let entry = try RosterEntry(account: roster.founder, subject: subject, action: action, time: 1, parents: last, by: identity)
            try roster.insert(entry)
            last = Array(([entry.hash] + last).prefix(RosterEntry.maximumParents))
        }
        for index in 0..<authors {
            let author = try Identity.generate()
            try sign(.add(name: name), author.publicKey, by: founder)
            for _ in 0..<devicesPerAuthor { try sign(.add(name: name), try Identity.generate().publicKey, by: author) }
            // A removed member's entries no longer count against the roster's bound.
            if index < authors - 1 { try sign(.remove(writesUpTo: .zero), author.publicKey, by: founder) }
        }
    }
}
