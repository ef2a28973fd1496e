import Foundation
import LatticeCore
import LatticeCrypto
import LatticeProtocol
import LatticeStore
import LatticeTransport

/// Fetches the content of assets that records here reference and this store
/// lacks, from any connected peer that holds it (DESIGN §4): small assets
/// (`eagerThreshold`, outside the public database) and those of eager zones
/// as soon as their records arrive, others when asked for (`lattice asset fetch`, `SyncNode.fetchAssets`).
///
/// Per asset: the outline first (checked against the asset's hash), then
/// chunks, a few in flight per peer, spread over every peer that may have
/// it; each chunk is checked before it is written (`PartialAsset`). A peer
/// that lacks the asset, or sends a chunk that does not check, is left out
/// of that asset for a while and the chunk is asked of another.
///
/// Everything runs on one serial queue, off the network's event loop.
final class AssetFetcher: @unchecked Sendable {
    struct Settings: Sendable {
        /// Assets up to this size come with their records' sync (CloudKit-sized thumbnails, icons).
        var eagerThreshold: Int64 = 256 * 1024
        /// Chunks asked of one peer at once: record batches queue behind at most these (2 MiB).
        var chunksInFlightPerPeer = 8
        /// How long a peer that sent a bad chunk of an asset is not asked for it again.
        var retryAfterBadContent: TimeInterval = 30
        /// How long a peer that lacks an asset (it may be fetching it itself) is not asked for it again.
        var retryAfterMissing: TimeInterval = 2
        /// A request not answered in this time is asked of another peer (and its peer avoided as a bad one).
        var replyTimeout: TimeInterval = 20
    }

    /// What the fetcher tells the node.
    enum Report: Sendable {
        case progress(asset: AssetReference, peer: String, bytesDone: Int64)
        case fetched(asset: AssetReference, fetchedBytes: Int64, resumedBytes: Int64)
        case chunkRejected(asset: AssetReference, peer: String, chunk: Int, reason: String)
        case status([NodeStatus.AssetTransfer], overQuota: [NodeStatus.QuotaHold])
    }

    private struct Want {
        var asset: AssetReference
        var zones: Set<ZoneKey>
        /// The peer asked for the outline, while it is asked.
        var outlineFrom: String?
        var partial: PartialAsset?
        /// Chunk → the peer it was asked of.
        var inFlight: [Int: String] = [:]
        /// When each request in flight was made (chunk; -1 the outline).
        var askedAt: [Int: Date] = [:]
        /// Peers not to ask for it until then: they lack it, or sent what did not check.
        var avoid: [String: Date] = [:]
        var bytesByPeer: [String: Int64] = [:]
        var problem: String?
        var lastProgress = Date.distantPast
    }

    let settings: Settings
    /// Assets fetched at once.
    static let maximumActive = 32
    private let store: RecordStore
    private let connections: @Sendable () -> [(peer: String, handle: ConnectionHandle)]
    /// Set once, by the node that owns the fetcher, before it starts.
    var report: @Sendable (Report) -> Void = { _ in }
    private let queue = DispatchQueue(label: "lattice.assets")
    // Confined to `queue`:
    private var wants: [AssetReference: Want] = [:]
    private var refreshScheduled = false
    private var stopped = false

    init(store: RecordStore, settings: Settings = Settings(), connections: @escaping @Sendable () -> [(peer: String, handle: ConnectionHandle)]) {
        self.store = store
        self.settings = settings
        self.connections = connections
    }

    /// Records arrived or someone asked for assets: the store is read again soon (at most every 100 ms).
    func refreshSoon() {
        queue.async {
            guard !self.refreshScheduled, !self.stopped else { return }
            self.refreshScheduled = true
            self.queue.asyncAfter(deadline: .now() + 0.1) {
                self.refreshScheduled = false
                self.refresh()
            }
        }
    }

    /// Connections changed: ask the new ones, requeue what the closed ones had in flight.
    func connectionsChanged() {
        queue.async { self.requeueLost(); self.pump() }
    }

    /// Whether nothing is asked of any peer now, and no refresh is due: what
    /// can be fetched from the peers connected has been.
    var isIdle: Bool {
        queue.sync { !refreshScheduled && wants.values.allSatisfy { $0.outlineFrom == nil && $0.inFlight.isEmpty } }
    }

    func stop() {
        queue.sync {
            stopped = true
            wants.removeAll()
        }
    }

    /// A peer answered.
    func received(_ reply: AssetReply, from peer: String) {
        queue.async { self.handle(reply, from: peer) }
    }

