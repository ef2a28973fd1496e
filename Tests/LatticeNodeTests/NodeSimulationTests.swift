import LatticeNode
@_spi(Tools) import LatticeProtocol
import NIOCore
import Testing

/// Two or more nodes' dial plans and connection tables wired over a
/// simulated network on a manual clock: a dial's handshake takes `latency`,
/// and a connection either side closes ends on both. What the real node does
/// with sockets, without one.
struct SimulatedLAN {
    struct Node {
        let id: String
        var plan: DialPlan<String>
        var table: ConnectionTable<FakeConnection>
        /// Dials running: the connection's end at this node, and when it was dialed.
        var dials: [String: (target: DialPlan<String>.Target, address: String, began: NIODeadline)] = [:]
    }

    /// A connection: its two ends.
    struct Wire {
        let dialer: String, listener: String
        let dialerEnd: FakeConnection, listenerEnd: FakeConnection
        let address: String
    }

    var nodes: [String: Node] = [:]
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    var latency: TimeAmount
    /// Handshakes under way, by when they finish.
    var handshakes: [(at: NIODeadline, wire: Wire)] = []
    var wires: [Wire] = []
    init(nodes ids: [String], latency: TimeAmount) {
        self.latency = latency
        for id in ids { nodes[id] = Node(id: id, plan: DialPlan(ownDeviceID: id), table: ConnectionTable(ownDeviceID: id)) }
    }

    /// Every node discovers every other at once, at its address (the device ID).
    mutating func discoverAll() {
        for id in nodes.keys {
            for other in nodes.keys where other != id { nodes[id]!.plan.dialable(other, at: [other], now: now) }
        }
    }

    /// The node stops: its connections end, and dials to it find nobody (discovery still lists it: mDNS keeps a cut peer for an hour).
    mutating func stop(_ id: String) {
        for (_, connection) in nodes[id]!.table.all { close(connection) }
        nodes[id] = nil
    }

    /// The node starts again, with nothing of its past, and finds the others.
    mutating func start(_ id: String) {
        nodes[id] = Node(id: id, plan: DialPlan(ownDeviceID: id), table: ConnectionTable(ownDeviceID: id))
        for other in nodes.keys where other != id { nodes[id]!.plan.dialable(other, at: [other], now: now) }
    }

    /// Runs until `end`: dials due, handshakes done, closes carried out.
    mutating func run(until end: NIODeadline) {
        while true {
            for id in nodes.keys.sorted() {
                let actions = nodes[id]!.plan.due(at: now)
                carryOut(actions, at: id)
            }
            let nextHandshake = handshakes.map(\.at).min()
            let nextWake = nodes.values.compactMap(\.plan.nextWake).min()
            guard let next = [nextHandshake, nextWake].compactMap({ $0 }).min(), next <= end else { break }
            now = max(now, next)
            let finished = handshakes.filter { $0.at <= now }
            handshakes.removeAll { $0.at <= now }
            for handshake in finished { authenticate(handshake.wire) }
        }
        now = end
    }

    private mutating func carryOut(_ actions: [DialPlan<String>.Action], at id: String) {
        for case .dial(let address, let target) in actions {
            guard nodes[address] != nil else {
                let next = nodes[id]!.plan.dialEnded(target, at: address, .unreachable("connection refused"), now: now)
                carryOut(next, at: id)
                continue
            }
            let wire = Wire(
                dialer: id, listener: address,
                dialerEnd: FakeConnection("\(id)→\(address) #\(wires.count)", initiatedHere: true),
                listenerEnd: FakeConnection("\(id)→\(address) #\(wires.count)", initiatedHere: false), address: address)
            wires.append(wire)
            nodes[id]!.dials[wire.dialerEnd.name] = (target, address, now)
            handshakes.append((now + latency, wire))
        }
    }

    private mutating func authenticate(_ wire: Wire) {
        guard wire.dialerEnd.isActive, nodes[wire.dialer] != nil, nodes[wire.listener] != nil else { return }
        nodes[wire.dialer]!.plan.learned(wire.address, is: wire.listener)
        for (node, end, peer) in [(wire.dialer, wire.dialerEnd, wire.listener), (wire.listener, wire.listenerEnd, wire.dialer)] {
            let registration = nodes[node]!.table.authenticated(end, peer: peer, accessNow: .account)
            if registration.verdict == .runs || registration.verdict == .duplicate { _ = nodes[node]!.plan.connected(peer) }
            for closing in registration.closing { close(closing) }
        }
    }

