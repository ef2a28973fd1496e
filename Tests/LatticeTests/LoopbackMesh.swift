import Foundation
@testable import Lattice
import LatticeTestSupport
import Testing

/// Settings for a node of a test mesh on loopback, dialing `peers`.
func loopbackConfiguration(peers: [Int], _ configure: (inout SyncNode.Configuration) -> Void) -> SyncNode.Configuration {
    var configuration = SyncNode.Configuration()
    configuration.port = 0
    configuration.listenHost = "127.0.0.1"
    configuration.peers = peers.map { PeerAddress(host: "127.0.0.1", port: $0) }
    configure(&configuration)
    return configuration
}

/// A full mesh of `count` devices of one account (each trusts the others)
/// on loopback, started and connected.
func loopbackMesh(_ directory: TemporaryDirectory, _ count: Int, _ configure: (inout SyncNode.Configuration) -> Void = { _ in }) async throws -> ([Container], [SyncNode]) {
    let containers = try (0..<count).map { try directory.container("n\($0)") }
    for a in containers { for b in containers where a !== b { try a.trust(deviceID: b.deviceID) } }
    var nodes: [SyncNode] = []
    for container in containers {
        let node = SyncNode(container: container, configuration: loopbackConfiguration(peers: nodes.compactMap(\.listeningPort), configure))
        try await node.start()
        nodes.append(node)
    }
    #expect(await eventually(60) { nodes.allSatisfy { $0.connectedPeers.count == count - 1 } })
    return (containers, nodes)
}
