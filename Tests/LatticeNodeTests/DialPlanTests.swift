import LatticeNode
import NIOCore
import Testing

/// The dial plan on a manual clock: no socket, no sleep.
@Suite struct DialPlanTests {
    typealias Plan = DialPlan<String>
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    func at(_ seconds: Double) -> NIODeadline { start + .nanoseconds(Int64(seconds * 1e9)) }

    @Test func aGivenAddressIsDialedAtOnceAndLessAndLessOftenWhileNobodyAnswers() {
        var plan = Plan(ownDeviceID: "a")
        plan.add("10.0.0.2:7000", at: start)
        let dialsAtStart = plan.due(at: start)
        #expect(dialsAtStart == [.dial("10.0.0.2:7000", for: .address("10.0.0.2:7000"))])
        // While the dial runs, nothing else is due.
        #expect(plan.nextWake == nil)
        var now = start
        var waits: [Double] = []
        for _ in 0..<6 {
            let actions = plan.dialEnded(.address("10.0.0.2:7000"), at: "10.0.0.2:7000", .unreachable("connection refused"), now: now)
            #expect(actions == [.unreachable("10.0.0.2:7000", reason: "connection refused")])
            let wake = try! #require(plan.nextWake)
            waits.append(Double((wake - now).nanoseconds) / 1e9)
            let dialsJustBefore = plan.due(at: wake - .milliseconds(1))
            #expect(dialsJustBefore.isEmpty)
            now = wake
            let dialsAtWake = plan.due(at: now)
            #expect(dialsAtWake == [.dial("10.0.0.2:7000", for: .address("10.0.0.2:7000"))])
        }
        #expect(waits == [0.25, 0.5, 1, 2, 4, 8])
    }

    @Test func aPeerThatDialedThisNodeIsNotDialedUntilItsSessionEnds() {
        var plan = Plan(ownDeviceID: "a")
        plan.add("b:1", at: start)
        _ = plan.due(at: start)
        // The first dial reached device b, whose session later ended after a minute.
        plan.learned("b:1", is: "b")
        _ = plan.dialEnded(.address("b:1"), at: "b:1", .ended(after: 60), now: at(60))
        // Before the redial is due, b dials this node.
        _ = plan.connected("b")
        let dialsWhileConnected = plan.due(at: at(61))
        #expect(dialsWhileConnected.isEmpty)
        #expect(plan.nextWake == nil)
        // b's session ends: the address is dialed a quarter second later (with jitter, 0.8-1.2 of it).
        plan.disconnected("b", at: at(100), jitter: 1.2)
        #expect(plan.nextWake == at(100.3))
        let dialsAfterTheWait = plan.due(at: at(100.3))
        #expect(dialsAfterTheWait == [.dial("b:1", for: .address("b:1"))])
    }

    @Test func syncOnceDialsEachAddressOnce() {
        var plan = Plan(ownDeviceID: "a", reconnects: false)
        plan.add("b:1", at: start)
        let dialsAtStart = plan.due(at: start)
        #expect(dialsAtStart.count == 1)
        let afterAShortSession = plan.dialEnded(.address("b:1"), at: "b:1", .ended(after: 2), now: at(2))
        #expect(afterAShortSession.isEmpty)
        #expect(plan.nextWake == nil)
        let dialsLater = plan.due(at: at(100))
        #expect(dialsLater.isEmpty)
    }

    @Test func ofTwoDevicesThatFindEachOtherTheSmallerIDDialsAtOnceAndTheLargerAQuarterSecondLater() {
        var small = Plan(ownDeviceID: "aaaa")
        var large = Plan(ownDeviceID: "bbbb")
        small.dialable("bbbb", at: ["b:1"], now: start)
        large.dialable("aaaa", at: ["a:1"], now: start)
        let smallDials = small.due(at: start)
        #expect(smallDials == [.dial("b:1", for: .device("bbbb"))])
        let largeDials = large.due(at: start)
        #expect(largeDials.isEmpty)
        #expect(large.nextWake == at(0.25))
    }

    @Test func aDiscoveredDeviceIsTriedAtEachAddressAndAnotherDeviceAnsweringDoesNotCount() {
        var plan = Plan(ownDeviceID: "a")
        plan.dialable("b", at: ["old:1", "new:1"], now: start)
        let dialsAtStart = plan.due(at: start)
        #expect(dialsAtStart == [.dial("old:1", for: .device("b"))])
        // Device x answers at b's stale address: the next address is dialed at once.
        plan.learned("old:1", is: "x")
        let afterTheOldAddress = plan.dialEnded(.device("b"), at: "old:1", .ended(after: 0.1), now: at(0.1))
        #expect(afterTheOldAddress == [.dial("new:1", for: .device("b"))])
        // Nobody at the other: the round failed, with both reasons for the status.
        let actions = plan.dialEnded(.device("b"), at: "new:1", .unreachable("no route to host"), now: at(0.2))
        #expect(actions == [.dialErrorChanged(device: "b", error: "old:1: another device answers there; new:1: no route to host")])
        #expect(plan.dialErrors["b"] != nil)
        #expect(plan.nextWake == at(0.45))
    }

    @Test func aDeviceThatStaysUnreachableIsReportedOnceAndRetriedAtLeastEveryFiveSeconds() {
        var plan = Plan(ownDeviceID: "a")
        plan.dialable("b", at: ["b:1"], now: start)
        var now = start
        var reports = 0
        var waits: [Double] = []
        for _ in 0..<8 {
            let dialsNow = plan.due(at: now)
            #expect(dialsNow == [.dial("b:1", for: .device("b"))])
            let actions = plan.dialEnded(.device("b"), at: "b:1", .unreachable("timed out"), now: now)
            reports += actions.filter { if case .unreachable = $0 { true } else { false } }.count
            let wake = try! #require(plan.nextWake)
            waits.append(Double((wake - now).nanoseconds) / 1e9)
            now = wake
        }
        #expect(reports == 1)
        #expect(waits == [0.25, 0.5, 1, 2, 4, 5, 5, 5])
        // It answers: the error clears, and the status is told.
        _ = plan.due(at: now)
        plan.learned("b:1", is: "b")
        let afterTheSession = plan.dialEnded(.device("b"), at: "b:1", .ended(after: 30), now: now + .seconds(30))
        #expect(afterTheSession == [.dialErrorChanged(device: "b", error: nil)])
        #expect(plan.dialErrors["b"] == nil)
    }

    @Test func aForgottenDeviceIsNotDialedAgainOnceItsRunningDialEnds() {
        var plan = Plan(ownDeviceID: "a")
        plan.dialable("b", at: ["b:1"], now: start)
        _ = plan.due(at: start)
        plan.forget("b")
        #expect(plan.devices == ["b"])
        let afterTheRefusal = plan.dialEnded(.device("b"), at: "b:1", .unreachable("refused"), now: at(1))
        #expect(afterTheRefusal.isEmpty)
        #expect(plan.devices.isEmpty)
        let dialsLater = plan.due(at: at(100))
        #expect(dialsLater.isEmpty)
        // Waiting, it goes at once.
        plan.dialable("c", at: ["c:1"], now: at(100))
        plan.forget("c")
        #expect(plan.devices.isEmpty)
    }

    @Test func aStoppedPlanDialsNothing() {
        var plan = Plan(ownDeviceID: "a")
        plan.add("b:1", at: start)
        plan.stop()
        plan.add("c:1", at: start)
        let dialsAtTen = plan.due(at: at(10))
        #expect(dialsAtTen.isEmpty)
        #expect(plan.nextWake == nil)
    }
}
