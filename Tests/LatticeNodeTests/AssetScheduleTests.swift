@_spi(Tools) import LatticeCore
import LatticeNode
@_spi(Tools) import LatticeProtocol
import NIOCore
import Testing

/// The asset schedule on a manual clock, with peers that lack content, lie and stall.
@Suite struct AssetScheduleTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    let photos = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Photos", ownerName: "_defaultOwner"))
    let film = AssetReference(hash: [1, 2, 3], size: 3 << 20)
    let one = AssetSchedule.Peer(id: "peer-one", access: .account)
    let two = AssetSchedule.Peer(id: "peer-two", access: .account)

    func at(_ seconds: Double) -> NIODeadline { start + .nanoseconds(Int64(seconds * 1e9)) }

    func request(_ peer: AssetSchedule.Peer, _ chunk: Int?) -> AssetSchedule.Request {
        AssetSchedule.Request(peer: peer.id, asset: film, chunk: chunk)
    }

    @Test func chunksAreAskedOfAnotherPeerWhenOneLacksTheAssetSendsABadChunkOrStalls() {
        var schedule = AssetSchedule()
        let dropped = schedule.wanted([(film, [photos])])
        #expect(dropped.isEmpty)
        // The outline first, of one peer.
        let outlineAsked = schedule.requests(at: start, peers: [one, two])
        #expect(outlineAsked == [request(one, nil)])
        // peer-one lacks it: peer-two is asked at once, and peer-one left out for 2 s.
        let wasAsked = schedule.unavailable(film, chunk: nil, from: one.id, reason: "no such asset", at: at(0.1))
        let outlineAskedAgain = schedule.requests(at: at(0.1), peers: [one, two])
        #expect(wasAsked && outlineAskedAgain == [request(two, nil)])
        let outlineTaken = schedule.outlineArrived(film, from: two.id)
        #expect(outlineTaken)
        schedule.outlineAccepted(film, missing: [0, 1, 2])
        let chunksAsked = schedule.requests(at: at(0.2), peers: [one, two])
        #expect(chunksAsked == [request(two, 0), request(two, 1), request(two, 2)])
        // A chunk nobody asked peer-one for is not taken from it.
        let unaskedTaken = schedule.chunkArrived(film, chunk: 0, from: one.id)
        let firstTaken = schedule.chunkArrived(film, chunk: 0, from: two.id)
        let firstReported = schedule.chunkWritten(film, chunk: 0, bytes: 1 << 20, from: two.id, at: at(0.3))
        #expect(!unaskedTaken && firstTaken && firstReported)
        // peer-two sends a bad chunk 1: it is left out of this asset for 30 s. Its chunk 2 is good.
        let badTaken = schedule.chunkArrived(film, chunk: 1, from: two.id)
        schedule.rejected(film, from: two.id, problem: "sent a bad chunk: wrong hash", at: at(0.3))
        let lastTaken = schedule.chunkArrived(film, chunk: 2, from: two.id)
        _ = schedule.chunkWritten(film, chunk: 2, bytes: 1 << 20, from: two.id, at: at(1))
        let nobodyYet = schedule.requests(at: at(1), peers: [one, two])
        #expect(badTaken && lastTaken && nobodyYet.isEmpty)
        #expect(schedule.wants[film]?.problem == "peer-two sent a bad chunk: wrong hash")
        // peer-one may be asked again after its 2 s.
        #expect(schedule.nextWake == at(2.1))
        let retried = schedule.requests(at: at(2.1), peers: [one, two])
        #expect(retried == [request(one, 1)])
        // It does not answer in 20 s: the request expires and peer-one is avoided; chunk 1 waits for peer-two's 30 s.
        #expect(schedule.nextWake == at(22.1))
        let expiredEarly = schedule.expire(at: at(22.1))
        let expired = schedule.expire(at: at(22.2))
        let nobodyNow = schedule.requests(at: at(22.2), peers: [one, two])
        #expect(!expiredEarly && expired && nobodyNow.isEmpty)
        #expect(schedule.wants[film]?.problem == "peer-one did not answer in 20 s")
        #expect(schedule.nextWake == at(30.3))
        let askedLast = schedule.requests(at: at(30.3), peers: [one, two])
        #expect(askedLast == [request(two, 1)])
        let lastChunkTaken = schedule.chunkArrived(film, chunk: 1, from: two.id)
        let completionReported = schedule.chunkWritten(film, chunk: 1, bytes: 1 << 20, from: two.id, at: at(30.4))
        #expect(lastChunkTaken && completionReported)
        #expect(schedule.wants[film]?.missing == [])
        #expect(schedule.wants[film]?.bytesByPeer == [two.id: 3 << 20])
        schedule.completed(film)
        #expect(schedule.isIdle && schedule.wants.isEmpty)
    }

    @Test func whatAPeerThatLeftHadInFlightIsAskedOfAnother() {
        var schedule = AssetSchedule()
        _ = schedule.wanted([(film, [photos])])
        _ = schedule.requests(at: start, peers: [one])
        _ = schedule.outlineArrived(film, from: one.id)
        schedule.outlineAccepted(film, missing: [0, 1])
        let askedOfOne = schedule.requests(at: start, peers: [one])
        #expect(askedOfOne.count == 2)
        schedule.sessionsChanged(live: [two.id])
        #expect(schedule.isIdle)
        let askedOfTwo = schedule.requests(at: start, peers: [two])
        #expect(askedOfTwo == [request(two, 0), request(two, 1)])
    }

    @Test func aPeerIsAskedOnlyForAssetsOfZonesItsSessionCarriesAndWithinItsWindow() {
        var schedule = AssetSchedule()
        let stranger = AssetSchedule.Peer(id: "stranger", access: .publicOnly)
        _ = schedule.wanted([(film, [photos])])
        let askedOfStranger = schedule.requests(at: start, peers: [stranger])
        #expect(askedOfStranger.isEmpty)
        _ = schedule.requests(at: start, peers: [one])
        _ = schedule.outlineArrived(film, from: one.id)
        schedule.outlineAccepted(film, missing: Array(0..<20))
        // Eight chunks in flight per peer, spread over both.
        let asked = schedule.requests(at: start, peers: [one, two])
        #expect(asked.filter { $0.peer == one.id }.count == 8)
        #expect(asked.filter { $0.peer == two.id }.count == 8)
        #expect(Set(asked.compactMap(\.chunk)) == Set(0..<16))
    }

    @Test func theSmallestAssetsGoFirstAndNoLongerWantedOnesAreDropped() {
        var settings = AssetSchedule.Settings()
        settings.maximumActive = 1
        var schedule = AssetSchedule(settings: settings)
        let icon = AssetReference(hash: [9], size: 4096)
        _ = schedule.wanted([(film, [photos]), (icon, [photos])])
        let askedFirst = schedule.requests(at: start, peers: [one])
        #expect(askedFirst == [AssetSchedule.Request(peer: one.id, asset: icon, chunk: nil)])
        // The icon arrived by another way (a bundle): dropped, and the film's turn comes.
        let dropped = schedule.wanted([(film, [photos])])
        #expect(dropped == [icon])
        let askedNext = schedule.requests(at: start, peers: [one])
        #expect(askedNext == [request(one, nil)])
    }

    @Test func progressIsReportedAtMostEveryFiftyMillisecondsAndAlwaysAtTheEnd() {
        var schedule = AssetSchedule()
        _ = schedule.wanted([(film, [photos])])
        _ = schedule.requests(at: start, peers: [one])
        _ = schedule.outlineArrived(film, from: one.id)
        schedule.outlineAccepted(film, missing: [0, 1, 2])
        _ = schedule.requests(at: start, peers: [one])
        let reported = [(0, 0.0), (1, 0.01), (2, 0.02)].map { chunk, time in
            _ = schedule.chunkArrived(film, chunk: chunk, from: one.id)
            return schedule.chunkWritten(film, chunk: chunk, bytes: 1, from: one.id, at: at(time))
        }
        #expect(reported == [true, false, true])
    }
}
