@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import Testing

/// The session state machine driven with values: every way a peer can lie
/// ends the session with a reason, and honest exchanges produce the expected actions.
@Suite struct SyncSessionTests {
    let ours = Hello(container: "app", zones: [
        ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
    ])
    let theirs = Hello(container: "app", zones: [
        ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaB, 4)), resume: StreamCursor(sequence: 2, row: 5)),
    ])

    func started() -> SyncSession {
        var session = SyncSession(localHello: ours)
        _ = session.start()
        _ = session.receive(.hello(theirs))
        return session
    }

    func closeReason(_ actions: [SyncSession.Action]) -> ProtocolError? {
        for case .close(let reason) in actions { return reason }
        return nil
    }

    func part(_ bytes: [UInt8], final: Bool, zone: ZoneKey = notes, cursor: StreamCursor = StreamCursor(sequence: 1, row: 1)) -> SyncMessage {
        .changes(ChangesPart(zone: zone, bytes: bytes, end: .init(cursor: cursor, final: final, records: 0)))
    }

    @Test func helloStartsTheStreamFromThePeersResumePointAndVector() throws {
        var session = SyncSession(localHello: ours)
        var said = ours
        said.relays = true // as every node's session does
        #expect(session.start() == [.send(.hello(said))])
        let actions = session.receive(.hello(theirs))
        guard case .produce(let request) = actions.last else { Issue.record("no produce in \(actions)"); return }
        #expect(request.zone == notes)
        #expect(request.after == StreamCursor(sequence: 2, row: 5))
        #expect(request.peerVector == vector((replicaB, 4)))
        #expect(request.wantsTotals)
    }

    @Test func aPublicOnlySessionStreamsThePublicDatabaseAloneAndRefusesPrivateChanges() throws {
        let catalogue = ZoneKey(scope: .public, zoneID: .default)
        let both = Hello(container: "app", zones: [
            ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
            ZoneAdvert(zone: catalogue, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
        ])
        var session = SyncSession(localHello: both, access: .publicOnly)
        _ = session.start()
        let actions = session.receive(.hello(theirs))
        let produced = actions.compactMap { action -> ZoneKey? in if case .produce(let request) = action { return request.zone } else { return nil } }
        #expect(produced == [catalogue])
        #expect(session.streams == .publicOnly)
        #expect(closeReason(session.receive(part([1, 2, 3], final: true))) == .forbidden("the peer sent changes to zone \(notes), which it may not sync here (public only)"))
    }

    @Test func aPeerThatGrantsThePublicDatabaseAloneIsStreamedNothingElse() throws {
        var session = SyncSession(localHello: ours, access: .account)
        _ = session.start()
        var limited = theirs
        limited.grants = [.public]
        let actions = session.receive(.hello(limited))
        #expect(actions.first == .event(.started(granted: .publicOnly)))
        #expect(!actions.contains { if case .produce = $0 { return true } else { return false } })
        // What the hello says it grants travels on the wire.
        #expect(try SyncMessage(decoding: SyncMessage.hello(limited).encoded()) == .hello(limited))
    }

    @Test func aZoneThePeerDoesNotReplicateIsNeitherStreamedNorTakenFromIt() throws {
        let photos = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Photos"))
        let both = Hello(container: "app", zones: [
            ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
            ZoneAdvert(zone: photos, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
        ])
        var session = SyncSession(localHello: both)
        _ = session.start()
        var selective = theirs
        selective.excluded = [photos]
        let actions = session.receive(.hello(selective))
        let produced = actions.compactMap { action -> ZoneKey? in if case .produce(let request) = action { return request.zone } else { return nil } }
        #expect(produced == [notes], "the peer said it does not replicate Photos")
        #expect(actions.contains(.event(.peerExcludes([photos], only: nil))))
        // A commit to Photos opens no stream to it either.
        #expect(!session.localCommit(zones: [photos], roster: nil, changes: nil).contains { if case .produce = $0 { return true } else { return false } })
        // Nor may a peer stream a zone this side said it does not replicate.
        var mine = ours
        mine.excluded = [photos]
        var told = SyncSession(localHello: mine)
        _ = told.start()
        _ = told.receive(.hello(theirs))
        #expect(closeReason(told.receive(.streamStart(StreamStart(zone: photos, records: 1, bytes: 10)))) == .forbidden("the peer streams zone \(photos), which this device said it does not replicate"))
        // The list travels on the wire.
        #expect(try SyncMessage(decoding: SyncMessage.hello(selective).encoded()) == .hello(selective))
        // A peer that replicates a list of private zones alone is streamed those, and the public database.
        let catalogue = ZoneKey(scope: .public, zoneID: .default)
        var three = both
        three.zones.append(ZoneAdvert(zone: catalogue, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil))
        var listing = SyncSession(localHello: three)
        _ = listing.start()
        var only = theirs
        only.replicatesOnly = [photos]
        _ = listing.receive(.hello(only))
        #expect(listing.streamsTo(photos) && listing.streamsTo(catalogue) && !listing.streamsTo(notes))
        #expect(try SyncMessage(decoding: SyncMessage.hello(only).encoded()) == .hello(only))
    }

    @Test func anythingBeforeHelloEndsTheSession() {
        var session = SyncSession(localHello: ours)
        _ = session.start()
        #expect(closeReason(session.receive(.ping)) != nil)
        #expect(session.closed)
        #expect(session.receive(.hello(theirs)).isEmpty)
    }

    @Test func aSecondHelloEndsTheSession() {
        var session = started()
        #expect(closeReason(session.receive(.hello(theirs))) == .unexpected("a second hello"))
    }

    @Test func grantsAfterTheHelloOpenASharedZoneBothWays() throws {
        let lists = ZoneID(zoneName: "Lists", ownerName: "OWNER")
        let listsKey = ZoneKey(scope: .shared, zoneID: lists)
        let listsAdvert = ZoneAdvert(zone: listsKey, zoneState: zoneState, vector: vector((replicaA, 7)), resume: nil)
        // The owner's side: the peer's account proved itself in its hello, which opens Lists to it.
        var owner = SyncSession(localHello: Hello(container: "app", zones: [], grants: [.public]), access: .publicOnly)
        _ = owner.start()
        let quiet = owner.receive(.hello(Hello(container: "app", zones: [], grants: [.public])))
        #expect(quiet.contains(.send(.caughtUp)))
        let widened = owner.widen(to: PeerAccess(scopes: [.public], sharedZones: [lists]), zones: [listsAdvert])
        #expect(widened.contains(.send(.grants(Grants(sharedZones: [lists], zones: [listsAdvert])))))
        // Not streamed before the peer grants it too.
        #expect(!widened.contains { if case .produce = $0 { return true } else { return false } })
        // A caught-up the peer sent before it read the grants does not count.
        _ = owner.receive(.caughtUp)
        #expect(!owner.isQuiescent)
        let opened = owner.receive(.grants(Grants(sharedZones: [lists], zones: [])))
        guard case .produce(let request) = opened.last else { Issue.record("no produce in \(opened)"); return }
        #expect(request.zone == listsKey)
        #expect(owner.streams.allows(listsKey))
        _ = owner.batchProduced(nil)
        _ = owner.receive(.caughtUpAfter(grants: 1))
        #expect(owner.isQuiescent)
    }

    @Test func aPeerFloodingGrantsIsDropped() {
        var session = started()
        var reason: ProtocolError?
        for index in 0...SyncSession.maximumGrants {
            reason = closeReason(session.receive(.grants(Grants(sharedZones: [ZoneID(zoneName: "z\(index)", ownerName: "o")], zones: [])))) ?? reason
        }
        #expect(reason == .limitExceeded("more than \(SyncSession.maximumGrants) grants messages: the peer floods them"))
    }

    @Test func anotherContainerIsRefused() {
        var session = SyncSession(localHello: ours)
        var other = theirs
        other.container = "other"
        #expect(closeReason(session.receive(.hello(other))) != nil)
    }

    @Test func changesToAZoneThePeerMayNotWriteAreRefused() throws {
        // A participant of one shared zone sends changes to another.
        var session = SyncSession(localHello: ours, access: PeerAccess(scopes: [.public], sharedZones: [ZoneID(zoneName: "granted", ownerName: "owner")]))
        _ = session.start()
        _ = session.receive(.hello(theirs))
        let reason = closeReason(session.receive(part(try changeSet(zone: sharedZone, claims: false), final: false, zone: sharedZone)))
        guard case .forbidden = reason else { Issue.record("expected forbidden, got \(String(describing: reason))"); return }
    }

    @Test func aBatchHoldingAnotherZoneThanAnnouncedIsRefused() throws {
        var session = started()
        let other = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "other", ownerName: ZoneID.defaultOwnerName))
        #expect(closeReason(session.receive(part(try changeSet(zone: other, claims: false), final: false))) != nil)
    }

    @Test func aFinalFlagThatDisagreesWithTheClaimIsRefused() throws {
        var session = started()
        #expect(closeReason(session.receive(part(try changeSet(claims: false), final: true))) != nil)
        var second = started()
        #expect(closeReason(second.receive(part(try changeSet(claims: true), final: false))) != nil)
    }

    @Test func aClaimOnAVectorWeNeverSentIsRefused() throws {
        // We told the peer A:3; a claim whose base says we hold A:9 claims more than it sends.
        var session = started()
        let reason = closeReason(session.receive(part(try changeSet(base: vector((replicaA, 9)), claims: true), final: true)))
        guard case .unexpected = reason else { Issue.record("expected a violation, got \(String(describing: reason))"); return }
    }

    @Test func anHonestClaimIsAppliedThenAcknowledged() throws {
        var session = started()
        let bytes = try changeSet(base: vector((replicaA, 3)), claims: true)
        let actions = session.receive(part(bytes, final: true, cursor: StreamCursor(sequence: 8, row: 2)))
        guard case .apply(let batch) = actions.first else { Issue.record("no apply in \(actions)"); return }
        #expect(batch.bytes == bytes && batch.final && batch.claimedTop == vector((replicaA, 10)))
        let after = session.batchApplied(AppliedBatch(vector: vector((replicaA, 10)), recordsChanged: 0))
        #expect(after.contains(.send(.acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 8, row: 2), vector: vector((replicaA, 10)))))))
    }

    @Test func aBatchSplitIntoPartsIsReassembled() throws {
        var session = started()
        let bytes = try changeSet(base: vector((replicaA, 3)), claims: true)
        #expect(session.receive(.changes(ChangesPart(zone: notes, bytes: Array(bytes.prefix(10)), end: nil))).isEmpty)
        let actions = session.receive(part(Array(bytes.dropFirst(10)), final: true))
        guard case .apply(let batch) = actions.first else { Issue.record("no apply in \(actions)"); return }
        #expect(batch.bytes == bytes)
    }

    @Test func aPartOfAnotherZoneInsideABatchIsRefused() throws {
        var session = started()
        _ = session.receive(.changes(ChangesPart(zone: notes, bytes: [1, 2], end: nil)))
        let other = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "other", ownerName: ZoneID.defaultOwnerName))
        #expect(closeReason(session.receive(.changes(ChangesPart(zone: other, bytes: [3], end: nil)))) != nil)
    }

    @Test func anOversizedBatchIsRefused() throws {
        var configuration = SyncSession.Configuration()
        configuration.maximumBatchSize = 100
        var session = SyncSession(localHello: ours, configuration: configuration)
        _ = session.receive(.hello(theirs))
        _ = session.receive(.changes(ChangesPart(zone: notes, bytes: [UInt8](repeating: 0, count: 60), end: nil)))
        let reason = closeReason(session.receive(.changes(ChangesPart(zone: notes, bytes: [UInt8](repeating: 0, count: 60), end: nil))))
        guard case .limitExceeded = reason else { Issue.record("expected a limit, got \(String(describing: reason))"); return }
    }

    @Test func aPeerIgnoringTheWindowIsDropped() throws {
        var configuration = SyncSession.Configuration()
        configuration.maximumQueuedBatches = 2
        var session = SyncSession(localHello: ours, configuration: configuration)
        _ = session.receive(.hello(theirs))
        let bytes = try changeSet(claims: false)
        _ = session.receive(part(bytes, final: false))
        _ = session.receive(part(bytes, final: false))
        let reason = closeReason(session.receive(part(bytes, final: false)))
        guard case .limitExceeded = reason else { Issue.record("expected a limit, got \(String(describing: reason))"); return }
    }

    @Test func theDefaultCapsMatchHonestUse() throws {
        // An honest sender has at most `window` batches unacknowledged, each about `batchBytes`.
        let configuration = SyncSession.Configuration()
        #expect(configuration.maximumQueuedBatches == configuration.window)
        #expect(configuration.maximumBatchSize <= configuration.batchBytes + 4 << 20)
        var session = SyncSession(localHello: ours, configuration: configuration)
        _ = session.receive(.hello(theirs))
        let bytes = try changeSet(claims: false)
        for _ in 0..<configuration.window { #expect(closeReason(session.receive(part(bytes, final: false))) == nil) }
        guard case .limitExceeded = closeReason(session.receive(part(bytes, final: false))) else {
            Issue.record("a batch past the window was queued")
            return
        }
        var big = SyncSession(localHello: ours, configuration: configuration)
        _ = big.receive(.hello(theirs))
        let chunk = [UInt8](repeating: 0, count: SyncWire.partSize)
        var reason: ProtocolError?
        for _ in 0..<(8 << 20) / chunk.count where reason == nil {
            reason = closeReason(big.receive(.changes(ChangesPart(zone: notes, bytes: chunk, end: nil))))
        }
        guard case .limitExceeded = reason else {
            Issue.record("an 8 MiB batch was buffered")
            return
        }
    }

    @Test func anAcknowledgementOfNothingSentIsRefused() {
        var session = started()
        #expect(closeReason(session.receive(.acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 1, row: 1), vector: VersionVector())))) != nil)
    }

    @Test func producedBatchesAreSplitWindowedAndAcknowledgedInOrder() throws {
        var configuration = SyncSession.Configuration()
        configuration.partSize = 10
        configuration.window = 1
        var session = SyncSession(localHello: ours, configuration: configuration)
        _ = session.receive(.hello(theirs))
        let bytes = [UInt8](repeating: 9, count: 25)
        let actions = session.batchProduced(OutgoingBatch(bytes: bytes, cursor: StreamCursor(sequence: 3, row: 1), final: false, records: 2, zoneState: zoneState, totals: (5, 100)))
        let parts = actions.compactMap { action -> ChangesPart? in
            if case .send(.changes(let part)) = action { return part }
            return nil
        }
        #expect(parts.map(\.bytes.count) == [10, 10, 5])
        #expect(parts.last?.end?.cursor == StreamCursor(sequence: 3, row: 1))
        #expect(actions.contains(.send(.streamStart(StreamStart(zone: notes, records: 5, bytes: 100)))))
        // The window is full: nothing more is produced until the acknowledgement.
        #expect(!actions.contains { if case .produce = $0 { return true } else { return false } })
        let next = session.receive(.acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 3, row: 1), vector: vector((replicaB, 4)))))
        guard case .produce(let request) = next.last else { Issue.record("no produce after the ack: \(next)"); return }
        #expect(request.after == StreamCursor(sequence: 3, row: 1))
    }

    @Test func bothSidesDoneIsQuiescent() throws {
        var session = started()
        #expect(!session.isQuiescent)
        let produced = session.batchProduced(nil) // nothing to send
        #expect(produced.contains(.send(.caughtUp)))
        let after = session.receive(.caughtUp)
        #expect(after.contains(.event(.quiescent)))
        #expect(session.isQuiescent)
        // A local commit re-opens the stream.
        let commit = session.localCommit(zones: [notes])
        #expect(commit.contains { if case .produce = $0 { return true } else { return false } })
    }

    @Test func aWideningBeingWeighedHoldsTheCaughtUpBack() throws {
        var session = SyncSession(localHello: ours)
        _ = session.start()
        session.holdCaughtUp()
        _ = session.receive(.hello(theirs))
        let produced = session.batchProduced(nil)
        #expect(!produced.contains(.send(.caughtUp)), "the peer's sync --once would end before the grants")
        let after = session.receive(.caughtUp)
        #expect(!after.contains(.event(.quiescent)), "sync --once would end before the offered zones stream")
        #expect(!session.isQuiescent)
        let released = session.releaseCaughtUp()
        #expect(released.contains(.send(.caughtUp)))
        #expect(released.contains(.event(.quiescent)))
        #expect(session.isQuiescent)
    }

    @Test func anAssetRequestMadeBeforeThePeersHelloWaitsForIt() throws {
        var session = SyncSession(localHello: ours)
        _ = session.start()
        let request = AssetRequest(hash: Array(repeating: 7, count: 32), size: 1000, chunk: nil)
        #expect(session.requestAsset(request).isEmpty)
        #expect(session.receive(.hello(theirs)).contains(.send(.assetRequest(request))))
    }

    @Test func assetRepliesAnswerRequestsOnlyAndRequestsAreBounded() throws {
        var session = started()
        let request = AssetRequest(hash: Array(repeating: 7, count: 32), size: 1000, chunk: 0)
        #expect(session.requestAsset(request) == [.send(.assetRequest(request))])
        #expect(session.requestAsset(request) == [.send(.assetRequest(request))], "asked again: a late answer")
        let reply = AssetReply.chunk(hash: request.hash, index: 0, leaves: [], bytes: [1, 2])
        #expect(session.receive(.assetReply(reply)) == [.event(.assetReply(reply))])
        #expect(session.receive(.assetReply(reply)) == [.event(.assetReply(reply))])
        // A third answer answers nothing asked.
        #expect(closeReason(session.receive(.assetReply(reply))) != nil)

        var serving = started()
        for index in 0..<SyncSession.maximumAssetServes {
            let asked = AssetRequest(hash: request.hash, size: 100_000_000, chunk: index)
            #expect(serving.receive(.assetRequest(asked)) == [.serveAsset(asked)])
        }
        #expect(closeReason(serving.receive(.assetRequest(request))) != nil, "a peer flooding requests is dropped")
    }

    @Test func aComparingSessionStreamsNothingAndTakesNoChanges() throws {
        var comparing = SyncSession.Configuration()
        comparing.comparesOnly = true
        var session = SyncSession(localHello: ours, access: .account, configuration: comparing)
        guard case .send(.hello(let hello)) = session.start().first else { Issue.record("no hello"); return }
        #expect(try SyncMessage(decoding: SyncMessage.hello(hello).encoded()) == .hello(hello))
        let actions = session.receive(.hello(theirs))
        #expect(!actions.contains { if case .produce = $0 { return true } else { return false } })
        #expect(closeReason(session.receive(part([1, 2, 3], final: true))) == .unexpected("changes in a session that only compares digests"))
        // A peer whose hello says it compares only is streamed nothing either.
        var peerCompares = theirs
        peerCompares.comparesOnly = true
        var serving = SyncSession(localHello: ours)
        _ = serving.start()
        let served = serving.receive(.hello(try roundTripped(peerCompares)))
        #expect(served.first == .event(.started(granted: .account)))
        #expect(!served.contains { if case .produce = $0 { return true } else { return false } })
    }

    func roundTripped(_ hello: Hello) throws -> Hello {
        guard case .hello(let decoded) = try SyncMessage(decoding: SyncMessage.hello(hello).encoded()) else { throw ProtocolError.malformed("not a hello") }
        #expect(decoded.comparesOnly == hello.comparesOnly)
        return decoded
    }

    @Test func reconciliationRoundsAreAnsweredOneAtATimeOnZonesThePeerMaySync() {
        let round = ReconcileMessage(zones: [ReconcileZone(zone: notes, ranges: [ReconcileRange(upper: nil, content: .skip)])])
        var session = started()
        #expect(session.receive(.reconcile(round)) == [.answerReconcile(round)])
        #expect(closeReason(session.receive(.reconcile(round))) == .unexpected("a reconciliation round before the last one was answered"))
        session = started()
        _ = session.receive(.reconcile(round))
        #expect(session.reconcileAnswered(ReconcileMessage(zones: [])) == [.send(.reconcileReply(ReconcileMessage(zones: [])))])
        #expect(session.receive(.reconcile(round)) == [.answerReconcile(round)], "the next round once the last was answered")
        // An answer nothing asked for, and a zone the peer may not sync.
        var unasked = started()
        #expect(closeReason(unasked.receive(.reconcileReply(round))) == .unexpected("a reconciliation answer nothing asked for"))
        var asking = started()
        #expect(asking.beginReconcileRound(round) == [.send(.reconcile(round))])
        #expect(asking.beginReconcileRound(round).isEmpty, "one round at a time")
        #expect(asking.receive(.reconcileReply(round)) == [.event(.reconcileReply(round))])
        var publicOnly = SyncSession(localHello: ours, access: .publicOnly)
        _ = publicOnly.start()
        _ = publicOnly.receive(.hello(theirs))
        #expect(closeReason(publicOnly.receive(.reconcile(round))) == .forbidden("only a device of this account may compare digests here (public only)"))
    }

    @Test func aRepairGoesAtTheStreamsCursorWithinTheWindow() throws {
        var configuration = SyncSession.Configuration()
        configuration.window = 1
        var session = SyncSession(localHello: ours, configuration: configuration)
        _ = session.start()
        _ = session.receive(.hello(theirs))
        // The stream's first batch is out: the window is full.
        _ = session.batchProduced(OutgoingBatch(bytes: [1, 2, 3], cursor: StreamCursor(sequence: 3, row: 1), final: false, records: 1, zoneState: zoneState))
        let repair = OutgoingBatch(bytes: [7, 7], cursor: .start, final: false, records: 1, zoneState: zoneState)
        #expect(session.sendRepair(repair, of: notes).isEmpty, "it waits for the window")
        #expect(!session.isQuiescent)
        let next = session.receive(.acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 3, row: 1), vector: vector((replicaB, 4)))))
        let parts = next.compactMap { action -> ChangesPart? in if case .send(.changes(let part)) = action { return part } else { return nil } }
        #expect(parts.count == 1)
        #expect(parts.first?.bytes == [7, 7])
        #expect(parts.first?.end == ChangesPart.End(cursor: StreamCursor(sequence: 3, row: 1), final: false, records: 1))
        // Its acknowledgement is taken like any other; a claiming batch is no repair.
        #expect(closeReason(session.receive(.acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 3, row: 1), vector: vector((replicaB, 4)))))) == nil)
        var claiming = repair
        claiming.final = true
        #expect(session.sendRepair(claiming, of: notes).isEmpty)
    }
}
