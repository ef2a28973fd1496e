import Foundation
@testable import Lattice
import LatticeTestSupport
import LatticeTransport
import Testing

/// Relaying through real nodes on loopback (TCP, the encrypted channel, the
/// stores and their commit sources): in a full mesh, a commit reaches each
/// node over its link with the writer alone. (Sources lost mid-relay are
/// driven by `SyncSimulationTests`' cuts and `RelayTests`.)
@Suite(.serialized) struct RelayNodeTests {
    func holds(_ container: Container, _ name: String) -> Bool {
        (try? container.privateCloudDatabase.record(for: Record.ID(recordName: name))) != nil
    }

    /// Synchronous on purpose: in an async test the library's async overloads would be chosen.
    func save(_ container: Container, _ name: String) throws {
        _ = try container.privateCloudDatabase.save(movie(name, ["title": .string(name)]))
    }

    /// Messages on each node's links, by peer.
    func traffic(_ nodes: [SyncNode]) -> [[String: Int]] {
        nodes.map { node in
            var counts: [String: Int] = [:]
            for peer in node.connectedPeers {
                let traffic = node.connection(to: peer)?.traffic ?? Traffic()
                counts[peer] = traffic.sent + traffic.received
            }
            return counts
        }
    }

    /// Until no link carried a message for `quiet` seconds.
    func settle(_ nodes: [SyncNode], quiet: Double = 1.5) async throws {
        var last = traffic(nodes)
        var still = Date()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            try await Task.sleep(nanoseconds: 250_000_000)
            let now = traffic(nodes)
            if now != last {
                last = now
                still = Date()
            } else if Date().timeIntervalSince(still) >= quiet {
                return
            }
        }
        Issue.record("the mesh never went quiet")
    }

    /// A full mesh of `count` account devices on loopback, connected.
    func mesh(_ directory: TemporaryDirectory, _ count: Int) async throws -> ([Container], [SyncNode]) {
        // Digest comparisons run on a schedule of their own after syncs (`DiffCLITests`):
        // off here, so what each link carries is the relay's alone.
        try await loopbackMesh(directory, count) { $0.verificationInterval = .zero }
    }

    @Test func aCommitCrossesOnlyTheWritersLinks() async throws {
        let directory = TemporaryDirectory()
        let (containers, nodes) = try await mesh(directory, 4)
        try save(containers[0], "warmup")
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "warmup") } })
        try await settle(nodes)
        for round in 0..<3 {
            let before = traffic(nodes)
            try save(containers[0], "m\(round)")
            #expect(await eventually(60) { containers.allSatisfy { holds($0, "m\(round)") } })
            try await settle(nodes)
            let after = traffic(nodes)
            let writer = containers[0].deviceID
            for index in 1..<4 {
                let busy = after[index].filter { peer, count in peer != writer && count != before[index][peer] }
                #expect(busy.isEmpty, "round \(round): node \(index) exchanged messages with \(busy.count) peers besides the writer")
            }
        }
        for node in nodes.reversed() { await node.stop() }
    }
}
