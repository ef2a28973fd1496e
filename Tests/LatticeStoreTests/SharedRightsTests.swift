import Foundation
@testable import LatticeCore
@_spi(Tools) import LatticeCrypto
@testable import LatticeStore
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCore

/// A zone shared with other accounts, on stores on disk exchanging change
/// sets without sockets: accounts of two devices each (X owns, Y and Z take
/// part), permissions checked by every replica from the share the zone
/// carries and the memberships its change sets carry, also where a third
/// account relays.
@Suite struct SharedRightsTests {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-shared-\(UUID().uuidString)")
    let clock = ManualClock(1_700_000_000_000)

    func open(_ name: String) throws -> RecordStore {
        try RecordStore(directory: directory.appendingPathComponent(name), wallClock: { [clock] in clock.now })
    }

    /// `device` joins `founder`'s account, as pairing makes it.
    func join(_ device: RecordStore, to founder: RecordStore) throws {
        let roster = try founder.write { transaction -> AccountRoster in
            _ = try transaction.signRosterEntry(.add(name: "device"), subject: device.identity.publicKey)
            return try transaction.roster()
        }
        try device.write { _ = try $0.adoptRoster(roster, joining: true) }
    }

    func account(_ store: RecordStore) throws -> String { try store.read { try $0.accountID() } }

