import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore
import NIOCore

extension SyncNode {
    func handleAssetReport(_ report: AssetFetcher.Report) {
        switch report {
        case .progress(let asset, let peer, let bytesDone):
            continuation.yield(.assetProgress(asset: asset.hexHash, peer: peer, bytesDone: bytesDone, bytesTotal: asset.size))
        case .fetched(let asset, let fetchedBytes, let resumedBytes):
            logger.info("asset fetched", metadata: ["asset": "\(asset.hexHash.prefix(16))", "bytes": "\(asset.size)", "fetched": "\(fetchedBytes)", "resumed": "\(resumedBytes)"])
            continuation.yield(.assetFetched(asset: asset.hexHash, fetchedBytes: fetchedBytes, resumedBytes: resumedBytes))
        case .chunkRejected(let asset, let peer, let chunk, let reason):
            logger.warning("asset content refused: it does not check against the asset's hash", metadata: [
                "asset": "\(asset.hexHash.prefix(16))", "peer": "\(peer)", "chunk": "\(chunk)", "reason": "\(reason)"])
            continuation.yield(.assetRejected(asset: asset.hexHash, peer: peer, chunk: chunk, reason: reason))
        case .status(let transfers, let overQuota):
            state.withLockedValue {
                $0.status.assets = transfers.isEmpty ? nil : transfers
                $0.status.assetsOverQuota = overQuota.isEmpty ? nil : overQuota
            }
            publishStatus()
        }
    }

    /// Content no live record references any more is removed once no
    /// reference can come back to this device from one that has not seen
    /// the changes that dropped them: every other device of the account
    /// (the devices that hold a private zone) holds a vector of the zone
    /// covering those changes, as their hellos, acknowledgements and claims
    /// said (in this run, or saved by an earlier one). Assets of shared zones and
    /// of the public database are kept: not every device that holds them is
    /// known here.
    func startAssetCollection() {
        loadCollectedThrough()
        if let saved = try? container.store.read({ try $0.peerHolds() }) {
            state.withLockedValue { state in
                for (peer, zones) in saved {
                    for (zone, vector) in zones { state.collection.peerHolds[peer, default: [:]][zone] = (state.collection.peerHolds[peer]?[zone] ?? VersionVector()).joined(with: vector) }
                }
            }
        }
        let (seconds, attoseconds) = configuration.assetCollectionInterval.components
        let interval = TimeAmount.nanoseconds(max(1_000_000, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        let task = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            self?.runCollectionPass()
        }
        state.withLockedValue { $0.collection.timer = task }
    }

    /// One pass of asset and tombstone collection, on a thread of its own at
    /// the lowest priority, one at a time: on the store threads the sessions
    /// use, a pass under a flood of strangers held their batches up for a second.
    func runCollectionPass() {
        let start = state.withLockedValue { state -> Bool in
            guard !state.collection.running, !state.runtime.stopped else { return false }
            state.collection.running = true
            return true
        }
        guard start else { return }
        let thread = Thread { [weak self] in
            #if os(Linux)
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) // this thread alone: on Linux a priority is per thread
            #endif
            guard let self else { return }
            if !self.isStopped {
                self.collectUnreferencedAssets()
                self.collectTombstones()
            }
            self.state.withLockedValue { $0.collection.running = false }
        }
        thread.start()
    }

