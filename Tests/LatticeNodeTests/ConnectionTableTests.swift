@_spi(Tools) import LatticeCore
import LatticeNode
@_spi(Tools) import LatticeProtocol
import Testing

/// One end of a connection, as the table sees it: its state changes as a real one's does.
final class FakeConnection: SessionConnection, @unchecked Sendable, CustomStringConvertible {
    let name: String
    let initiatedHere: Bool
    var access: PeerAccess
    var isActive = true

    init(_ name: String, initiatedHere: Bool, access: PeerAccess = .account) {
        self.name = name
        self.initiatedHere = initiatedHere
        self.access = access
    }

    static func == (lhs: FakeConnection, rhs: FakeConnection) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var description: String { name }
}

@Suite struct ConnectionTableTests {
    @Test(arguments: [false, true])
    func twoDevicesThatDialedEachOtherKeepTheSameConnectionWhateverTheOrder(bFirst: Bool) {
        // a dialed b (connection 1) while b dialed a (connection 2); each side holds its end of both.
        var a = ConnectionTable<FakeConnection>(ownDeviceID: "aaaa")
        var b = ConnectionTable<FakeConnection>(ownDeviceID: "bbbb")
        let oneAtA = FakeConnection("1", initiatedHere: true), oneAtB = FakeConnection("1", initiatedHere: false)
        let twoAtA = FakeConnection("2", initiatedHere: false), twoAtB = FakeConnection("2", initiatedHere: true)
        let firstA = a.authenticated(bFirst ? twoAtA : oneAtA, peer: "bbbb", accessNow: .account)
        let secondA = a.authenticated(bFirst ? oneAtA : twoAtA, peer: "bbbb", accessNow: .account)
        let firstB = b.authenticated(bFirst ? oneAtB : twoAtB, peer: "aaaa", accessNow: .account)
        let secondB = b.authenticated(bFirst ? twoAtB : oneAtB, peer: "aaaa", accessNow: .account)
        #expect(firstA.closing.isEmpty && firstB.closing.isEmpty)
        // Both close connection 2, the one the larger ID dialed.
        #expect(secondA.closing == [twoAtA])
        #expect(secondB.closing == [twoAtB])
        #expect(secondA.verdict == (bFirst ? .runs : .duplicate))
        #expect(secondB.verdict == (bFirst ? .duplicate : .runs))
        twoAtA.isActive = false
        twoAtB.isActive = false
        let endedAtA = a.closed(peer: "bbbb")
        #expect(endedAtA == ([twoAtA], true))
        let endedAtB = b.closed(peer: "aaaa")
        #expect(endedAtB == ([twoAtB], true))
        #expect(a["bbbb"] == [oneAtA] && b["aaaa"] == [oneAtB])
    }

    @Test func aDeviceThatDialsAgainReplacesItsOlderSession() {
        var table = ConnectionTable<FakeConnection>(ownDeviceID: "aaaa")
        let old = FakeConnection("old", initiatedHere: false), new = FakeConnection("new", initiatedHere: false)
        _ = table.authenticated(old, peer: "bbbb", accessNow: .account)
        let registration = table.authenticated(new, peer: "bbbb", accessNow: .account)
        #expect(registration.verdict == .runs)
        #expect(registration.closing == [old])
    }

    @Test func aHandshakeThatTrustNoLongerMatchesIsClosedAndNotRegistered() {
        var table = ConnectionTable<FakeConnection>(ownDeviceID: "aaaa")
        let connection = FakeConnection("1", initiatedHere: true)
        // The device was untrusted between its handshake and its registration.
        let registration = table.authenticated(connection, peer: "bbbb", accessNow: .publicOnly)
        #expect(registration.verdict == .trustChanged)
        #expect(registration.closing == [connection])
        #expect(table.isEmpty)
    }

    @Test func trustRevokedMidStreamClosesThatDevicesSessionAndAShareWidensAnother() {
        var table = ConnectionTable<FakeConnection>(ownDeviceID: "aaaa")
        let zone = ZoneID(zoneName: "Trip", ownerName: "owner")
        let kept = FakeConnection("b", initiatedHere: true)
        let revoked = FakeConnection("c", initiatedHere: true)
        let shared = FakeConnection("d", initiatedHere: false, access: .publicOnly)
        _ = table.authenticated(kept, peer: "bbbb", accessNow: .account)
        _ = table.authenticated(revoked, peer: "cccc", accessNow: .account)
        _ = table.authenticated(shared, peer: "dddd", accessNow: .publicOnly)
        let now: [String: PeerAccess] = ["bbbb": .account, "dddd": PeerAccess(scopes: [.public], sharedZones: [zone])]
        #expect(table.review { now[$0] } == [.push(kept), .close(revoked, peer: "cccc"), .widen(shared)])
        // A share taken back narrows: that session closes too.
        shared.access = PeerAccess(scopes: [.public], sharedZones: [zone])
        #expect(table.review { $0 == "dddd" ? .publicOnly : now[$0] }.last == .close(shared, peer: "dddd"))
    }

    @Test func aClosedSessionLeavesTheTableAndTheDeviceIsNotConnectedAnyMore() {
        var table = ConnectionTable<FakeConnection>(ownDeviceID: "aaaa")
        let connection = FakeConnection("1", initiatedHere: true)
        _ = table.authenticated(connection, peer: "bbbb", accessNow: .account)
        #expect(table["bbbb"] == [connection])
        connection.isActive = false
        let ended = table.closed(peer: "bbbb")
        #expect(ended == ([connection], false))
        #expect(table["bbbb"] == nil)
        #expect(table.isEmpty)
    }
}
