import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeNode
import LatticeTransport
import NIOCore

/// Fetches the content of assets that records here reference and this store
/// lacks, from any connected peer that holds it (DESIGN §4): small assets
/// (`eagerThreshold`, outside the public database) and those of eager zones
/// as soon as their records arrive, others when asked for (`lattice asset fetch`, `SyncNode.fetchAssets`).
///
/// Whom to ask for what, and when, is `AssetSchedule`'s (a value tested on a
/// manual clock); this runs it: reads the store for what is wanted, checks
/// each outline and chunk against the asset's hash before a byte is written
/// (`PartialAsset`), sends the schedule's requests, and wakes when it says.
///
/// Everything runs on one serial queue, off the network's event loop.
final class AssetFetcher: @unchecked Sendable {
    struct Settings: Sendable {
        /// Assets up to this size come with their records' sync (CloudKit-sized thumbnails, icons).
        var eagerThreshold: Int64 = 256 * 1024
        var schedule = AssetSchedule.Settings()
    }

    /// What the fetcher tells the node.
    enum Report: Sendable {
        case progress(asset: AssetReference, peer: String, bytesDone: Int64)
        case fetched(asset: AssetReference, fetchedBytes: Int64, resumedBytes: Int64)
        case chunkRejected(asset: AssetReference, peer: String, chunk: Int, reason: String)
        case status([NodeStatus.AssetTransfer], overQuota: [NodeStatus.QuotaHold])
    }

    let settings: Settings
    private let store: RecordStore
    private let connections: @Sendable () -> [(peer: String, handle: ConnectionHandle)]
    /// Set once, by the node that owns the fetcher, before it starts.
    var report: @Sendable (Report) -> Void = { _ in }
    private let queue = DispatchQueue(label: "lattice.assets")
    // Confined to `queue`:
    private var schedule: AssetSchedule
    /// The files of assets whose outline arrived.
    private var partials: [AssetReference: PartialAsset] = [:]
    /// What the quota held back at the last refresh.
    private var overQuota: [NodeStatus.QuotaHold] = []
    private var refreshScheduled = false
    private var publishScheduled = false
    /// When the queue wakes for the schedule next.
    private var wakeAt: NIODeadline?
    private var stopped = false

    init(store: RecordStore, settings: Settings = Settings(), connections: @escaping @Sendable () -> [(peer: String, handle: ConnectionHandle)]) {
        self.store = store
        self.settings = settings
        self.connections = connections
        schedule = AssetSchedule(settings: settings.schedule)
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
        queue.async {
            self.schedule.sessionsChanged(live: Set(self.liveConnections().map(\.peer)))
            self.pump()
        }
    }

    /// Whether nothing is asked of any peer now, and no refresh is due: what
    /// can be fetched from the peers connected has been.
    var isIdle: Bool {
        queue.sync { !refreshScheduled && schedule.isIdle }
    }

    func stop() {
        queue.sync {
            stopped = true
            schedule = AssetSchedule(settings: settings.schedule)
            partials.removeAll()
        }
    }

    /// A peer answered.
    func received(_ reply: AssetReply, from peer: String) {
        queue.async { self.handle(reply, from: peer) }
    }

    // MARK: On the queue

    private func liveConnections() -> [(peer: String, handle: ConnectionHandle)] {
        connections().filter { $0.handle.isActive }
    }