    // MARK: On the queue

    private func refresh() {
        guard !stopped else { return }
        let found: [AssetEntry]
        do {
            (found, overQuota) = try store.read { snapshot in try fetchable(in: snapshot) }
        } catch {
            return
        }
        var current = Set<AssetReference>()
        for entry in found {
            current.insert(entry.asset)
            if wants[entry.asset] == nil {
                wants[entry.asset] = Want(asset: entry.asset, zones: entry.zones)
            } else {
                wants[entry.asset]!.zones = entry.zones
            }
        }
        // No longer referenced, or arrived by another way (a bundle, a save): dropped, with what came of it.
        for asset in wants.keys where !current.contains(asset) {
            let partial = wants.removeValue(forKey: asset)?.partial
            if partial != nil, (try? store.read { try $0.hasAsset(asset.hash) }) == false {
                for url in [AssetFiles.partialPath(for: asset, in: store.directory), AssetFiles.partialLeavesPath(for: asset, in: store.directory)] {
                    try? FileManager.default.removeItem(at: url)
                }
            }
        }
        pump()
        publish()
    }

    /// The missing assets to fetch now: those asked for, then those of eager
    /// zones and small ones, within the quota for content written outside
    /// this account (the ones being fetched first, then smallest first); and
    /// what the quota holds back, per source.
    private func fetchable(in snapshot: StoreSnapshot) throws -> ([AssetEntry], [NodeStatus.QuotaHold]) {
        let eager = Self.eagerZones(in: snapshot)
        var chosen: [AssetEntry] = []
        var automatic: [AssetEntry] = []
        for entry in try snapshot.assetEntries(missingOnly: true, limit: 10_000) {
            if entry.isWanted {
                chosen.append(entry)
            } else if !entry.zones.isDisjoint(with: eager) || (entry.asset.size <= settings.eagerThreshold && entry.zones.contains(where: Self.fetchesSmallAssetsEagerly)) {
                automatic.append(entry)
            }
        }
        var admission: AssetQuotaAdmission?
        for entry in automatic.sorted(by: { (wants[$0.asset] == nil ? 1 : 0, $0.asset.size, $0.asset.hexHash) < (wants[$1.asset] == nil ? 1 : 0, $1.asset.size, $1.asset.hexHash) }) {
            let sources = try snapshot.sources(of: entry)
            if sources.contains(AssetSource.thisAccount) || sources.isEmpty {
                chosen.append(entry)
                continue
            }
            if admission == nil { admission = AssetQuotaAdmission(quota: AssetQuota.read(in: snapshot), usage: try snapshot.assetUsage()) }
            if admission!.admit(entry.asset.size, from: sources) { chosen.append(entry) }
        }
        let held = (admission?.refused ?? [:]).map { NodeStatus.QuotaHold(source: $0.key.description, assets: $0.value.assets, bytes: $0.value.bytes) }
        return (chosen, held.sorted { $0.source < $1.source })
    }

    /// What the quota held back at the last refresh.
    private var overQuota: [NodeStatus.QuotaHold] = []

    /// Whether small assets of `zone` come with its records by default: not
    /// in the public database, where any device on the LAN can write records
    /// that reference content and serve it, so eager fetching would let a
    /// stranger fill this device's disk. There it is lazy unless the zone is
    /// made eager here (`lattice zone assets _defaultZone eager --database public`).
    static func fetchesSmallAssetsEagerly(_ zone: ZoneKey) -> Bool { zone.scope != .public }

    /// Zones whose assets come with their records (`lattice zone assets ZONE eager`).
    static func eagerZones(in snapshot: StoreSnapshot) -> Set<ZoneKey> {
        guard let text = try? snapshot.setting(AssetPolicy.settingKey) else { return [] }
        return Set(text.split(separator: "\n").compactMap { ZoneKey(settingLine: String($0)) })
    }

