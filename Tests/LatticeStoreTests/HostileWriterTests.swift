import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@testable import LatticeStore
import LatticeTestSupport
import Testing

/// A trusted device that lies about other devices' writes, driven without
/// sockets: stores on disk exchange change sets, one of them (B) hand-made.
/// Each forgery is refused whole by the honest store (C), changes nothing
/// there, says why, and A, B and C still converge on the honest data.
@Suite struct HostileWriterTests {
    let movies = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    let books = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Books"))
    let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-hostile-\(UUID().uuidString)")
    let clock = ManualClock(1_700_000_000_000)

    /// A, B and C hold A's Movies (m1, m2) and Books (b1); B has written m3.
    func honestStores() throws -> (a: RecordStore, b: RecordStore, c: RecordStore) {
        func open(_ name: String) throws -> RecordStore {
            try RecordStore(directory: directory.appendingPathComponent(name), wallClock: { [clock] in clock.now })
        }
        let a = try open("a")
        let b = try open("b")
        let c = try open("c")
        try a.write { _ = try $0.createZone(movies) }
        try a.write { _ = try $0.createZone(books) }
        try a.write { try $0.save("m1", type: "Movie", in: movies, changes: [("title", "Up"), ("rating", .int64(4))]) }
        try a.write { try $0.save("m2", type: "Movie", in: movies, changes: [("title", "Cars")]) }
        try a.write { try $0.save("b1", type: "Book", in: books, changes: [("title", "Dune")]) }
        for target in [b, c] { for zone in [movies, books] { try sync(a, to: target, zone) } }
        clock.now += 10
        try b.write { try $0.save("m3", type: "Movie", in: movies, changes: [("title", "Coco")]) }
        try sync(b, to: c, movies)
        return (a, b, c)
    }

    /// A change set taken apart: its header, records and resolved blocks.
    struct Parts {
        var header: ChangeSetHeader
        var records: [RecordState]
        var blocks: [WriteBlock]

        init(_ bytes: [UInt8]) throws {
            var reader = ChangeSetReader(source: ArrayByteSource(bytes))
            header = try reader.readHeader()!
            records = []
            while let record = try reader.nextRecord() { records.append(record) }
            blocks = try BlockProof.resolve(reader.proofs, records: records, header: header)
        }

        /// Put back together, each write proven with the blocks at hand (as a relay would).
        func bytes() throws -> [UInt8] {
            var header = header
            var replicas = Set(header.replicas)
            for record in records { for entry in record.vector.entries { replicas.insert(entry.replica) } }
            header.replicas = replicas.sorted()
            return try MemoryReplica.encode(header: header, records: records, proofs: ProofCollector(base: header.base, blocks: blocks))
        }
    }

    /// What a store holds, to tell that a refusal changed nothing.
    func contents(_ store: RecordStore) throws -> [String] {
        try store.read { snapshot in
            try [movies, books].flatMap { zone -> [String] in
                let sync = try snapshot.syncState(of: zone)
                return ["\(zone): \(String(describing: sync))"] + (try snapshot.records(changedAfter: 0, in: zone).map { "\($0.state)" })
            }
        } + ["sequence \(try store.currentSequence())"]
    }

    /// A value changed under its writer's signature: the digest or the block's signature no longer holds.
    static func isTamperedValue(_ error: WriteProofError) -> Bool {
        switch error {
        case .tampered, .badSignature: true
        default: false
        }
    }

    /// What `store` holds of Movies, as the base a relay builds on.
    func vector(_ store: RecordStore) throws -> VersionVector { try store.read { try $0.syncState(of: movies)!.vector } }

    /// Delivers `bytes` to C, expects a refusal for the stated reason, and that C is as it was.
    func expectRefused(_ bytes: [UInt8], by c: RecordStore, _ reason: (WriteProofError) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = try contents(c)
        do {
            try c.apply(bytes)
            Issue.record("the forgery was applied", sourceLocation: sourceLocation)
        } catch let error as WriteProofError {
            #expect(reason(error), "refused for another reason: \(error)", sourceLocation: sourceLocation)
        }
        #expect(try contents(c) == before, "a refused change set changed the store", sourceLocation: sourceLocation)
    }

