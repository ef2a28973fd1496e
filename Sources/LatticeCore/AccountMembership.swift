@_spi(Tools) import LatticeCrypto
import Synchronization

/// A device's proof that it belongs to an account, which any replica checks
/// alone: the account's add entries from the founder down to the device,
/// each signed by the one the entry before added. Other accounts never hold
/// the account's roster, so a shared zone's rights (owner, participants)
/// are decided from these, relayed with the zone's change sets.
///
/// It proves additions only: a device the account removed keeps its proof
/// where the removal is not known (another account's replicas). And an
/// account can list any device, even one of another account: that only ever
/// gives the listed device its rights, never the listing account more.
package struct AccountMembership: Hashable, Sendable {
    /// Chains longer than this are refused: an account's devices add each other in a few steps.
    package static let maximumLength = 16

    /// The founder's public key: the account's identity.
    package let account: [UInt8]
    /// The device the chain ends at (the founder itself for an empty chain).
    package let member: [UInt8]
    package let entries: [RosterEntry]

    /// The chain that proves `member` belongs to `roster`'s account, or nil
    /// when the roster does not hold it as a member.
    package init?(of member: [UInt8], in roster: AccountRoster) {
        self.init(of: member, in: roster, state: roster.state)
    }

    /// The same, with the roster's state computed already (a caller that
    /// proves every member computes it once, not per member).
    package init?(of member: [UInt8], in roster: AccountRoster, state: AccountRoster.State) {
        var chain: [RosterEntry] = []
        var current = member
        while current != roster.founder {
            guard chain.count < Self.maximumLength, let adder = state.members[current]?.addedBy,
                  let entry = roster.entries.values.first(where: {
                      $0.subject == current && $0.author == adder && { if case .add = $0.action { return true } else { return false } }($0)
                  })
            else { return nil }
            chain.append(entry)
            current = adder
        }
        account = roster.founder
        self.member = member
        entries = chain.reversed()
    }

    /// Reads and checks a chain: every entry an add of the one account,
    /// signed by the founder first, then by the device the entry before added.
    package init(decoding bytes: [UInt8]) throws(RosterError) {
        var reader = BinaryReader(bytes)
        do {
            account = Array(try reader.raw(RosterEntry.keyLength))
            let count = try reader.count(below: Self.maximumLength + 1, "membership entries")
            var entries: [RosterEntry] = []
            var signer = account
            for _ in 0..<count {
                let entry = try RosterEntry(bytes: try reader.blob())
                guard entry.account == account else { throw RosterError.otherAccount }
                guard case .add = entry.action else { throw RosterError.malformed("a membership entry that adds nobody") }
                guard entry.author == signer else { throw RosterError.unknownAuthor }
                signer = entry.subject
                entries.append(entry)
            }
            guard reader.isAtEnd else { throw RosterError.malformed("bytes after a membership") }
            member = signer
            self.entries = entries
        } catch let error as RosterError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
    }

    package var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.raw(account)
        writer.varint(entries.count)
        for entry in entries { writer.blob(entry.bytes) }
        return writer.bytes
    }

    /// The account's ID as people see it: its founder's device ID.
    package var accountID: String { (try? DeviceID(publicKey: account).description) ?? "?" }

    /// The member's replica: the writer of its stamps.
    package var replica: ReplicaID { (try? WriteBlock.replica(of: member)) ?? ReplicaID(bytes: member) }
}

extension AccountMembership {
    /// Chains already read and checked in this process: a shared zone's every
    /// batch carries its writers' memberships, checked once, not per batch.
    private static let checked = Mutex<[[UInt8]: AccountMembership]>([:])
    static let maximumChecked = 4096

    /// `init(decoding:)`, from the chains checked already where it can.
    package static func decodingOnce(_ bytes: [UInt8]) throws(RosterError) -> AccountMembership {
        if let known = checked.withLock({ $0[bytes] }) { return known }
        let membership = try AccountMembership(decoding: bytes)
        checked.withLock { checked in
            if checked.count >= maximumChecked { checked.removeAll() }
            checked[bytes] = membership
        }
        return membership
    }
}