    /// One pass of the collection; returns the assets removed.
    @discardableResult
    func collectUnreferencedAssets() -> [AssetReference] {
        let store = container.store
        // Saved at most once a pass, so a restarted node need not meet every device again.
        let unsaved = state.withLockedValue { state -> [String: [ZoneKey: VersionVector]]? in
            guard state.collection.peerHoldsChanged else { return nil }
            state.collection.peerHoldsChanged = false
            return state.collection.peerHolds
        }
        if let unsaved { try? store.write { try $0.savePeerHolds(unsaved) } }
        let own = container.deviceID
        guard let (orphans, devices, exclusions) = try? store.read({ snapshot in
            (try snapshot.orphanedAssets(), try snapshot.devicesHoldingPrivateZones(besides: own), try snapshot.peerExclusions())
        }), !orphans.isEmpty else { return [] }
        let holds = state.withLockedValue { $0.collection.peerHolds }
        var removed: [AssetReference] = []
        for orphan in orphans where orphan.zone.scope == .private {
            guard Container.holding(orphan.zone, devices, exclusions).allSatisfy({ holds[$0]?[orphan.zone]?.dominates(orphan.dropped) == true }) else { continue }
            guard (try? store.write({ try $0.collectOrphanedAsset(orphan.asset.hash) })) == true else { continue }
            for url in [AssetFiles.path(for: orphan.asset, in: store.directory), AssetFiles.outlinePath(for: orphan.asset, in: store.directory),
                        AssetFiles.leavesPath(for: orphan.asset, in: store.directory)] {
                try? FileManager.default.removeItem(at: url)
            }
            logger.info("removed an asset no record references any more", metadata: ["asset": "\(orphan.asset.hexHash.prefix(16))", "bytes": "\(orphan.asset.size)"])
            removed.append(orphan.asset)
        }
        return removed
    }

    /// Waits until the assets this node fetches by itself (small ones, eager
    /// zones', asked-for ones) have come from the peers connected now, or
    /// cannot (no peer sends them), or `timeout` passes: `sync --once` ends
    /// with the small assets of what it synced.
    public func waitForAssetFetches(timeout: Duration) async {
        let deadline = ContinuousClock.now + timeout
        var idleChecks = 0
        while ContinuousClock.now < deadline, idleChecks < 3 {
            idleChecks = assetFetcher.isIdle ? idleChecks + 1 : 0
            try? await Task.sleep(nanoseconds: 60_000_000)
        }
    }

    /// Fetches the content of `assets` (referenced by records here) from
    /// connected peers that hold it, and returns once every one is in the
    /// store (`Container.fileURL(for:)`). `progress` is called with the bytes
    /// held of the bytes wanted as they grow. Fails with networkUnavailable
    /// if they have not all arrived within `timeout`.
    public func fetchAssets(_ assets: [AssetReference], timeout: Duration = .seconds(300),
                            progress: (@Sendable (_ bytesDone: Int64, _ bytesTotal: Int64) -> Void)? = nil) async throws(LatticeError) {
        let store = container.store
        let missing = try LatticeError.wrap {
            try store.write { transaction in
                let now = RecordStore.systemWallClock()
                var missing: [AssetReference] = []
                for asset in Set(assets) where try !transaction.hasAsset(asset.hash) {
                    try transaction.wantAsset(asset, at: now)
                    missing.append(asset)
                }
                return missing
            }
        }
        guard !missing.isEmpty else { return }
        assetFetcher.refreshSoon()
        let total = missing.reduce(Int64(0)) { $0 + $1.size }
        let deadline = ContinuousClock.now + timeout
        while true {
            let (left, done) = try LatticeError.wrap {
                try store.read { snapshot in
                    let left = try missing.filter { try !snapshot.hasAsset($0.hash) }
                    return (left, total - left.reduce(Int64(0)) { $0 + $1.size })
                }
            }
            let fetching = status.assets ?? []
            let partial = left.reduce(Int64(0)) { sum, asset in sum + (fetching.first { $0.hash == asset.hexHash }?.bytesDone ?? 0) }
            progress?(done + partial, total)
            if left.isEmpty { return }
            guard ContinuousClock.now < deadline else {
                let problem = fetching.compactMap(\.problem).first.map { " (\($0))" } ?? ""
                throw LatticeError(.networkUnavailable, "\(left.count) asset(s) did not arrive in \(timeout): no connected peer sent them\(problem)")
            }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
    }
}
