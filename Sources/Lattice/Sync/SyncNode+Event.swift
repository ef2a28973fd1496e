import Foundation
@_spi(Tools) import LatticeCore

extension SyncNode {
    /// What the node reports, per peer and zone.
    public enum Event: Sendable, Hashable {
        case listening(port: Int)
        case connected(peer: String, address: String)
        /// Discovery found a device, or what it advertises changed; `problem` says why
        /// this node will not sync with it (nil: it will).
        case discovered(peer: String, addresses: [String], problem: String?)
        /// Discovery no longer sees the device (its connection, if any, stays until it ends).
        case vanished(peer: String)
        /// mDNS does not work (no daemon, …): only static peers and incoming connections sync. Retried by itself.
        case discoveryUnavailable(reason: String)
        case discoveryAvailable
        /// A device proved its identity but is not trusted here: it got nothing.
        /// At most 5 in 10 seconds are sent; `status.strangers` counts every one.
        case refused(peer: String, address: String)
        case unreachable(address: String, reason: String)
        case disconnected(peer: String?, address: String, reason: Disconnection?)
        case syncStarted(peer: String, zone: ZoneKey, direction: Direction, records: Int, bytes: Int)
        case progress(peer: String, zone: ZoneKey, direction: Direction, recordsDone: Int, recordsTotal: Int, bytesDone: Int, bytesTotal: Int)
        case syncFinished(peer: String, zone: ZoneKey, direction: Direction)
        /// Records from the peer were stamped beyond the clock-skew bound: they wait, and come again later.
        case deferred(peer: String, zone: ZoneKey, records: Int)
        /// Records from the peer were refused: a write they bring was not its
        /// writer's right (a non-creator's edit of a public record). The rest
        /// of the batch was applied; the peer's stream comes again later.
        case writesRefused(peer: String, zone: ZoneKey, records: Int, reason: String)
        /// Both sides have sent all they had and committed all they got.
        case caughtUp(peer: String)
        /// A device this node trusts does not trust it back: they sync the public database only.
        case publicOnly(peer: String)
        /// Asset content arrived from a peer: `bytesDone` of `bytesTotal` are here (hash in hex).
        case assetProgress(asset: String, peer: String, bytesDone: Int64, bytesTotal: Int64)
        /// An asset's content is whole and in the store: `fetchedBytes` came over the network, `resumedBytes` were found from an earlier, cut transfer.
        case assetFetched(asset: String, fetchedBytes: Int64, resumedBytes: Int64)
        /// A peer sent asset content that does not check against the asset's hash (chunk -1: its outline); nothing of it was written, and it is asked of another peer.
        case assetRejected(asset: String, peer: String, chunk: Int, reason: String)
    }

    public enum Direction: String, Sendable, Hashable { case receiving, sending }
}
