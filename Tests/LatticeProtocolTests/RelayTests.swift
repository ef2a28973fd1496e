@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Testing

/// Relaying in the session, with values: commits from the peer itself or
/// from devices that stream to it are not streamed again, a stream that
/// skipped them tells no cursor past them, and a lost source makes the
/// stream go again from before its first skip.
@Suite struct RelayTests {
    let ours = Hello(container: "app", zones: [ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil)])
    var theirs: Hello {
        var hello = Hello(container: "app", zones: [ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaB, 4)), resume: nil)])
        hello.relays = true
        return hello
    }

    /// A session with peer "P" whose stream has sent everything up to sequence 5, and has seen sequence 5.
    func caughtUp(peerRelays: Bool = true, access: PeerAccess = .account) -> SyncSession {
        var session = SyncSession(localHello: ours, access: access)
        session.peerDevice = "P"
        _ = session.start()
        var hello = theirs
        hello.relays = peerRelays
        _ = session.receive(.hello(hello))
        _ = session.batchProduced(.nothing(upTo: .end(of: 5), zoneState: zoneState))
        _ = session.localCommit(zones: [notes], roster: nil, changes: LocalChanges(zones: [notes], roster: [], sequence: 5))
        _ = session.batchProduced(.nothing(upTo: .end(of: 5), zoneState: zoneState))
        return session
    }

    func changes(_ sequence: UInt64, _ sources: [UInt64: String] = [:]) -> LocalChanges {
        LocalChanges(zones: [notes], roster: [], sequence: sequence, sources: sources)
    }

    func produced(_ actions: [SyncSession.Action]) -> BatchRequest? {
        for case .produce(let request) in actions { return request }
        return nil
    }

    func sentParts(_ actions: [SyncSession.Action]) -> [ChangesPart] {
        actions.compactMap { if case .send(.changes(let part)) = $0 { return part } else { return nil } }
    }

    func closeReason(_ actions: [SyncSession.Action]) -> ProtocolError? {
        for case .close(let reason) in actions { return reason }
        return nil
    }

    @Test func aCommitFromThePeerItselfIsNotStreamedBack() {
        var session = caughtUp(peerRelays: false)
        #expect(session.localCommit(zones: [notes], roster: nil, changes: changes(6, [6: "P"])).isEmpty)
        // A local commit re-opens the stream after what it skipped.
        #expect(produced(session.localCommit(zones: [notes], roster: nil, changes: changes(7)))?.after == .end(of: 6))
    }

    @Test func aRelayedCommitIsSkippedOnlyForPeersItsSourceStreamsTo() {
        var session = caughtUp()
        _ = session.coverRelays(from: ["S"])
        #expect(session.localCommit(zones: [notes], roster: nil, changes: changes(6, [6: "S"])).isEmpty)
        // From a device that does not stream to the peer: streamed, once the peer said it holds what was skipped.
        #expect(session.localCommit(zones: [notes], roster: nil, changes: changes(7, [7: "T"])) == [.send(.holdsRequest)])
        let request = produced(session.receive(.holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaB, 4)), resume: nil)])))
        #expect(request?.after == .end(of: 5))
    }

    @Test func commitsOfUnknownSourceOrAStreamNotCaughtUpAreStreamed() {
        var session = caughtUp()
        _ = session.coverRelays(from: ["S"])
        // Sequence 6 is not known to come from anyone: local.
        #expect(produced(session.localCommit(zones: [notes], roster: nil, changes: changes(7, [7: "S"]))) != nil)
        // The stream is being produced: a relay does not skip it (it is checked again after).
        #expect(session.localCommit(zones: [notes], roster: nil, changes: changes(8, [8: "S"])).isEmpty)
        let after = session.batchProduced(.nothing(upTo: .end(of: 7), zoneState: zoneState))
        #expect(produced(after)?.after == .end(of: 7))
    }

    @Test func withoutRelayingOnBothSidesOtherSourcesAreStreamed() {
        var session = caughtUp(peerRelays: false)
        _ = session.coverRelays(from: ["S"])
        #expect(produced(session.localCommit(zones: [notes], roster: nil, changes: changes(6, [6: "S"]))) != nil)
        var stranger = caughtUp(access: .publicOnly)
        _ = stranger.coverRelays(from: ["S"])
        #expect(!stranger.relaying)
    }

    @Test func aLocalCommitAfterASkipAsksWhatThePeerHoldsBeforeItClaims() {
        var session = caughtUp()
        _ = session.coverRelays(from: ["S"])
        _ = session.localCommit(zones: [notes], roster: nil, changes: changes(6, [6: "S"]))
        // Sequence 7 is local: its final batch would claim sequence 6 too, which the
        // peer may not hold yet. The stream waits for the peer's vectors.
        let local = session.localCommit(zones: [notes], roster: nil, changes: changes(7))
        #expect(local == [.send(.holdsRequest)])
        #expect(!session.isQuiescent)
        let held = vector((replicaB, 9))
        let request = produced(session.receive(.holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: held, resume: nil)])))
        #expect(request?.after == .end(of: 5), "it goes again from before the skip")
        #expect(request.map { $0.peerVector.dominates(held) } == true, "sending only what the peer lacks")
        // Until it reached the end again, its batches tell the peer no cursor past the skip.
        let sent = sentParts(session.batchProduced(OutgoingBatch(bytes: [1, 2], cursor: .end(of: 7), final: true, records: 1, zoneState: zoneState, claimedTop: vector((replicaA, 4)))))
        #expect(sent.last?.end?.cursor == .end(of: 5))
        #expect(closeReason(session.receive(.acknowledgement(Acknowledgement(zone: notes, cursor: .end(of: 5), vector: vector((replicaA, 4)))))) == nil)
        _ = session.localCommit(zones: [notes], roster: nil, changes: changes(8))
        let next = sentParts(session.batchProduced(OutgoingBatch(bytes: [3], cursor: .end(of: 8), final: true, records: 1, zoneState: zoneState, claimedTop: vector((replicaA, 5)))))
        #expect(next.last?.end?.cursor == .end(of: 8))
    }

    @Test func aStoreBackAtAnOlderCopyStreamsItsNewCommits() {
        var session = caughtUp()
        // The store went back to an older copy: its sequence is 3 now, behind the stream's cursor.
        let reopened = session.localCommit(zones: [notes], roster: nil, changes: changes(3))
        #expect(produced(reopened)?.after == .end(of: 5))
        // The store found the peer lacks nothing: the stream stands at the store's end, not past it.
        _ = session.batchProduced(.nothing(upTo: .end(of: 3), zoneState: zoneState))
        #expect(session.localCommit(zones: [notes], roster: nil, changes: changes(4, [4: "P"])).isEmpty)
        // Sequence 5 is new here (not the 5 of before): it is streamed.
        #expect(produced(session.localCommit(zones: [notes], roster: nil, changes: changes(5)))?.after == .end(of: 4))
    }

    @Test func aPeerThatGrantsThePublicDatabaseAloneDoesNotRelay() {
        var session = SyncSession(localHello: ours)
        session.peerDevice = "P"
        _ = session.start()
        var hello = theirs
        hello.grants = [.public] // it does not trust this device back
        _ = session.receive(.hello(hello))
        #expect(!session.relaying)
        #expect(session.receive(.neighbors([])).isEmpty, "a stray neighbors message is not acted on")
        #expect(closeReason(session.receive(.holdsRequest)) != nil)
    }

    @Test func aLostSourceRewindsTheStreamOnceThePeerSaysWhatItHolds() {
        var session = caughtUp()
        _ = session.coverRelays(from: ["S", "U"])
        _ = session.localCommit(zones: [notes], roster: nil, changes: changes(6, [6: "S"]))
        // A source no stream relied on asks for nothing.
        #expect(session.coverRelays(from: ["S"]).isEmpty)
        #expect(session.coverRelays(from: []) == [.send(.holdsRequest)])
        let held = vector((replicaB, 9))
        let request = produced(session.receive(.holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: held, resume: nil)])))
        #expect(request?.after == .end(of: 5))
        #expect(request.map { $0.peerVector.dominates(held) } == true)
        // Once the stream reached the end again (the peer lacks nothing), batches tell their own cursors.
        _ = session.batchProduced(.nothing(upTo: .end(of: 6), zoneState: zoneState))
        _ = session.localCommit(zones: [notes], roster: nil, changes: changes(7))
        let sent = sentParts(session.batchProduced(OutgoingBatch(bytes: [1], cursor: .end(of: 7), final: true, records: 1, zoneState: zoneState, claimedTop: vector((replicaA, 4)))))
        #expect(sent.last?.end?.cursor == .end(of: 7))
    }

    @Test func holdsAndNeighborsAreForRelayingAccountPeersOnly() {
        var plain = caughtUp(peerRelays: false)
        #expect(plain.receive(.neighbors([])).isEmpty, "not acted on")
        var other = caughtUp(peerRelays: false)
        #expect(closeReason(other.receive(.holdsRequest)) != nil)
        var stranger = caughtUp(access: .publicOnly)
        #expect(closeReason(stranger.receive(.holdsRequest)) != nil)
        var session = caughtUp()
        #expect(closeReason(session.receive(.holds([]))) != nil, "holds nothing asked for")
        var asked = caughtUp()
        #expect(asked.receive(.holdsRequest) == [.answerHolds])
        #expect(closeReason(asked.receive(.holdsRequest)) != nil, "a second request before the answer")
    }

    @Test func theAnswerToAHoldsRequestIsWhatAClaimMayBuildOn() throws {
        var session = caughtUp()
        #expect(session.receive(.holdsRequest) == [.answerHolds])
        let told = vector((replicaA, 7))
        let answer = session.holdingsRead([ZoneAdvert(zone: notes, zoneState: zoneState, vector: told, resume: StreamCursor(sequence: 1, row: 1))])
        #expect(answer == [.send(.holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: told, resume: nil)]))])
        // The peer's final batch may now claim on top of what was told.
        let bytes = try changeSet(base: told, top: vector((replicaA, 7), (replicaB, 9)), claims: true)
        let actions = session.receive(.changes(ChangesPart(zone: notes, bytes: bytes, end: .init(cursor: .end(of: 3), final: true, records: 0))))
        #expect(closeReason(actions) == nil)
    }

    @Test func neighborsReachTheNodeAsAnEvent() throws {
        var session = caughtUp()
        let device = DeviceID(digest: Array(repeating: 7, count: 32))
        #expect(session.receive(.neighbors([device])) == [.event(.neighbors([device.description]))])
        #expect(session.tellNeighbors([device]) == [.send(.neighbors([device]))])
    }

    /// Records collected while a device was away reach an account device, in a private zone, and no one else.
    @Test func collectedRecordsGoBetweenAccountDevicesOnly() {
        let records = (0..<5_000).map { CollectedRecord(name: "r\($0)", residue: RecordResidue(causalLength: 2, vector: vector((replicaA, 3)))) }
        var session = caughtUp()
        let sent = session.sendCollected(zone: notes, zoneIncarnation: 1, records: records)
        #expect(sent.count == 3, "in messages of at most \(SyncMessage.maximumCollectedRecords)")
        #expect(sent.flatMap { action -> [CollectedRecord] in if case .send(.collected(_, _, let part, _)) = action { return part } else { return [] } } == records)
        #expect(session.sendCollected(zone: ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: "s", ownerName: "o")), zoneIncarnation: 1, records: records).isEmpty)
        #expect(session.receive(.collected(zone: notes, zoneIncarnation: 1, records: Array(records.prefix(2)), blocks: [])) == [.applyCollected(zone: notes, zoneIncarnation: 1, records: Array(records.prefix(2)), blocks: [])])
        var stranger = caughtUp(access: .publicOnly)
        #expect(stranger.sendCollected(zone: notes, zoneIncarnation: 1, records: records).isEmpty)
        #expect(closeReason(stranger.receive(.collected(zone: notes, zoneIncarnation: 1, records: [], blocks: []))) != nil)
        var other = caughtUp()
        #expect(closeReason(other.receive(.collected(zone: ZoneKey(scope: .public, zoneID: ZoneID(zoneName: "_defaultZone")), zoneIncarnation: 1, records: [], blocks: []))) != nil)
    }

    /// Each message carries the blocks of its records' deletes, at most
    /// `maximumCollectedBlocks`: a record whose block would pass that starts the next message.
    @Test func collectedRecordsTravelWithTheBlocksOfTheirDeletes() throws {
        let identity = try Identity.generate()
        let writer = try WriteBlock.replica(of: identity.publicKey)
        // 40 blocks of 3 deletes each.
        var blocks: [WriteBlock] = []
        var records: [CollectedRecord] = []
        for index in 0..<40 {
            let times = (0..<3).map { HLCTimestamp(rawValue: UInt64(index * 10 + $0 + 1)) }
            blocks.append(try WriteBlock.seal(times.map { WriteBlock.Entry(time: $0, digest: Array(repeating: UInt8(index), count: 32)) }, last: times.last!, in: notes, by: identity))
            for time in times {
                records.append(CollectedRecord(name: "r\(time.rawValue)", residue: RecordResidue(causalLength: 2, vector: VersionVector(), deletion: Stamp(time: time, replica: writer))))
            }
        }
        var session = caughtUp()
        let messages = session.sendCollected(zone: notes, zoneIncarnation: 1, records: records, blocks: blocks.shuffled()).compactMap { action -> ([CollectedRecord], [WriteBlock])? in
            if case .send(.collected(_, _, let part, let carried)) = action { return (part, carried) } else { return nil }
        }
        #expect(messages.count == 2)
        #expect(messages.flatMap(\.0) == records)
        // Long names, wide vectors and full blocks still fit a frame.
        var wide = VersionVector()
        for index in 0..<8 { wide.advance(ReplicaID(high: UInt64(index), low: 1), to: HLCTimestamp(rawValue: 1 << 40)) }
        var big: [WriteBlock] = []
        var many: [CollectedRecord] = []
        for index in 0..<40 {
            let times = (0..<256).map { HLCTimestamp(rawValue: UInt64(index * 1000 + $0 + 1)) }
            big.append(try WriteBlock.seal(times.map { WriteBlock.Entry(time: $0, digest: Array(repeating: 7, count: 32)) }, last: times.last!, in: notes, by: identity))
            for time in times.prefix(60) {
                many.append(CollectedRecord(name: String(repeating: "n", count: 240) + "\(time.rawValue)", residue: RecordResidue(causalLength: 2, vector: wide, deletion: Stamp(time: time, replica: writer))))
            }
        }
        let sent = session.sendCollected(zone: notes, zoneIncarnation: 1, records: many, blocks: big)
        #expect(sent.count > 1)
        for case .send(let message) in sent { #expect(message.encoded().count <= SyncWire.maximumMessageSize) }
        for (part, carried) in messages {
            #expect(carried.count <= SyncMessage.maximumCollectedBlocks)
            for record in part {
                #expect(carried.contains { $0.digest(at: record.residue.deletion!.time) != nil }, "\(record.name) travels without its delete's block")
            }
        }
    }
}
