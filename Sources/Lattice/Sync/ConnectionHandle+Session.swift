import LatticeNode
import LatticeTransport

/// A transport connection is what the node's connection table holds.
extension ConnectionHandle: SessionConnection {
    package var initiatedHere: Bool { initiator }
}