    private func refresh() {
        guard !stopped else { return }
        let found: [AssetEntry]
        do {
            (found, overQuota) = try store.read { snapshot in try fetchable(in: snapshot) }
        } catch {
            return
        }
        // No longer referenced, or arrived by another way (a bundle, a save): dropped, with what came of it.
        for asset in schedule.wanted(found.map { ($0.asset, $0.zones) }) where partials.removeValue(forKey: asset) != nil {
            if (try? store.read { try $0.hasAsset(asset.hash) }) == false {
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
        let wants = schedule.wants
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

    /// Sends what the schedule asks for now, and wakes when it next has something due.
    private func pump() {
        guard !stopped, !schedule.wants.isEmpty else { return }
        let now = NIODeadline.now()
        if schedule.expire(at: now) { publish() }
        let live = liveConnections()
        let handles = Dictionary(live.map { ($0.peer, $0.handle) }, uniquingKeysWith: { first, _ in first })
        for request in schedule.requests(at: now, peers: live.map { AssetSchedule.Peer(id: $0.peer, access: $0.handle.access) }) {
            handles[request.peer]?.requestAsset(AssetRequest(hash: request.asset.hash, size: request.asset.size, chunk: request.chunk))
        }
        scheduleWake(after: now)
    }

    private func scheduleWake(after now: NIODeadline) {
        guard let next = schedule.nextWake, wakeAt.map({ next < $0 }) ?? true else { return }
        wakeAt = next
        let delay = Double(max(0, (next - now).nanoseconds)) / 1e9 + 0.01
        queue.asyncAfter(deadline: .now() + delay) {
            if self.wakeAt == next { self.wakeAt = nil }
            self.pump()
        }
    }

    private func handle(_ reply: AssetReply, from peer: String) {
        guard !stopped, let asset = schedule.asset(withHash: reply.key.hash) else { return }
        defer { pump() }
        let now = NIODeadline.now()
        switch reply {
        case .unavailable(_, let chunk, let reason):
            if schedule.unavailable(asset, chunk: chunk, from: peer, reason: reason, at: now) { publish() }
        case .outline(_, let chunks):
            guard schedule.outlineArrived(asset, from: peer) else { return }
            guard (try? AssetOutline.outlineMatches(chunks, hash: asset.hash, size: asset.size)) == true else {
                let reason = "an outline that does not hash to the asset"
                schedule.rejected(asset, from: peer, problem: "sent \(reason)", at: now)
                report(.chunkRejected(asset: asset, peer: peer, chunk: -1, reason: reason))
                return
            }
            let partial: PartialAsset
            do {
                partial = try PartialAsset(asset: asset, outline: chunks, store: store.directory)
            } catch {
                schedule.failed(asset, problem: "\(error)")
                return
            }
            partials[asset] = partial
            schedule.outlineAccepted(asset, missing: partial.missingChunks)
            if partial.isComplete { complete(asset) }
        case .chunk(_, let index, let leaves, let bytes):
            guard schedule.chunkArrived(asset, chunk: index, from: peer), let partial = partials[asset], index < partial.outline.count else { return }
            let problem: String?
            do {
                problem = try AssetOutline.problem(withChunk: index, leaves: leaves, bytes: bytes, expected: partial.outline[index], size: asset.size)
            } catch {
                problem = "\(error)"
            }
            if let problem {
                // Nothing of it is written; the chunk is asked of another peer.
                schedule.rejected(asset, from: peer, problem: "sent a bad chunk: \(problem)", at: now)
                report(.chunkRejected(asset: asset, peer: peer, chunk: index, reason: problem))
                publish()
                return
            }
            do {
                try partial.write(index, bytes: bytes, leaves: leaves)
            } catch {
                schedule.failed(asset, problem: "\(error)")
                return
            }
            if schedule.chunkWritten(asset, chunk: index, bytes: bytes.count, from: peer, at: now) {
                report(.progress(asset: asset, peer: peer, bytesDone: partial.bytesDone))
            }
            if partial.isComplete { complete(asset) } else { publishSoon() }
        }
    }

    private func complete(_ asset: AssetReference) {
        guard let partial = partials[asset] else { return }
        do {
            try partial.finish()
            try store.write { try $0.registerAsset(asset) }
        } catch {
            schedule.failed(asset, problem: "\(error)")
            return
        }
        schedule.completed(asset)
        partials[asset] = nil
        report(.fetched(asset: asset, fetchedBytes: partial.bytesDone - partial.resumedBytes, resumedBytes: partial.resumedBytes))
        publish()
    }

    private func publishSoon() {
        guard !publishScheduled else { return }
        publishScheduled = true
        queue.asyncAfter(deadline: .now() + 0.2) {
            self.publishScheduled = false
            self.publish()
        }
    }

    private func publish() {
        let transfers = schedule.wants.values.sorted { $0.asset.hexHash < $1.asset.hexHash }.map { want in
            let partial = partials[want.asset]
            return NodeStatus.AssetTransfer(
                hash: want.asset.hexHash, size: want.asset.size, bytesDone: partial?.bytesDone ?? 0,
                state: partial == nil ? "waiting" : "fetching", bytesByPeer: want.bytesByPeer, problem: want.problem)
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

