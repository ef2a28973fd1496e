@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import NIOCore

/// Which peer is asked for which part of which asset, and when: the asset
/// fetcher's policy as a value with time as an input (DESIGN §4). Per asset,
/// the outline first, then chunks, a few in flight per peer, spread over
/// every peer whose session may carry one of the asset's zones. A peer that
/// lacks the asset, sends what does not check, or leaves a request
/// unanswered is left out of that asset for a while, and the request is
/// asked of another. The smallest assets go first (a thumbnail does not wait
/// behind a film), a bounded number at once.
///
/// The fetcher reads the store, checks and writes content, and sends the
/// requests this returns; tests drive it with peers that fail (`AssetScheduleTests`).
package struct AssetSchedule: Sendable {
    package struct Settings: Sendable {
        /// Chunks asked of one peer at once: record batches queue behind at most these (2 MiB).
        package var chunksInFlightPerPeer = 8
        /// How long a peer that sent a bad chunk of an asset (or did not answer) is not asked for it again.
        package var retryAfterBadContent: TimeAmount = .seconds(30)
        /// How long a peer that lacks an asset (it may be fetching it itself) is not asked for it again.
        package var retryAfterMissing: TimeAmount = .seconds(2)
        /// A request not answered in this time is asked of another peer.
        package var replyTimeout: TimeAmount = .seconds(20)
        /// Assets fetched at once (each holds a file open).
        package var maximumActive = 32
        /// Progress is reported at most this often per asset (a large one would flood the event stream).
        package var progressInterval: TimeAmount = .milliseconds(50)

        package init() {}
    }

    /// A connected peer, as the schedule sees it.
    package struct Peer: Hashable, Sendable {
        package var id: String
        package var access: PeerAccess

        package init(id: String, access: PeerAccess) {
            self.id = id
            self.access = access
        }
    }

    /// A request to send.
    package struct Request: Hashable, Sendable {
        package var peer: String
        package var asset: AssetReference
        /// nil: the outline.
        package var chunk: Int?

        package init(peer: String, asset: AssetReference, chunk: Int?) {
            self.peer = peer
            self.asset = asset
            self.chunk = chunk
        }
    }

    /// One asset being fetched.
    package struct Want: Sendable {
        package var asset: AssetReference
        package var zones: Set<ZoneKey>
        /// The peer asked for the outline, while it is asked.
        package var outlineFrom: String?
        /// The chunks not yet here, once the outline is: nil before.
        package var missing: Set<Int>?
        /// Chunk → the peer it was asked of.
        package var inFlight: [Int: String] = [:]
        /// When each request in flight was made (chunk; -1 the outline).
        var askedAt: [Int: NIODeadline] = [:]
        /// Peers not to ask for it until then.
        var avoid: [String: NIODeadline] = [:]
        package var bytesByPeer: [String: Int64] = [:]
        /// What went wrong last, for the status.
        package var problem: String?
        var lastProgress: NIODeadline?

        /// Whether nothing of it is asked of any peer now.
        package var isUnasked: Bool { outlineFrom == nil && inFlight.isEmpty }
    }

    package let settings: Settings
    package private(set) var wants: [AssetReference: Want] = [:]

    package init(settings: Settings = Settings()) { self.settings = settings }

    /// Whether nothing is asked of any peer now.
    package var isIdle: Bool { wants.values.allSatisfy(\.isUnasked) }

    /// The asset with this hash, if it is wanted.
    package func asset(withHash hash: [UInt8]) -> AssetReference? { wants.keys.first { $0.hash == hash } }

    /// When something is due without a reply: the first request to time out, or the first avoided peer to be asked again.
    package var nextWake: NIODeadline? {
        wants.values.flatMap { want in want.askedAt.values.map { $0 + settings.replyTimeout } + want.avoid.values }.min()
    }

    // MARK: Inputs

    /// The store says these assets are to be fetched (with the zones whose records reference them); returns those no longer wanted.
    package mutating func wanted(_ entries: [(asset: AssetReference, zones: Set<ZoneKey>)]) -> [AssetReference] {
        var current = Set<AssetReference>()
        for entry in entries {
            current.insert(entry.asset)
            wants[entry.asset, default: Want(asset: entry.asset, zones: entry.zones)].zones = entry.zones
        }
        let dropped = wants.keys.filter { !current.contains($0) }
        for asset in dropped { wants[asset] = nil }
        return dropped
    }

    /// Only these peers have sessions now: what the others had in flight is asked again.
    package mutating func sessionsChanged(live: Set<String>) {
        for (asset, var want) in wants {
            for (chunk, peer) in want.inFlight where !live.contains(peer) {
                want.inFlight[chunk] = nil
                want.askedAt[chunk] = nil
            }
            if let from = want.outlineFrom, !live.contains(from) {
                want.outlineFrom = nil
                want.askedAt[-1] = nil
            }
            wants[asset] = want
        }
    }

    /// Requests unanswered too long are asked of others, and their peer avoided as one that lies; returns whether any expired.
    @discardableResult
    package mutating func expire(at now: NIODeadline) -> Bool {
        var expired = false
        for (asset, var want) in wants {
            for (chunk, asked) in want.askedAt where now - asked > settings.replyTimeout {
                let peer = chunk < 0 ? want.outlineFrom : want.inFlight[chunk]
                if chunk < 0 { want.outlineFrom = nil } else { want.inFlight[chunk] = nil }
                want.askedAt[chunk] = nil
                expired = true
                guard let peer else { continue }
                want.avoid[peer] = now + settings.retryAfterBadContent
                want.problem = "\(peer.prefix(8)) did not answer in \(settings.replyTimeout.nanoseconds / 1_000_000_000) s"
            }
            wants[asset] = want
        }
        return expired
    }

    /// What to ask of `peers` now, within each peer's window.
    package mutating func requests(at now: NIODeadline, peers: [Peer]) -> [Request] {
        var inFlightByPeer: [String: Int] = [:]
        for want in wants.values {
            for peer in want.inFlight.values { inFlightByPeer[peer, default: 0] += 1 }
            if let peer = want.outlineFrom { inFlightByPeer[peer, default: 0] += 1 }
        }
        // Peers whose time out is over may be asked again: `nextWake` waits for the others only.
        for asset in wants.keys { wants[asset]!.avoid = wants[asset]!.avoid.filter { $0.value > now } }
        var requests: [Request] = []
        for asset in wants.keys.sorted(by: { ($0.size, $0.hexHash) < ($1.size, $1.hexHash) }).prefix(settings.maximumActive) {
            guard var want = wants[asset] else { continue }
            let candidates = peers.filter { peer in
                (want.avoid[peer.id].map { $0 <= now } ?? true) && want.zones.contains { peer.access.allows($0) }
            }
            guard let missing = want.missing else {
                if want.outlineFrom == nil, let peer = candidates.min(by: { inFlightByPeer[$0.id, default: 0] < inFlightByPeer[$1.id, default: 0] }) {
                    want.outlineFrom = peer.id
                    want.askedAt[-1] = now
                    inFlightByPeer[peer.id, default: 0] += 1
                    requests.append(Request(peer: peer.id, asset: asset, chunk: nil))
                }
                wants[asset] = want
                continue
            }
            var unasked = missing.filter { want.inFlight[$0] == nil }.sorted()[...]
            var progressed = true
            while !unasked.isEmpty, progressed {
                progressed = false
                for peer in candidates where inFlightByPeer[peer.id, default: 0] < settings.chunksInFlightPerPeer {
                    guard let chunk = unasked.popFirst() else { break }
                    want.inFlight[chunk] = peer.id
                    want.askedAt[chunk] = now
                    inFlightByPeer[peer.id, default: 0] += 1
                    requests.append(Request(peer: peer.id, asset: asset, chunk: chunk))
                    progressed = true
                }
            }
            wants[asset] = want
        }
        return requests
    }

    // MARK: Replies

    /// `peer` says it lacks the asset (or the chunk); returns whether it was asked.
    @discardableResult
    package mutating func unavailable(_ asset: AssetReference, chunk: Int?, from peer: String, reason: String, at now: NIODeadline) -> Bool {
        guard var want = wants[asset], (chunk.map { want.inFlight[$0] } ?? want.outlineFrom) == peer else { return false }
        if let chunk { want.inFlight[chunk] = nil } else { want.outlineFrom = nil }
        want.askedAt[chunk ?? -1] = nil
        want.avoid[peer] = now + settings.retryAfterMissing
        want.problem = "\(peer.prefix(8)): \(reason)"
        wants[asset] = want
        return true
    }

    /// An outline arrived from `peer`; returns whether it was asked for and is still needed (then check it).
    package mutating func outlineArrived(_ asset: AssetReference, from peer: String) -> Bool {
        guard var want = wants[asset], want.outlineFrom == peer else { return false }
        want.outlineFrom = nil
        want.askedAt[-1] = nil
        wants[asset] = want
        return want.missing == nil
    }

    /// The outline checked: these chunks are still to come (a cut transfer left the others).
    package mutating func outlineAccepted(_ asset: AssetReference, missing: [Int]) {
        wants[asset]?.missing = Set(missing)
    }

    /// A chunk arrived from `peer`; returns whether it was asked of it (then check it).
    package mutating func chunkArrived(_ asset: AssetReference, chunk: Int, from peer: String) -> Bool {
        guard var want = wants[asset], want.inFlight[chunk] == peer else { return false }
        want.inFlight[chunk] = nil
        want.askedAt[chunk] = nil
        wants[asset] = want
        return true
    }

    /// What `peer` sent does not check against the asset's hash: nothing of it is written, and the peer is avoided for this asset.
    package mutating func rejected(_ asset: AssetReference, from peer: String, problem: String, at now: NIODeadline) {
        wants[asset]?.avoid[peer] = now + settings.retryAfterBadContent
        wants[asset]?.problem = "\(peer.prefix(8)) \(problem)"
    }

    /// A checked chunk was written; returns whether progress is to be reported now.
    package mutating func chunkWritten(_ asset: AssetReference, chunk: Int, bytes: Int, from peer: String, at now: NIODeadline) -> Bool {
        guard var want = wants[asset] else { return false }
        want.missing?.remove(chunk)
        want.bytesByPeer[peer, default: 0] += Int64(bytes)
        let complete = want.missing?.isEmpty ?? false
        let report = complete || want.lastProgress.map { now - $0 >= settings.progressInterval } ?? true
        if report { want.lastProgress = now }
        wants[asset] = want
        return report
    }

    /// Fetching the asset failed here (a file that cannot be written): the status says why.
    package mutating func failed(_ asset: AssetReference, problem: String) {
        wants[asset]?.problem = problem
    }

    /// The asset is whole and in the store.
    package mutating func completed(_ asset: AssetReference) {
        wants[asset] = nil
    }
}