    /// After the attack, honest data still flows between all three and they end equal.
    func expectHonestConvergence(_ a: RecordStore, _ b: RecordStore, _ c: RecordStore, also: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        clock.now += 10
        try a.write { try $0.save("m1", type: "Movie", in: movies, changes: [("rating", .int64(5))]) }
        try c.write { try $0.save("m4", type: "Movie", in: movies, changes: [("title", "Soul")]) }
        for _ in 0..<2 {
            for (from, to) in [(a, b), (b, c), (c, a), (a, c), (c, b), (b, a)] { for zone in [movies, books] { try sync(from, to: to, zone) } }
        }
        let states = try [a, b, c].map { store in try store.read { try $0.records(changedAfter: 0, in: movies).map(\.state).sorted { $0.recordName < $1.recordName } } }
        #expect(states[0] == states[1] && states[1] == states[2], sourceLocation: sourceLocation)
        #expect(states[0].map(\.recordName) == ["m1", "m2", "m3", "m4"] + also, sourceLocation: sourceLocation)
        #expect(states[0].first?[field: "rating"] == .int64(5), sourceLocation: sourceLocation)
    }

    @Test("(a) a write stamped with another device's replica ID") func aWriteStampedWithAnotherDevicesReplicaIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        // B writes as A: a replica under A's ID that cannot sign as A.
        let impostor = MemoryReplica(replica: a.replica, wallClock: { [clock] in clock.now })
        try impostor.apply(try a.changeSet(for: movies, since: VersionVector()))
        clock.now += 10
        try impostor.save("m1", type: "Movie", in: movies, changes: [("title", "Down")])
        let forged = try impostor.makeChangeSet(for: movies, since: try vector(c))
        try expectRefused(forged, by: c) { if case .unproven(let stamp, _) = $0 { stamp.replica == a.replica } else { false } }
        // Wrapped in B's own signed change set, it is refused just the same.
        var parts = try Parts(try b.changeSet(for: movies, since: VersionVector()))
        parts.records = parts.records.map { $0.recordName == "m1" ? impostor.record("m1", in: movies)! : $0 }
        try expectRefused(try parts.bytes(), by: c) { _ in true }
        try expectHonestConvergence(a, b, c)
    }

    @Test("(b) another device's stamp re-used with another value") func anotherDevicesStampReusedWithAnotherValueIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        var parts = try Parts(try a.changeSet(for: movies, since: VersionVector()))
        // A new record "m9" carrying A's stamp of m1, with B's value.
        var copy = parts.records.first { $0.recordName == "m1" }!
        copy.recordName = "m9"
        copy.fields = copy.fields.map { field in
            var field = field
            if field.name == "title" { field.value = .string("Evil") }
            return field
        }
        parts.records = [copy]
        try expectRefused(try parts.bytes(), by: c, Self.isTamperedValue)
        try expectHonestConvergence(a, b, c)
    }

    /// The receiver already holds A's write; the relay brings a new write of
    /// its own to that record, and A's value changed under A's stamp (one
    /// that wins a tie of stamps). Each side's view of A's write is checked
    /// against the other's, not taken on the relay's word.
    @Test("(b2) another device's held write changed beside a new one") func aHeldWriteChangedBesideANewOneIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        clock.now += 10
        try b.write { try $0.save("m1", type: "Movie", in: movies, changes: [("year", .int64(2009))]) }
        // Since C's vector: A's block is not sent (C holds A's write), so only C's own copy can tell.
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        #expect(parts.records.map(\.recordName) == ["m1"])
        let aWrite = try #require(parts.records[0].liveStamps.first { $0.replica == a.replica })
        #expect(!parts.blocks.contains { $0.replica == a.replica && ($0.entries ?? []).contains { $0.time == aWrite.time } })
        let index = parts.records.firstIndex { $0.recordName == "m1" }!
        parts.records[index].fields = parts.records[index].fields.map { field in
            var field = field
            // Longer than "Up": wins the tie of equal stamps, so the merge would show it.
            if field.name == "title" { field.value = .string("Up, the director's cut") }
            return field
        }
        try expectRefused(try parts.bytes(), by: c, Self.isTamperedValue)
        try expectHonestConvergence(a, b, c)
    }

    /// A state that keeps a ghost of a part it also shows: its writer can sign
    /// that view, but a merge drops the ghost and would hold a view of the
    /// write no one signed. The merged state is then judged whole, and refused
    /// (found by a review of issue 39's proof check).
    @Test("(b3) a ghost of a part the state shows") func aGhostOfAPartTheStateShowsIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        clock.now += 10
        try b.write { try $0.save("m1", type: "Movie", in: movies, changes: [("year", .int64(2009))]) }
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        let index = try #require(parts.records.firstIndex { $0.recordName == "m1" })
        let year = try #require(parts.records[index].fields.first { $0.name == "year" })
        parts.records[index].ghosts.append(WriteGhost(stamp: year.stamp, key: "year", item: [0, 1, 2]))
        parts.records[index].ghosts.sort { $0.stamp != $1.stamp ? $0.stamp < $1.stamp : $0.key < $1.key }
        // B signs that view itself (a modified client may): its block, sealed again over the view's digest.
        let forged = WriteDigest.record(parts.records[index], stamp: year.stamp, in: movies)
        let blockIndex = try #require(parts.blocks.firstIndex { $0.replica == b.replica && $0.digest(at: year.stamp.time) != nil })
        let signed = parts.blocks[blockIndex]
        let entries = try #require(signed.entries).map { $0.time == year.stamp.time ? WriteBlock.Entry(time: $0.time, digest: forged) : $0 }
        parts.blocks[blockIndex] = try WriteBlock.seal(entries, last: signed.last, in: movies, by: b.identity)
        try expectRefused(try parts.bytes(), by: c, Self.isTamperedValue)
        try expectHonestConvergence(a, b, c)
    }

    @Test("(c) a tampered relay of a third device's write") func aTamperedRelayOfAThirdDevicesWriteIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        clock.now += 10
        try a.write { try $0.save("m2", type: "Movie", in: movies, changes: [("title", "Cars 2")]) }
        try sync(a, to: b, movies)
        // B relays A's new write to C with the value changed, under A's stamp and A's block.
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        #expect(parts.records.map(\.recordName) == ["m2"])
        parts.records[0].fields = parts.records[0].fields.map { field in
            var field = field
            field.value = .string("Trucks")
            return field
        }
        try expectRefused(try parts.bytes(), by: c, Self.isTamperedValue)
        // What A signed covers the parts a later write replaced (the record's
        // ghosts): a store that never saw them refuses the record without them.
        clock.now += 10
        try a.write { try $0.save("m1", type: "Movie", in: movies, changes: [("title", "Up!")]) }
        var ghosted = try Parts(try a.changeSet(for: movies, since: VersionVector()))
        let index = ghosted.records.firstIndex { $0.recordName == "m1" }!
        #expect(!ghosted.records[index].ghosts.isEmpty)
        ghosted.records[index].ghosts = []
        let fresh = try RecordStore(directory: directory.appendingPathComponent("d"), wallClock: { [clock] in clock.now })
        try expectRefused(try ghosted.bytes(), by: fresh) { error in
            switch error {
            case .tampered(let stamp, _): stamp.replica == a.replica
            case .badSignature(let replica): replica == a.replica
            default: false
            }
        }
        try expectHonestConvergence(a, b, c)
    }

    @Test("(h) a relay that names another author for a write") func aRelayThatChangesAWritesAuthorIsRefusedAndHistoryKeepsTheWriter() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        clock.now += 10
        try a.write { try $0.save("m2", type: "Movie", in: movies, changes: [("title", "Cars 2")]) }
        try sync(a, to: b, movies)
        func history(_ store: RecordStore) throws -> [HistoryEntry] {
            try store.read { try $0.historyEntries(HistoryFilter()) }.filter { $0.zone == movies && $0.record == "m2" }
        }
        let before = try history(c).count
        // B relays A's write to C as its own (and as a third replica's): the stamp's writer is what history shows.
        for author in [b.replica, ReplicaID(high: 7, low: 7)] {
            var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
            #expect(parts.records.map(\.recordName) == ["m2"])
            parts.records[0].fields = parts.records[0].fields.map { field in
                var field = field
                if field.stamp.replica == a.replica { field.stamp = Stamp(time: field.stamp.time, replica: author) }
                return field
            }
            parts.records[0].vector.advance(author, to: parts.records[0].fields.map(\.stamp.time).max()!)
            try expectRefused(try parts.bytes(), by: c) { error in
                switch error {
                case .unproven(let stamp, _), .tampered(let stamp, _): stamp.replica == author
                case .beyondSignedHead(let replica, _, _, _), .badSignature(let replica): replica == author
                default: false
                }
            }
            #expect(try history(c).count == before, "a refused relay left a history entry")
        }
        // Relayed honestly, C's entry names A, in the commit A's own history gives it.
        try sync(b, to: c, movies)
        let relayed = try #require(try history(c).last)
        let written = try #require(try history(a).last)
        #expect(relayed.author == a.replica && relayed.commit == written.commit)
        #expect(relayed.changes.map(\.field) == ["title"] && relayed.changes.first?.oldValue == .string("Cars"))
        try expectHonestConvergence(a, b, c)
    }

    @Test("(d) a claim beyond what the writer signed") func aClaimBeyondWhatTheWriterSignedIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        // A writes offline; B never hears of it and claims C holds A's writes up to "now".
        clock.now += 10
        try a.write { try $0.save("m2", type: "Movie", in: movies, changes: [("title", "Offline edit")]) }
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        parts.header.top.advance(a.replica, to: HLCTimestamp(milliseconds: clock.now + 5, counter: 0))
        try expectRefused(try parts.bytes(), by: c) { if case .beyondSignedHead(let replica, _, _, _) = $0 { replica == a.replica } else { false } }
        // A record's vector inflated the same way is refused too.
        var record = try Parts(try b.changeSet(for: movies, since: VersionVector()))
        record.records[0].vector.advance(a.replica, to: HLCTimestamp(milliseconds: clock.now + 5, counter: 0))
        try expectRefused(try record.bytes(), by: c) { if case .beyondSignedHead = $0 { true } else { false } }
        // A's offline edit still reaches C, which would have skipped it had it taken the claim.
        try sync(a, to: c, movies)
        #expect(try c.read { try $0.record("m2", in: movies) }?[field: "title"] == "Offline edit")
        try expectHonestConvergence(a, b, c)
    }

    @Test("(e) a zone deletion stamped as another device") func aZoneDeletionStampedAsAnotherDeviceIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        clock.now += 10
        parts.header.zoneState = ZoneState(causalLength: parts.header.zoneState.causalLength + 1, stamp: Stamp(time: HLCTimestamp(milliseconds: clock.now, counter: 0), replica: a.replica))
        parts.header.top.advance(a.replica, to: parts.header.zoneState.stamp.time)
        parts.records = []
        try expectRefused(try parts.bytes(), by: c) { error in
            switch error {
            case .unproven(let stamp, _), .tampered(let stamp, _): stamp.replica == a.replica
            case .beyondSignedHead(let replica, _, _, _): replica == a.replica
            default: false
            }
        }
        #expect(try c.read { try $0.syncState(of: movies)?.zoneState.exists } == true)
        try expectHonestConvergence(a, b, c)
    }

    @Test("(f) a signed block replayed into another zone") func aSignedBlockReplayedIntoAnotherZoneIsRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c) = try honestStores()
        // A's signed write to Books, replayed as a write to Movies with A's Books block.
        let book = try Parts(try a.changeSet(for: books, since: VersionVector()))
        var parts = try Parts(try b.changeSet(for: movies, since: try vector(c)))
        var record = book.records.first { $0.recordName == "b1" }!
        record.recordType = "Movie"
        parts.records = [record]
        parts.blocks += book.blocks.map { block in
            var replayed = block
            replayed.zone = movies
            return replayed
        }
        try expectRefused(try parts.bytes(), by: c) { error in
            switch error {
            case .badSignature, .unproven, .tampered: true
            default: false
            }
        }
        // An old head of A's, replayed as it was, changes nothing and is no error.
        let sequence = try c.currentSequence()
        try c.apply(try a.changeSet(for: movies, since: VersionVector()))
        #expect(try c.currentSequence() == sequence)
        try expectHonestConvergence(a, b, c)
    }

    /// A, B and C in A's account with a fourth device, R, whose m5 all three hold; then A removes R.
    func storesWithRemovedDevice() throws -> (a: RecordStore, b: RecordStore, c: RecordStore, r: RecordStore) {
        let (a, b, c) = try honestStores()
        let r = try RecordStore(directory: directory.appendingPathComponent("r"), wallClock: { [clock] in clock.now })
        try a.write { transaction in
            for store in [b, c, r] { _ = try transaction.signRosterEntry(.add(name: "x"), subject: store.identity.publicKey) }
        }
        let roster = try a.read { try $0.roster() }
        for store in [b, c, r] { try store.write { _ = try $0.adoptRoster(roster, joining: true) } }
        try sync(a, to: r, movies)
        clock.now += 10
        try r.write { try $0.save("m5", type: "Movie", in: movies, changes: [("title", "Luca")]) }
        for store in [a, b, c] { try sync(r, to: store, movies) }
        try a.write { _ = try $0.signRosterEntry(.remove(writesUpTo: try $0.heldWrites(of: r.replica)), subject: r.identity.publicKey) }
        return (a, b, c, r)
    }

    @Test("(g) a removed device's later writes") func aRemovedDevicesLaterWritesAreRefused() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c, r) = try storesWithRemovedDevice()
        try c.write { _ = try $0.adoptRoster(try a.read { try $0.roster() }) }
        #expect(try c.read { try $0.peer(r.identity.deviceID.description) }?.trusted == false)
        // R, unaware, writes on; a relay hands C what R wrote since, as R signed it.
        clock.now += 10
        try r.write { try $0.save("m1", type: "Movie", in: movies, changes: [("title", "Hijacked")]) }
        try r.write { try $0.save("m6", type: "Movie", in: movies, changes: [("title", "Elio")]) }
        let later = try r.changeSet(for: movies, since: try vector(c))
        try expectRefused(later, by: c) { if case .writerRefused(let replica, _) = $0 { replica == r.replica } else { false } }
        // Its writes from before the removal still pass: a full change set of R's only holds them back for the later ones.
        #expect(try c.read { try $0.record("m5", in: movies) }?[field: "title"] == "Luca")
        try expectHonestConvergence(a, b, c, also: ["m5"])
    }

    /// A member that took a removed device's later writes before it learnt of
    /// the removal says so in the roster; every member then keeps them, and all converge.
    @Test func aMemberThatHeldARemovedDevicesLaterWritesVouchesForThemAndAllConverge() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (a, b, c, r) = try storesWithRemovedDevice()
        clock.now += 10
        try r.write { try $0.save("m6", type: "Movie", in: movies, changes: [("title", "Elio")]) }
        try sync(r, to: b, movies) // b has not heard of the removal yet
        try c.write { _ = try $0.adoptRoster(try a.read { try $0.roster() }) }
        #expect(throws: WriteProofError.self) { try sync(b, to: c, movies) }
        // b learns of the removal, signs what it held, and the roster reaches the others.
        try b.write { _ = try $0.adoptRoster(try a.read { try $0.roster() }) }
        let vouched = try b.read { try $0.roster() }
        #expect(vouched.state.removed[r.identity.publicKey]?.writesUpTo == (try b.read { try $0.heldWrites(of: r.replica) }))
        for store in [a, c] { try store.write { _ = try $0.adoptRoster(vouched) } }
        try expectHonestConvergence(a, b, c, also: ["m5", "m6"])
        #expect(try c.read { try $0.record("m6", in: movies) }?[field: "title"] == "Elio")
        // What R writes after that is still refused.
        clock.now += 10
        try r.write { try $0.save("m7", type: "Movie", in: movies, changes: [("title", "Wish")]) }
        try expectRefused(try r.changeSet(for: movies, since: try vector(c)), by: c) { if case .writerRefused = $0 { true } else { false } }
    }
}