    private func requeueLost() {
        let live = Set(connections().filter { $0.handle.isActive }.map(\.peer))
        for asset in Array(wants.keys) {
            guard var want = wants[asset] else { continue }
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

    /// Requests a peer left unanswered too long are asked of others (a peer that stalls is avoided as one that lies).
    private func expireUnanswered(now: Date) {
        var expired = false
        defer { if expired { publish() } }
        for asset in Array(wants.keys) {
            guard var want = wants[asset] else { continue }
            for (chunk, asked) in want.askedAt where now.timeIntervalSince(asked) > settings.replyTimeout {
                let peer = chunk < 0 ? want.outlineFrom : want.inFlight[chunk]
                if chunk < 0 { want.outlineFrom = nil } else { want.inFlight[chunk] = nil }
                want.askedAt[chunk] = nil
                expired = true
                guard let peer else { continue }
                want.avoid[peer] = now.addingTimeInterval(settings.retryAfterBadContent)
                want.problem = "\(peer.prefix(8)) did not answer in \(Int(settings.replyTimeout)) s"
            }
            wants[asset] = want
        }
    }

    private var sweepScheduled = false

    /// While requests are in flight, looks for unanswered ones every few seconds.
    private func scheduleSweep() {
        guard !sweepScheduled, wants.values.contains(where: { !$0.askedAt.isEmpty }) else { return }
        sweepScheduled = true
        queue.asyncAfter(deadline: .now() + settings.replyTimeout / 4) {
            self.sweepScheduled = false
            self.pump()
        }
    }

    /// Asks peers for what is wanted, within each peer's window.
    private func pump() {
        guard !stopped, !wants.isEmpty else { return }
        let now = Date()
        expireUnanswered(now: now)
        defer { scheduleSweep() }
        let peers = connections().filter { $0.handle.isActive }
        guard !peers.isEmpty else { return }
        var inFlightByPeer: [String: Int] = [:]
        for want in wants.values {
            for peer in want.inFlight.values { inFlightByPeer[peer, default: 0] += 1 }
            if let peer = want.outlineFrom { inFlightByPeer[peer, default: 0] += 1 }
        }
        // Smallest first: a thumbnail does not wait behind a film. A few at once (each holds a file open).
        for asset in wants.keys.sorted(by: { ($0.size, $0.hexHash) < ($1.size, $1.hexHash) }).prefix(Self.maximumActive) {
            guard var want = wants[asset] else { continue }
            let candidates = peers.filter { peer in
                (want.avoid[peer.peer].map { $0 <= now } ?? true) && want.zones.contains { peer.handle.access.allows($0) }
            }
            if want.partial == nil {
                if want.outlineFrom == nil, let peer = candidates.min(by: { inFlightByPeer[$0.peer, default: 0] < inFlightByPeer[$1.peer, default: 0] }) {
                    want.outlineFrom = peer.peer
                    want.askedAt[-1] = now
                    inFlightByPeer[peer.peer, default: 0] += 1
                    peer.handle.requestAsset(AssetRequest(hash: asset.hash, size: asset.size, chunk: nil))
                }
                wants[asset] = want
                continue
            }
            var missing = want.partial!.missingChunks.filter { want.inFlight[$0] == nil }[...]
            var progressed = true
            while !missing.isEmpty, progressed {
                progressed = false
                for peer in candidates where inFlightByPeer[peer.peer, default: 0] < settings.chunksInFlightPerPeer {
                    guard let chunk = missing.popFirst() else { break }
                    want.inFlight[chunk] = peer.peer
                    want.askedAt[chunk] = now
                    inFlightByPeer[peer.peer, default: 0] += 1
                    peer.handle.requestAsset(AssetRequest(hash: asset.hash, size: asset.size, chunk: chunk))
                    progressed = true
                }
            }
            wants[asset] = want
        }
        scheduleRetry(after: now)
    }

    private var retryScheduled = false

    /// A want that no peer is asked for because its peers are avoided for now is tried again when the first may be asked.
    private func scheduleRetry(after now: Date) {
        guard !retryScheduled else { return }
        let waiting = wants.values.filter { $0.outlineFrom == nil && $0.inFlight.isEmpty }
        guard let next = waiting.flatMap({ $0.avoid.values.filter { $0 > now } }).min() else { return }
        retryScheduled = true
        queue.asyncAfter(deadline: .now() + next.timeIntervalSince(now) + 0.01) {
            self.retryScheduled = false
            self.pump()
        }
    }

    private func handle(_ reply: AssetReply, from peer: String) {
        guard !stopped else { return }
        let key = reply.key
        guard let asset = wants.keys.first(where: { $0.hash == key.hash }), var want = wants[asset] else { return }
        defer {
            if wants[asset] != nil { wants[asset] = want }
            pump()
        }
        switch reply {
        case .unavailable(_, let chunk, let reason):
            guard (chunk.map { want.inFlight[$0] } ?? want.outlineFrom) == peer else { return }
            if let chunk { want.inFlight[chunk] = nil } else { want.outlineFrom = nil }
            want.askedAt[chunk ?? -1] = nil
            want.avoid[peer] = Date().addingTimeInterval(settings.retryAfterMissing)
            want.problem = "\(peer.prefix(8)): \(reason)"
            publish()
        case .outline(_, let chunks):
            guard want.outlineFrom == peer else { return }
            want.outlineFrom = nil
            want.askedAt[-1] = nil
            guard want.partial == nil else { return }
            guard (try? AssetOutline.outlineMatches(chunks, hash: asset.hash, size: asset.size)) == true else {
                want.avoid[peer] = Date().addingTimeInterval(settings.retryAfterBadContent)
                want.problem = "\(peer.prefix(8)) sent an outline that does not hash to the asset"
                report(.chunkRejected(asset: asset, peer: peer, chunk: -1, reason: "an outline that does not hash to the asset"))
                return
            }
            do {
                want.partial = try PartialAsset(asset: asset, outline: chunks, store: store.directory)
            } catch {
                want.problem = "\(error)"
                return
            }
            if want.partial!.isComplete { complete(&want, asset) }
        case .chunk(_, let index, let leaves, let bytes):
            guard want.inFlight[index] == peer else { return }
            want.inFlight[index] = nil
            want.askedAt[index] = nil
            guard let partial = want.partial, index < partial.outline.count else { return }
            let problem: String?
            do {
                problem = try AssetOutline.problem(withChunk: index, leaves: leaves, bytes: bytes, expected: partial.outline[index], size: asset.size)
            } catch {
                problem = "\(error)"
            }
            if let problem {
                // Nothing of it is written; the chunk is asked of another peer.
                want.avoid[peer] = Date().addingTimeInterval(settings.retryAfterBadContent)
                want.problem = "\(peer.prefix(8)) sent a bad chunk: \(problem)"
                report(.chunkRejected(asset: asset, peer: peer, chunk: index, reason: problem))
                publish()
                return
            }
            do {
                try partial.write(index, bytes: bytes, leaves: leaves)
            } catch {
                want.problem = "\(error)"
                return
            }
            want.bytesByPeer[peer, default: 0] += Int64(bytes.count)
            // Progress at most every 50 ms an asset: a large one would flood the event stream.
            let now = Date()
            if partial.isComplete || now.timeIntervalSince(want.lastProgress) >= 0.05 {
                want.lastProgress = now
                report(.progress(asset: asset, peer: peer, bytesDone: partial.bytesDone))
            }
            if partial.isComplete { complete(&want, asset) } else { publishSoon() }
        }
    }

    private func complete(_ want: inout Want, _ asset: AssetReference) {
        guard let partial = want.partial else { return }
        do {
            try partial.finish()
            try store.write { try $0.registerAsset(asset) }
        } catch {
            want.problem = "\(error)"
            return
        }
        wants[asset] = nil
        report(.fetched(asset: asset, fetchedBytes: partial.bytesDone - partial.resumedBytes, resumedBytes: partial.resumedBytes))
        publish()
    }

    private var publishScheduled = false

    private func publishSoon() {
        guard !publishScheduled else { return }
        publishScheduled = true
        queue.asyncAfter(deadline: .now() + 0.2) {
            self.publishScheduled = false
            self.publish()
        }
    }

    private func publish() {
        let transfers = wants.values.sorted { $0.asset.hexHash < $1.asset.hexHash }.map { want in
            NodeStatus.AssetTransfer(
                hash: want.asset.hexHash, size: want.asset.size, bytesDone: want.partial?.bytesDone ?? 0,
                state: want.partial == nil ? "waiting" : "fetching", bytesByPeer: want.bytesByPeer, problem: want.problem)
        }
        report(.status(transfers, overQuota: overQuota))
    }
}

/// Which zones' assets come with their records.
public enum AssetPolicy: String, Sendable, CaseIterable {
    /// Every asset of the zone comes with its record, whatever its size.
    case eager
    /// Assets above the threshold (256 KiB) come when asked for.
    case lazy

    static let settingKey = "assets.eagerZones"
}

extension ZoneKey {
    /// The zone as a line of the eager-zones setting.
    var settingLine: String { "\(scope.rawValue)\t\(zoneID.zoneName)\t\(zoneID.ownerName)" }

    init?(settingLine line: String) {
        let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = UInt8(parts[0]), let scope = DatabaseScope(rawValue: raw) else { return nil }
        self.init(scope: scope, zoneID: ZoneID(zoneName: String(parts[1]), ownerName: String(parts[2])))
    }
}