    /// The zone `Lists` of `owner`'s account, created and shared with `participants`.
    func shareLists(of owner: RecordStore, with participants: [(RecordStore, SharePermission)]) throws -> ZoneKey {
        let zone = ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: "Lists", ownerName: try account(owner)))
        try owner.write { transaction in
            _ = try transaction.createZone(zone)
            for (participant, permission) in participants { try transaction.setSharePermission(permission, of: try account(participant), in: zone) }
            try transaction.save("milk", type: "Item", in: zone, changes: [("title", .string("Milk"))])
        }
        clock.now += 5
        return zone
    }

    func save(_ store: RecordStore, _ name: String, _ title: String, in zone: ZoneKey) throws {
        try store.write { try $0.save(name, type: "Item", in: zone, changes: [("title", .string(title))]) }
        clock.now += 5
    }

    func permit(_ owner: RecordStore, _ participant: RecordStore, _ permission: SharePermission, in zone: ZoneKey) throws {
        try owner.write { try $0.setSharePermission(permission, of: try account(participant), in: zone) }
        clock.now += 5
    }

    /// A field of the share written as a modified client (or an earlier build) writes it, past every check.
    func writeShareField(_ store: RecordStore, _ field: String, _ value: FieldValue?, in zone: ZoneKey) throws {
        try writeShareFields(store, [(field, value)], in: zone)
    }

    /// Several fields of the share in one write (one stamp), as a modified client would.
    func writeShareFields(_ store: RecordStore, _ changes: [(String, FieldValue?)], in zone: ZoneKey) throws {
        try store.write { transaction in
            let previous = try #require(try transaction.record(named: Share.recordName, in: zone))
            let sync = try transaction.liveSyncState(of: zone)
            let stamp = transaction.nextStamp()
            let state = LocalWrite.save(previous: previous, recordName: Share.recordName, recordType: Share.recordType, changes: changes, replacement: .changedKeys, stamp: stamp)
            try transaction.store(state, previous: previous, in: zone)
            try transaction.recordLocalWrite(stamp, in: zone, sync: sync)
            transaction.noteLocalWrite(record: Share.recordName, stamp: stamp, in: zone)
        }
        clock.now += 5
    }

    @discardableResult
    /// Every record `store` holds in `zone`, by name: replicas that converged hold the same.
    func records(_ store: RecordStore, in zone: ZoneKey) throws -> [RecordState] {
        try store.read { try $0.records(changedAfter: 0, in: zone).map(\.state).sorted { $0.recordName < $1.recordName } }
    }

    func title(_ store: RecordStore, _ name: String, in zone: ZoneKey) throws -> String? {
        guard let state = try store.read({ try $0.record(name, in: zone) }), state.isAlive, case .string(let title)? = state[field: "title"] else { return nil }
        return title
    }

    @Test func readOnlyThenReadWriteThenRemovedHoldOnEveryReplica() throws {
        let x1 = try open("x1"), x2 = try open("x2"), y1 = try open("y1"), y2 = try open("y2")
        try join(x2, to: x1)
        try join(y2, to: y1)
        let zone = try shareLists(of: x1, with: [(y1, .readOnly)])
        try sync(x1, to: x2, zone, asANodeTells: true)
        try sync(x1, to: y1, zone, asANodeTells: true)
        try sync(y1, to: y2, zone, asANodeTells: true)
        #expect(try title(y2, "milk", in: zone) == "Milk")
        #expect(try y2.read { try $0.share(of: zone) }?.currentPermission(of: try account(y1)) == .readOnly)

        // Read-only: an honest device of Y refuses its own write at once.
        #expect(throws: ReplicaError.self) { try save(y1, "eggs", "Eggs", in: zone) }
        #expect(throws: ReplicaError.self) { try y1.write { _ = try $0.delete(["milk"], in: zone) } }
        // A modified client of Y writes anyway: X's devices refuse it, and so does Y's honest device.
        y2.ignoresWriteRights = true
        try save(y2, "forged", "Forged", in: zone)
        let atX = try sync(y2, to: x1, zone, asANodeTells: true)
        #expect(atX.recordsRefused == 1 && atX.refusal?.contains("not a read-write participant") == true, "\(atX.refusal ?? "none")")
        #expect(try sync(y2, to: y1, zone, asANodeTells: true).recordsRefused == 1)
        #expect(try title(x1, "forged", in: zone) == nil && title(y1, "forged", in: zone) == nil)

        // Read-write: Y's writes reach both of X's devices, through X1.
        try permit(x1, y1, .readWrite, in: zone)
        try sync(x1, to: y1, zone, asANodeTells: true)
        try save(y1, "eggs", "Eggs", in: zone)
        #expect(try sync(y1, to: x1, zone, asANodeTells: true).recordsRefused == 0)
        try sync(x1, to: x2, zone, asANodeTells: true)
        #expect(try title(x2, "eggs", in: zone) == "Eggs")
        // The write Y2 forged while read-only stays refused: a write is judged by the permission of its time.
        #expect(try sync(y2, to: x1, zone, asANodeTells: true).recordsRefused >= 1)
        #expect(try title(x1, "forged", in: zone) == nil)

        // Removed: its writes after the removal are refused everywhere; those before stay.
        try permit(x1, y1, .removed, in: zone)
        try sync(x1, to: y1, zone, asANodeTells: true)
        try sync(x1, to: x2, zone, asANodeTells: true)
        #expect(throws: ReplicaError.self) { try save(y1, "late", "Late", in: zone) }
        try save(y2, "late", "Late", in: zone)
        #expect(try sync(y2, to: x2, zone, asANodeTells: true).recordsRefused >= 1)
        #expect(try title(x2, "late", in: zone) == nil)
        #expect(try title(x2, "eggs", in: zone) == "Eggs")
    }

    @Test func aThirdAccountRelaysWithTheMembershipsAndItsForgeryIsRefusedAtBothEnds() throws {
        let x1 = try open("x1"), y1 = try open("y1"), z1 = try open("z1")
        let zone = try shareLists(of: x1, with: [(y1, .readWrite), (z1, .readOnly)])
        // X1 — Z1 — Y1: X1 and Y1 never meet.
        try sync(x1, to: z1, zone, asANodeTells: true)
        try sync(z1, to: y1, zone, asANodeTells: true)
        try save(y1, "eggs", "Eggs", in: zone)
        try sync(y1, to: z1, zone, asANodeTells: true)
        let atX = try sync(z1, to: x1, zone, asANodeTells: true)
        #expect(atX.recordsRefused == 0, "\(atX.refusal ?? "")")
        #expect(try title(x1, "eggs", in: zone) == "Eggs", "Y1's membership came with the zone through Z1")
        // Z is read-only; a modified Z writes and relays: refused at both ends.
        z1.ignoresWriteRights = true
        try save(z1, "forged", "Forged", in: zone)
        try save(z1, "eggs", "Rotten", in: zone)
        #expect(try sync(z1, to: x1, zone, asANodeTells: true).recordsRefused == 2)
        #expect(try sync(z1, to: y1, zone, asANodeTells: true).recordsRefused == 2)
        #expect(try title(x1, "eggs", in: zone) == "Eggs" && title(y1, "eggs", in: zone) == "Eggs")
        #expect(try title(x1, "forged", in: zone) == nil && title(y1, "forged", in: zone) == nil)
    }

    @Test func onlyTheOwnerChangesTheShareOrTheZoneAndAParticipantMayLeave() throws {
        let x1 = try open("x1"), y1 = try open("y1"), z1 = try open("z1")
        let zone = try shareLists(of: x1, with: [(y1, .readWrite)])
        try sync(x1, to: y1, zone, asANodeTells: true)
        // A read-write participant neither changes the share nor deletes the zone.
        #expect(throws: ReplicaError.self) { try y1.write { try $0.setSharePermission(.readWrite, of: try account(z1), in: zone) } }
        #expect(throws: ReplicaError.self) { try save(y1, Share.recordName, "mine", in: zone) }
        y1.ignoresWriteRights = true
        try y1.write { try $0.setSharePermission(.readWrite, of: try account(z1), in: zone) }
        #expect(try sync(y1, to: x1, zone, asANodeTells: true).recordsRefused == 1)
        #expect(try x1.read { try $0.share(of: zone) }?.currentPermission(of: try account(z1)) == nil)
        try y1.write { try $0.deleteZone(zone) }
        #expect(throws: WriteProofError.self) { try sync(y1, to: x1, zone, asANodeTells: true) }
        #expect(try title(x1, "milk", in: zone) == "Milk")

        // An honest participant leaves: the one share change that is not the owner's.
        let leaver = try open("leaver")
        try permit(x1, leaver, .readWrite, in: zone)
        try sync(x1, to: leaver, zone, asANodeTells: true)
        try leaver.write { try $0.setSharePermission(.removed, of: try account(leaver), in: zone) }
        clock.now += 5
        #expect(try sync(leaver, to: x1, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try x1.read { try $0.share(of: zone) }?.currentPermission(of: try account(leaver)) == .removed)
        #expect(throws: ReplicaError.self) { try save(leaver, "after", "After", in: zone) }
    }

    /// A device the owner's account removed from itself keeps no owner
    /// rights at the participants, which never hold the owner's roster: an
    /// owner device writes the removal and its mark into the share, and a
    /// participant refuses the removed device's later writes to the share,
    /// the zone and its records; one that took them before it learned drops
    /// them, and every replica ends alike (issue 38, finding 7).
    @Test func aDeviceRemovedFromTheOwnersAccountLosesOwnerRightsAtParticipants() throws {
        let x1 = try open("x1"), x2 = try open("x2"), y1 = try open("y1"), y2 = try open("y2")
        try join(x2, to: x1)
        try join(y2, to: y1)
        let zone = try shareLists(of: x1, with: [(y1, .readWrite)])
        try sync(x1, to: x2, zone, asANodeTells: true)
        // Control: before its removal, x2 writes as the owner, the share too.
        try save(x2, "before", "Before", in: zone)
        try x2.write { try $0.setSharePermission(.readOnly, of: try account(y1), in: zone) }
        clock.now += 5
        try x2.write { try $0.setSharePermission(.readWrite, of: try account(y1), in: zone) }
        clock.now += 5
        try sync(x2, to: x1, zone, asANodeTells: true)
        for participant in [y1, y2] { #expect(try sync(x2, to: participant, zone, asANodeTells: true).recordsRefused == 0) }
        #expect(try title(y1, "before", in: zone) == "Before")

        try x1.write { transaction in
            let held = try transaction.heldWrites(of: x2.replica)
            _ = try transaction.signRosterEntry(.remove(writesUpTo: held), subject: x2.identity.publicKey)
        }
        clock.now += 5
        let mark = try #require(try x1.read { try $0.share(of: zone) }?.removedDevices[x2.replica]?[try account(x1)])
        #expect(mark > .zero)

        // x2, removed, runs a modified client: it removes Y from the share, writes a record, and would delete the zone.
        x2.ignoresWriteRights = true
        try x2.write { try $0.setSharePermission(.removed, of: try account(y1), in: zone) }
        clock.now += 5
        try save(x2, "late", "Late", in: zone)
        // y2 takes them before it learns of the removal; y1 after.
        #expect(try sync(x2, to: y2, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try y2.read { try $0.share(of: zone) }?.currentPermission(of: try account(y1)) == .removed)
        try sync(x1, to: y1, zone, asANodeTells: true)
        let refused = try sync(x2, to: y1, zone, asANodeTells: true)
        #expect(refused.recordsRefused == 2, "\(String(describing: refused.refusal))")
        #expect(refused.refusal?.contains("was removed from account") == true, "\(String(describing: refused.refusal))")
        #expect(try title(y1, "late", in: zone) == nil && title(y1, "before", in: zone) == "Before")
        #expect(try y1.read { try $0.share(of: zone) }?.currentPermission(of: try account(y1)) == .readWrite)
        // Learning of the removal, y2 drops what it took, and gets the owner's share back.
        try sync(x1, to: y2, zone, asANodeTells: true)
        try sync(x1, to: y2, zone, asANodeTells: true)
        #expect(try title(y2, "late", in: zone) == nil && title(y2, "before", in: zone) == "Before")
        #expect(try y2.read { try $0.share(of: zone) }?.currentPermission(of: try account(y1)) == .readWrite)
        try sync(y1, to: y2, zone, asANodeTells: true)
        try sync(y2, to: y1, zone, asANodeTells: true)
        #expect(try records(y1, in: zone) == records(y2, in: zone))
        // Nor may it delete the zone.
        try x2.write { try $0.deleteZone(zone) }
        #expect(throws: WriteProofError.self) { try sync(x2, to: y1, zone, asANodeTells: true) }
        #expect(try title(y1, "milk", in: zone) == "Milk")
        // No device writes the field of its own removal, an owner device that is not removed either.
        try writeShareField(x1, Share.removedField(of: x1.replica, from: try account(x1)), .string("1"), in: zone)
        let own = try sync(x1, to: y1, zone, asANodeTells: true)
        #expect(own.recordsRefused == 1 && own.refusal?.contains("cannot undo its removal") == true, "\(String(describing: own.refusal))")
    }

    /// A device removed from a participant's account loses that account's
    /// rights at the owner and every other account: a device of the
    /// participant's account writes the removal and its mark into the
    /// share, as the owner's devices do for theirs; the owner refuses the
    /// removed device's later writes, drops those it took before it
    /// learned, and every replica ends alike (issue 38).
    @Test func aDeviceRemovedFromAParticipantsAccountLosesItsRightsEverywhere() throws {
        let x1 = try open("x1"), y1 = try open("y1"), y2 = try open("y2"), z1 = try open("z1")
        try join(y2, to: y1)
        let zone = try shareLists(of: x1, with: [(y1, .readWrite), (z1, .readWrite)])
        for device in [y1, y2, z1] { try sync(x1, to: device, zone, asANodeTells: true) }
        // Control: before its removal, y2 writes as its account, a read-write participant.
        try save(y2, "before", "Before", in: zone)
        #expect(try sync(y2, to: x1, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try title(x1, "before", in: zone) == "Before")
        try sync(y2, to: y1, zone, asANodeTells: true)

        try y1.write { transaction in
            let held = try transaction.heldWrites(of: y2.replica)
            _ = try transaction.signRosterEntry(.remove(writesUpTo: held), subject: y2.identity.publicKey)
        }
        clock.now += 5
        #expect(try y1.read { try $0.share(of: zone) }?.removedDevices[y2.replica]?[try account(y1)] != nil)
        // y2, removed, runs a modified client and keeps writing; z1 takes it before it learns of the removal.
        y2.ignoresWriteRights = true
        try save(y2, "late", "Late", in: zone)
        #expect(try sync(y2, to: z1, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try title(z1, "late", in: zone) == "Late")
        // The owner learns of the removal from y1's write to the share, then refuses y2's late write.
        #expect(try sync(y1, to: x1, zone, asANodeTells: true).recordsRefused == 0)
        let refused = try sync(y2, to: x1, zone, asANodeTells: true)
        #expect(refused.recordsRefused == 1, "\(String(describing: refused.refusal))")
        #expect(refused.refusal?.contains("was removed from account") == true, "\(String(describing: refused.refusal))")
        #expect(try title(x1, "late", in: zone) == nil && title(x1, "before", in: zone) == "Before")
        // z1 drops what it took once it learns; y1 refuses it by its roster; all end alike.
        try sync(x1, to: z1, zone, asANodeTells: true)
        #expect(try title(z1, "late", in: zone) == nil && title(z1, "before", in: zone) == "Before")
        #expect(throws: (any Error).self) { try sync(y2, to: y1, zone, asANodeTells: true) }
        for (from, to) in [(x1, y1), (y1, x1), (x1, z1), (z1, x1), (x1, y1)] { try sync(from, to: to, zone, asANodeTells: true) }
        #expect(try records(x1, in: zone) == records(y1, in: zone))
        #expect(try records(x1, in: zone) == records(z1, in: zone))
        // A participant's device may not write a removal from another account, even in the same write as one
        // from its own (the stamp excuses its own account's fields alone).
        try writeShareField(z1, Share.removedField(of: y1.replica, from: try account(y1)), .string("1"), in: zone)
        let forged = try sync(z1, to: x1, zone, asANodeTells: true)
        #expect(forged.recordsRefused == 1, "\(String(describing: forged.refusal))")
        try writeShareFields(y1, [
            (Share.removedField(of: y2.replica, from: try account(y1)), .string("2")),
            (Share.removedField(of: x1.replica, from: try account(x1)), .string("1")),
        ], in: zone)
        let bundled = try sync(y1, to: x1, zone, asANodeTells: true)
        #expect(bundled.recordsRefused == 1, "\(String(describing: bundled.refusal))")
        // Another spelling of a removal field (the replica in capitals) is no removal field: a participant may not write
        // it, so a removed device cannot raise another's mark through it. (z2, of z1's account, holds only the share
        // x1 took: z1's own copy carries the field refused above.)
        let z2 = try open("z2")
        try join(z2, to: z1)
        try sync(x1, to: z2, zone, asANodeTells: true)
        let shouting = "removed_" + (try account(z1)).filter { $0 != "-" } + "_" + z1.replica.description.uppercased()
        try writeShareField(z2, shouting, .string(String(UInt64.max)), in: zone)
        let respelled = try sync(z2, to: x1, zone, asANodeTells: true)
        #expect(respelled.recordsRefused == 1, "\(String(describing: respelled.refusal))")
        // Nor may an account record more removals than its roster can hold.
        let z3 = try open("z3")
        try join(z3, to: z1)
        try sync(x1, to: z3, zone, asANodeTells: true)
        let flood = (0..<(AccountRoster.maximumStoredEntries + 1)).map { index in
            (Share.removedField(of: ReplicaID(high: UInt64(index), low: 7), from: try! account(z1)), FieldValue.string("1"))
        }
        try writeShareFields(z3, flood, in: zone)
        let flooded = try sync(z3, to: x1, zone, asANodeTells: true)
        #expect(flooded.recordsRefused == 1 && flooded.refusal?.contains("more than its roster can hold") == true, "\(String(describing: flooded.refusal))")
    }

    /// The rights fuzzer's seed 72 (with honest participants revoked),
    /// minimised: a revoked participant's void edit had overwritten, on its
    /// own store, a write of its own that an owner device holds as a losing
    /// version. Dropping the void edit left only the overwritten version's
    /// ghost, so the participant held the record without that loser; it now
    /// forgets the record and gets it back whole.
    @Test func droppingAVoidEditThatOverwroteAValidOneBringsTheValidOneBackAsTheOthersHoldIt() throws {
        let x1 = try open("x1"), p = try open("p"), q = try open("q")
        let zone = try shareLists(of: x1, with: [(p, .readWrite), (q, .readWrite)])
        try sync(x1, to: p, zone, asANodeTells: true)
        try sync(x1, to: q, zone, asANodeTells: true)
        try save(p, "x0", "t5", in: zone)
        try sync(p, to: q, zone, asANodeTells: true)
        try save(p, "x0", "t6", in: zone)
        try save(x1, "x0", "t79", in: zone)
        try sync(q, to: x1, zone, asANodeTells: true)
        let owners = try #require(try x1.read { try $0.record("x0", in: zone) })
        #expect(owners.fields.first { $0.name == "title" }?.losers.map(\.value) == [.string("t5")])
        try permit(x1, p, .readOnly, in: zone)
        try sync(x1, to: p, zone, asANodeTells: true)
        try sync(x1, to: p, zone, asANodeTells: true)
        try sync(x1, to: q, zone, asANodeTells: true)
        #expect(try records(p, in: zone) == records(x1, in: zone))
        #expect(try records(q, in: zone) == records(x1, in: zone))
    }

    /// The rights fuzzer's seeds 230 and 5096, minimised: a removed
    /// participant deletes, after its removal, a record an honest
    /// participant created; the creator takes the delete before it learns of
    /// the removal, and dropping it then drops its own record. Its own
    /// vector entry covers the creation, and its later writes raise that
    /// entry further, so it tells peers an entry below the record's writes
    /// until the record comes back (`vectorToTell`); a state it wrote since
    /// of that name merges with the peer's whatever their vectors say.
    @Test func aDeviceThatDroppedARecordOfItsOwnGetsItBackFromThePeers() throws {
        let x1 = try open("x1"), p = try open("p"), c = try open("c")
        let zone = try shareLists(of: x1, with: [(p, .readWrite), (c, .readWrite)])
        for participant in [p, c] { try sync(x1, to: participant, zone, asANodeTells: true) }
        try save(c, "x0", "Mine", in: zone)
        try sync(c, to: x1, zone, asANodeTells: true)
        try sync(c, to: p, zone, asANodeTells: true)
        try permit(x1, p, .removed, in: zone)
        p.ignoresWriteRights = true
        try p.write { _ = try $0.delete(["x0"], in: zone) }
        clock.now += 5
        try sync(p, to: c, zone, asANodeTells: true)
        #expect(try title(c, "x0", in: zone) == nil)
        try sync(x1, to: c, zone, asANodeTells: true)
        #expect(try c.read { try $0.record("x0", in: zone) } == nil, "the void delete goes, and the record with it")
        // c writes on (its own entry rises), and writes x0 anew before the owner's copy comes back.
        try save(c, "other", "Other", in: zone)
        try save(c, "x0", "Again", in: zone)
        try sync(x1, to: c, zone, asANodeTells: true)
        try sync(c, to: x1, zone, asANodeTells: true)
        #expect(try c.read { try $0.ownRefetchNames(in: zone) }.isEmpty)
        #expect(try records(c, in: zone) == records(x1, in: zone))
        #expect(try title(c, "x0", in: zone) == "Again")
    }

    /// A read-only participant rewrites its own history in the share (to
    /// read-write, back to before its writes), writes, and leaves: the
    /// owner's history is the owner's alone, so every replica keeps it
    /// read-only and refuses its writes (issue 38, finding 1).
    @Test func aParticipantCannotRewriteItsPermissionAndLeaveToKeepItsWrites() throws {
        let x1 = try open("x1"), x2 = try open("x2"), y1 = try open("y1")
        try join(x2, to: x1)
        let zone = try shareLists(of: x1, with: [(y1, .readOnly)])
        try sync(x1, to: y1, zone, asANodeTells: true)
        let y = try account(y1)
        y1.ignoresWriteRights = true
        try y1.write { try $0.setSharePermission(.readWrite, of: y, in: zone) }
        clock.now += 5
        try save(y1, "evil", "Written read-only", in: zone)
        try y1.write { try $0.setSharePermission(.removed, of: y, in: zone) }
        clock.now += 5
        // The owner refuses the rewritten share and the write; so does its other device, relayed or not.
        let taken = try sync(y1, to: x1, zone, asANodeTells: true)
        #expect(taken.recordsRefused >= 1, "\(taken)")
        #expect(try title(x1, "evil", in: zone) == nil)
        #expect(try x1.read { try $0.share(of: zone) }?.currentPermission(of: y) == .readOnly)
        try sync(y1, to: x2, zone, asANodeTells: true)
        try sync(x1, to: x2, zone, asANodeTells: true)
        #expect(try title(x2, "evil", in: zone) == nil)
        #expect(try x2.read { try $0.share(of: zone) }?.currentPermission(of: y) == .readOnly)
        // A participant's leave names its own account only: one written for another is refused.
        let z1 = try open("z1")
        let z = try account(z1)
        try permit(x1, z1, .readWrite, in: zone)
        try sync(x1, to: y1, zone, asANodeTells: true)
        try y1.write { try $0.setSharePermission(.removed, of: z, in: zone) }
        #expect(try sync(y1, to: x1, zone, asANodeTells: true).recordsRefused >= 1)
        #expect(try x1.read { try $0.share(of: zone) }?.currentPermission(of: z) == .readWrite)
    }

    /// A participant's change set lists memberships of devices it made up
    /// (a chain of no entries needs no signature): the owner keeps only the
    /// memberships of the writers whose changes it stores (issue 38, finding 7).
    @Test func madeUpMembershipsInAChangeSetAreNotKept() throws {
        let x1 = try open("x1"), y1 = try open("y1")
        let zone = try shareLists(of: x1, with: [(y1, .readWrite)])
        try sync(x1, to: y1, zone, asANodeTells: true)
        try save(y1, "bread", "Bread", in: zone)
        let vector = try x1.read { try $0.syncState(of: zone)?.vector } ?? VersionVector()
        let bytes = try y1.changeSet(for: zone, since: vector)
        // The same change set, with 300 memberships of devices no one made.
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        var header = try #require(try reader.readHeader())
        var records: [RecordState] = []
        while let record = try reader.nextRecord() { records.append(record) }
        let blocks = try BlockProof.resolve(reader.proofs, records: records, header: header)
        let madeUp = (0..<300).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255) } }
        header.memberships += madeUp.map { $0 + [0] }
        let padded = try MemoryReplica.encode(header: header, records: records, proofs: ProofCollector(base: header.base, blocks: blocks))
        let summary = try x1.apply(padded)
        #expect(summary.recordsRefused == 0)
        #expect(try title(x1, "bread", in: zone) == "Bread")
        let kept = try x1.read { snapshot in try snapshot.memberships(of: madeUp.map { try WriteBlock.replica(of: $0) }) }
        #expect(kept.count == 0, "made-up memberships were kept")
        // The writer's own is kept: the owner relays its write to a third account's device.
        let y = try y1.read { try $0.memberships(of: [y1.replica]) }
        #expect(!y.isEmpty)
        #expect(try x1.read { try $0.memberships(of: [y1.replica]) }.count == y.count)
    }

    /// A removed participant sets its clock back and writes "before" its
    /// removal: no device of the owner vouches for that write, so every
    /// replica refuses it. A write the owner's other device took before it
    /// learned of the removal is vouched for by that device and reaches the
    /// revoking one, so the owner's devices converge (issue 38, finding 2).
    @Test func aRemovedParticipantThatSetsItsClockBackIsRefusedWhileWhatTheOwnersDevicesHeldStays() throws {
        let x1 = try open("x1"), x2 = try open("x2")
        try join(x2, to: x1)
        let yClock = ManualClock(clock.now)
        let y1 = try RecordStore(directory: directory.appendingPathComponent("y1"), wallClock: { [yClock] in yClock.now })
        let zone = try shareLists(of: x1, with: [(y1, .readWrite)])
        try sync(x1, to: x2, zone, asANodeTells: true)
        try sync(x1, to: y1, zone, asANodeTells: true)
        yClock.now = clock.now
        try save(y1, "eggs", "Eggs", in: zone)
        try sync(y1, to: x1, zone, asANodeTells: true)
        yClock.now = clock.now
        try save(y1, "pie", "Pie", in: zone)
        try sync(y1, to: x2, zone, asANodeTells: true)
        // X1 removes Y, holding "eggs" but not "pie"; X2 took "pie" before it learned of the removal.
        try permit(x1, y1, .removed, in: zone)
        let removal = try #require(try x1.read { try $0.share(of: zone) }?.participants[try account(y1)]?.last?.time)
        try sync(x1, to: y1, zone, asANodeTells: true)
        try sync(x1, to: x2, zone, asANodeTells: true)

        // Y's modified client sets its clock back and writes, stamped inside its read-write time.
        y1.ignoresWriteRights = true
        yClock.now -= 60_000
        try y1.write { transaction in
            transaction.clock = HybridLogicalClock()
            try transaction.save("late", type: "Item", in: zone, changes: [("title", .string("Late"))])
        }
        let late = try #require(try y1.read { try $0.record("late", in: zone) })
        #expect(late.created.time < removal, "the write is backdated to before the removal")
        for owner in [x1, x2] {
            let summary = try sync(y1, to: owner, zone, asANodeTells: true)
            #expect(summary.recordsRefused >= 1 && summary.refusal?.contains("vouches") == true, "\(summary.refusal ?? "none")")
            #expect(try title(owner, "late", in: zone) == nil)
        }
        // What X2 held before the removal reached it is vouched for and reaches X1; the owner's devices agree.
        #expect(try sync(x2, to: x1, zone, asANodeTells: true).recordsRefused == 0)
        try sync(x1, to: x2, zone, asANodeTells: true)
        for owner in [x1, x2] {
            #expect(try title(owner, "eggs", in: zone) == "Eggs" && title(owner, "pie", in: zone) == "Pie")
        }
        #expect(try records(x1, in: zone) == records(x2, in: zone))
    }

    /// A share revoked under an earlier build names no vouched writes: the
    /// removed participant's writes would be refused by every device that
    /// did not hold them. The owner's node settles that at its start, and a
    /// device that joins later takes them (the upgrade path).
    @Test func aShareRevokedWithoutVouchedWritesIsSettledByItsOwner() throws {
        let x1 = try open("x1"), y1 = try open("y1")
        let zone = try shareLists(of: x1, with: [(y1, .readWrite)])
        try sync(x1, to: y1, zone, asANodeTells: true)
        try save(y1, "eggs", "Eggs", in: zone)
        try sync(y1, to: x1, zone, asANodeTells: true)
        try permit(x1, y1, .removed, in: zone)
        // As an earlier build left it: the removal, and no list of what the owner held.
        let field = VouchedWrites.field(of: x1.replica)
        try writeShareField(x1, field, nil, in: zone)
        let late = try open("late")
        try join(late, to: x1)
        #expect(try sync(x1, to: late, zone, asANodeTells: true).recordsRefused >= 1, "without vouched writes the participant's write is refused")
        #expect(try title(late, "eggs", in: zone) == nil)
        #expect(try x1.write { try $0.settleRevocations(in: zone) } == 0)
        #expect(try x1.read { try $0.share(of: zone) }?.vouched.count == 1, "the owner vouches for the write it holds")
        clock.now += 5
        let later = try open("later")
        try join(later, to: x1)
        #expect(try sync(x1, to: later, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try title(later, "eggs", in: zone) == "Eggs")
        // The device that refused it before takes it now.
        #expect(try sync(x1, to: late, zone, asANodeTells: true).recordsRefused == 0)
        #expect(try title(late, "eggs", in: zone) == "Eggs")
    }

    /// A third account took a participant's edit before either learned that
    /// the owner removed that participant, holding no such edit: on learning
    /// of the removal it drops the edit, its vector goes back, and the
    /// owner's version of the record streams again, so the replicas converge
    /// (Keyhive's rule: a write not in a revocation's past is void everywhere).
    @Test func aWriteVoidedByARevocationIsDroppedWhereItWasTakenAndTheOwnersVersionComesBack() throws {
        let x1 = try open("x1"), y1 = try open("y1"), z1 = try open("z1")
        let zone = try shareLists(of: x1, with: [(y1, .readWrite), (z1, .readWrite)])
        try sync(x1, to: y1, zone, asANodeTells: true)
        try sync(x1, to: z1, zone, asANodeTells: true)
        try save(y1, "milk", "Sour", in: zone)
        try save(y1, "bread", "Bread", in: zone)
        try sync(y1, to: z1, zone, asANodeTells: true)
        #expect(try title(z1, "milk", in: zone) == "Sour")
        try save(z1, "jam", "Jam", in: zone)
        // The owner removes Y before anything of Y's reached it.
        try permit(x1, y1, .removed, in: zone)
        let learned = try sync(x1, to: z1, zone, asANodeTells: true)
        #expect(learned.recordsVoided == 2, "\(learned)")
        #expect(try title(z1, "bread", in: zone) == nil, "a record the void write created goes")
        try sync(x1, to: z1, zone, asANodeTells: true)
        #expect(try title(z1, "milk", in: zone) == "Milk", "the owner's version came back")
        #expect(try title(z1, "jam", in: zone) == "Jam", "Z's own write stays")
        try sync(z1, to: x1, zone, asANodeTells: true)
        #expect(try records(x1, in: zone) == records(z1, in: zone))
        // Y, told of its removal, drops them too.
        try sync(x1, to: y1, zone, asANodeTells: true)
        try sync(x1, to: y1, zone, asANodeTells: true)
        #expect(try title(y1, "milk", in: zone) == "Milk" && title(y1, "bread", in: zone) == nil)
    }

    /// Offers from other accounts' devices are kept at most 64 (the newest):
    /// a flood of offers cannot grow the store, and an invitation accepted
    /// is never pushed out by them.
    @Test func aFloodOfInvitationsKeepsTheNewestSixtyFourAndTheAcceptedOne() throws {
        let y1 = try open("y1")
        try y1.write { try $0.noteShareInvitation(ZoneID(zoneName: "Wanted", ownerName: "OWNER"), offeredBy: "friend", at: 1) }
        try y1.write { try $0.acceptShareInvitation(ZoneID(zoneName: "Wanted", ownerName: "OWNER")) }
        try y1.write { transaction in
            for index in 0..<500 {
                try transaction.noteShareInvitation(ZoneID(zoneName: "spam\(index)", ownerName: "STRANGER"), offeredBy: "stranger", at: UInt64(10 + index))
            }
        }
        let kept = try y1.read { try $0.shareInvitations() }
        #expect(kept.count == StoreTransaction.maximumInvitations)
        #expect(Set(kept.map(\.zone.zoneName)) == Set((436..<500).map { "spam\($0)" }), "the newest are kept")
        #expect(try y1.read { try $0.shareInvitations(accepted: true) }.map(\.zone.zoneName) == ["Wanted"])
    }

    /// Refusals of devices outside the account (a share's participants) are
    /// noted for `peers` and `doctor`, in a bounded number of rows: an
    /// account can make devices at will. A device already listed is always counted.
    @Test func refusalsOfDevicesOutsideTheAccountAreNotedWithinABound() throws {
        let x1 = try open("x1")
        try x1.write { transaction in
            for index in 0..<(StoreTransaction.maximumRefusingStrangers + 50) {
                try transaction.noteRefusedWrites(of: "device\(index)", reason: "made up", outsideAccount: true)
            }
            try transaction.noteRefusedWrites(of: "device0", reason: "again", outsideAccount: true)
        }
        let rows = try x1.read { try $0.peers() }
        #expect(rows.count == StoreTransaction.maximumRefusingStrangers)
        #expect(try x1.read { try $0.peer("device0") }?.refusedWrites == 2)
    }
}
