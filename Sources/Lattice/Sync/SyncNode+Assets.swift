import Foundation
import LatticeCore
import LatticeStore

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
        case .status(let transfers):
            state.withLockedValue { $0.status.assets = transfers.isEmpty ? nil : transfers }
            publishStatus()
        }
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