    /// Closes a connection from either end: both ends see it end.
    mutating func close(_ end: FakeConnection) {
        guard let wire = wires.first(where: { $0.dialerEnd === end || $0.listenerEnd === end }), wire.dialerEnd.isActive else { return }
        wire.dialerEnd.isActive = false
        wire.listenerEnd.isActive = false
        for (node, peer) in [(wire.dialer, wire.listener), (wire.listener, wire.dialer)] where nodes[node] != nil {
            let (_, stillConnected) = nodes[node]!.table.closed(peer: peer)
            if !stillConnected { nodes[node]!.plan.disconnected(peer, at: now) }
        }
        if nodes[wire.dialer] != nil, let dial = nodes[wire.dialer]!.dials.removeValue(forKey: wire.dialerEnd.name) {
            let lasted = Double((now - dial.began).nanoseconds) / 1e9
            let next = nodes[wire.dialer]!.plan.dialEnded(dial.target, at: dial.address, .ended(after: lasted), now: now)
            carryOut(next, at: wire.dialer)
        }
    }

    /// The connections each node holds a session on, by name.
    func sessions(of id: String) -> [String] { nodes[id]!.table.all.map(\.connection.name).sorted() }
}

/// Whole nodes' dialing and dedupe on a manual clock.
@Suite struct NodeSimulationTests {
    /// Nodes aaaa and bbbb that discover each other, after `seconds` of simulated time on a LAN of `latency`.
    func twoNodesThatFoundEachOther(latency: TimeAmount, after seconds: Int64) -> SimulatedLAN {
        var lan = SimulatedLAN(nodes: ["aaaa", "bbbb"], latency: latency)
        lan.discoverAll()
        lan.run(until: lan.now + .seconds(seconds))
        return lan
    }

    @Test func twoNodesThatFindEachOtherOnAFastLANMakeOneConnection() {
        let lan = twoNodesThatFoundEachOther(latency: .milliseconds(5), after: 30)
        // The smaller ID dialed; the larger saw the session before its own dial was due.
        #expect(lan.wires.count == 1)
        #expect(lan.sessions(of: "aaaa") == ["aaaa→bbbb #0"] && lan.sessions(of: "bbbb") == ["aaaa→bbbb #0"])
    }

    @Test func twoNodesWhoseDialsCrossSettleOnTheSameConnectionAndStopDialing() {
        // A handshake slower than the larger ID's wait: both dial, and both keep the smaller ID's dial.
        let lan = twoNodesThatFoundEachOther(latency: .milliseconds(400), after: 60)
        #expect(lan.wires.count == 2)
        #expect(lan.sessions(of: "aaaa") == ["aaaa→bbbb #0"] && lan.sessions(of: "bbbb") == ["aaaa→bbbb #0"])
        #expect(lan.nodes["bbbb"]!.plan.nextWake == nil)
    }

    @Test func fiveNodesEndWithOneSessionPerPairAfterAPeerRestarts() {
        let ids = ["a1", "b2", "c3", "d4", "e5"]
        var lan = SimulatedLAN(nodes: ids, latency: .milliseconds(300))
        lan.discoverAll()
        lan.run(until: lan.now + .seconds(10))
        for id in ids { #expect(lan.nodes[id]!.table.peers.count == 4, "\(id)") }
        // c3 stops: its sessions end, and the others dial it and find nobody, with backoff.
        lan.stop("c3")
        let wiresBefore = lan.wires.count
        lan.run(until: lan.now + .seconds(60))
        #expect(lan.wires.count == wiresBefore)
        for id in ids where id != "c3" { #expect(lan.nodes[id]!.plan.dialErrors["c3"] == "c3: connection refused") }
        // It starts again: every pair has exactly one session again, the same one on both sides.
        lan.start("c3")
        lan.run(until: lan.now + .seconds(10))
        for id in ids {
            #expect(lan.nodes[id]!.table.peers.count == 4, "\(id)")
            for (peer, connection) in lan.nodes[id]!.table.all {
                #expect(lan.nodes[peer]!.table[id]?.map(\.name) == [connection.name])
            }
        }
        for id in ids where id != "c3" { #expect(lan.nodes[id]!.plan.dialErrors["c3"] == nil) }
    }
}
