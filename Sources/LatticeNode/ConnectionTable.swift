@_spi(Tools) import LatticeProtocol

/// What the node's connection table needs of a session's connection.
package protocol SessionConnection: Hashable, Sendable {
    /// Whether this node dialed it.
    var initiatedHere: Bool { get }
    /// What the session grants the peer now.
    var access: PeerAccess { get }
    /// Whether it is still open.
    var isActive: Bool { get }
}

/// The node's sessions, per device. One session per device: two devices that
/// dialed each other at once settle on the same one of the two connections
/// (both sides decide alike), and trust is looked at again whenever it
/// changes. A value: the node runs it under its lock and carries out the
/// closes and pushes it returns; tests drive it with fake connections
/// (`ConnectionTableTests`).
package struct ConnectionTable<Connection: SessionConnection>: Sendable {
    package let ownDeviceID: String
    /// The sessions of each device, oldest first.
    package private(set) var byPeer: [String: [Connection]] = [:]

    package init(ownDeviceID: String) { self.ownDeviceID = ownDeviceID }

    /// What registering an authenticated connection decided.
    package struct Registration: Hashable, Sendable {
        package enum Verdict: Hashable, Sendable {
            /// It runs the device's session (any duplicates are in `closing`).
            case runs
            /// The device already has the session both sides keep: this one closes.
            case duplicate
            /// Trust changed since its handshake: it closes, and is not in the table.
            case trustChanged
            /// It closed before it was registered: nothing to do.
            case alreadyClosed
        }
        package var verdict: Verdict
        /// Connections to close: the duplicates, or this one.
        package var closing: [Connection]
    }

    /// A connection to `peer` passed its handshake with the access it was given; `accessNow` is what trust grants the peer now.
    package mutating func authenticated(_ connection: Connection, peer: String, accessNow: PeerAccess?) -> Registration {
        guard connection.isActive else { return Registration(verdict: .alreadyClosed, closing: []) }
        // Trust may have ended between the handshake and now, after the last trust sweep: look again.
        guard accessNow == connection.access else { return Registration(verdict: .trustChanged, closing: [connection]) }
        var sessions = byPeer[peer] ?? []
        sessions.append(connection)
        byPeer[peer] = sessions
        guard sessions.count > 1 else { return Registration(verdict: .runs, closing: []) }
        // Two that dialed each other at once keep the connection the smaller ID dialed; otherwise the newest stays.
        let keepInitiatedHere = ownDeviceID < peer
        let keep = sessions.last { $0.initiatedHere == keepInitiatedHere } ?? sessions.last!
        return Registration(verdict: keep == connection ? .runs : .duplicate, closing: sessions.filter { $0 != keep })
    }

    /// A connection of `peer` closed: the closed ones leave the table. Returns them, and whether the peer still has a session.
    package mutating func closed(peer: String) -> (ended: [Connection], stillConnected: Bool) {
        let sessions = byPeer[peer] ?? []
        let ended = sessions.filter { !$0.isActive }
        let open = sessions.filter(\.isActive)
        byPeer[peer] = open.isEmpty ? nil : open
        return (ended, !open.isEmpty)
    }

    /// What to do with a session when trust changed.
    package enum Verdict: Hashable, Sendable {
        /// Its access stands: push the commit.
        case push(Connection)
        /// A share opened more zones to the device: grant them, then push.
        case widen(Connection)
        /// Trust began, ended or narrowed: close it; the next session streams what the device may sync now.
        case close(Connection, peer: String)
    }

    /// Every session, judged against `accessOf` (what trust grants each device now).
    package func review(_ accessOf: (String) -> PeerAccess?) -> [Verdict] {
        byPeer.sorted { $0.key < $1.key }.flatMap { peer, sessions in
            let access = accessOf(peer)
            return sessions.map { connection -> Verdict in
                if connection.access == access { return .push(connection) }
                if let access, access.scopes == connection.access.scopes, access.sharedZones.isSuperset(of: connection.access.sharedZones) {
                    return .widen(connection)
                }
                return .close(connection, peer: peer)
            }
        }
    }

    /// Whether no device has a session.
    package var isEmpty: Bool { byPeer.isEmpty }

    /// Every session, with its device.
    package var all: [(peer: String, connection: Connection)] {
        byPeer.flatMap { peer, sessions in sessions.map { (peer, $0) } }
    }

    /// The sessions of `peer`.
    package subscript(peer: String) -> [Connection]? { byPeer[peer] }

    /// Devices with a session in the table.
    package var peers: Dictionary<String, [Connection]>.Keys { byPeer.keys }
}
