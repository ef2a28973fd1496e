@testable import LatticeCore
import Testing
@_spi(Tools) import LatticeCore

/// Public record names qualified by their creator: the one spelling, what
/// a store takes from the wire, and which stored name a plain one reaches.
@Suite struct PublicRecordNameTests {
    let a = ReplicaID(high: 0xABCD_EF01_2345_6789, low: 2), m = ReplicaID(high: 9, low: 0xFEED)

    /// A record created by `creator`, with no fields (the rules read its name and creation).
    static func state(_ name: String, by creator: ReplicaID, causalLength: UInt64 = 1) -> RecordState {
        let stamp = Stamp(time: HLCTimestamp(milliseconds: 1, counter: 0), replica: creator)
        return RecordState(recordName: name, causalLength: causalLength, recordType: "Item", typeStamp: stamp, created: stamp, fields: [], vector: VersionVector())
    }

    @Test func aQualifiedNameHasOneSpellingAndGivesBackItsPlainName() {
        let stored = PublicRecordName.qualified("lamp", by: a)
        #expect(PublicRecordName.parts(of: stored).creator == a)
        #expect(PublicRecordName.plain(stored) == "lamp")
        #expect(Limits.isStoredRecordName(stored))
        // Another spelling of the replica, or anything else after a '/', is no qualified name.
        #expect(PublicRecordName.parts(of: "lamp/" + a.description.uppercased()).creator == nil)
        #expect(!Limits.isStoredRecordName("lamp/" + a.description.uppercased()))
        #expect(!Limits.isStoredRecordName("lamp/shade"))
        #expect(!Limits.isStoredRecordName("/" + a.description))
        #expect(PublicRecordName.plain("lamp") == "lamp")
    }

    @Test func aPlainNameReachesTheOwnRecordThenTheFirstLiveOneHeld() throws {
        func state(_ name: String, by creator: ReplicaID, alive: Bool = true) -> RecordState {
            Self.state(name, by: creator, causalLength: alive ? 1 : 2)
        }
        let theirs = PublicRecordName.qualified("lamp", by: m), mine = PublicRecordName.qualified("lamp", by: a)
        let held = [(name: theirs, state: Optional(state(theirs, by: m))), (name: mine, state: Optional(state(mine, by: a)))]
        for writing in [false, true] {
            #expect(PublicRecordName.resolve("lamp", among: held, writer: a, isOwn: { $0 == a }, writing: writing) == mine)
        }
        // Another device's record, for a read; for a write too, which the creator rule then refuses.
        #expect(PublicRecordName.resolve("lamp", among: [held[0]], writer: a, isOwn: { $0 == a }, writing: false) == theirs)
        #expect(PublicRecordName.resolve("lamp", among: [held[0]], writer: a, isOwn: { $0 == a }, writing: true) == theirs)
        // A write of a name held nowhere here takes the writer's own qualified name; a read finds nothing.
        #expect(PublicRecordName.resolve("lamp", among: [], writer: a, isOwn: { $0 == a }, writing: true) == mine)
        #expect(PublicRecordName.resolve("lamp", among: [], writer: a, isOwn: { $0 == a }, writing: false) == "lamp")
        // A read prefers a live record to one deleted, whichever came first; a name spelled whole is taken as it is.
        let other = ReplicaID(high: 5, low: 5), third = PublicRecordName.qualified("lamp", by: other)
        let deletedFirst = [(name: theirs, state: Optional(state(theirs, by: m, alive: false))), (name: third, state: Optional(state(third, by: other)))]
        #expect(PublicRecordName.resolve("lamp", among: deletedFirst, writer: a, isOwn: { $0 == a }, writing: false) == third)
        #expect(PublicRecordName.resolve(theirs, among: held, writer: a, isOwn: { $0 == a }, writing: false) == theirs)
        // Another device's deleted record leaves the plain name to a creation of this device's own.
        #expect(PublicRecordName.resolve("lamp", among: [deletedFirst[0]], writer: a, isOwn: { $0 == a }, writing: true) == mine)
    }

    @Test func aStateNamedForAnotherCreatorIsRefused() {
        let named = PublicRecordName.qualified("lamp", by: a)
        let forged = Self.state(named, by: m)
        #expect(WriteRights.publicRefusal(forged, sameAccount: ==)?.contains("named for replica") == true)
        let honest = Self.state(named, by: a)
        #expect(WriteRights.publicRefusal(honest, sameAccount: ==) == nil)
    }
}
