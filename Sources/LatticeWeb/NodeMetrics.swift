import CoreMetrics
import Foundation
import Lattice
import NIOConcurrencyHelpers
import Prometheus

/// The node's metrics, through swift-metrics into a Prometheus registry of
/// this node's own (two nodes in one process keep theirs apart). They come
/// from the node's events, from the store's commits as they happen, and
/// from the node's status and the store's files when scraped (`/metrics`).
final class NodeMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let container: Container
    /// Records written before this are not counted as propagation (an initial sync brings old ones).
    private let started = Date()
    private let lastSequence = NIOLockedValueBox<UInt64?>(nil)
    /// The account's devices, read again at most every 10 s: the peers that get a label of their own.
    private let accountDevices = NIOLockedValueBox<(read: Date, devices: Set<String>)?>(nil)

    init(container: Container) {
        self.container = container
        var factory = PrometheusMetricsFactory(registry: registry)
        // From a LAN's milliseconds to a device that comes back after a while.
        factory.durationHistogramBuckets["lattice_propagation_seconds"] = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300),
        ]
        factory.durationHistogramBuckets["lattice_http_request_duration_seconds"] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(1000),
        ]
        self.factory = factory
        // Present from the first scrape, before anything happened.
        for name in ["lattice_commits_total", "lattice_connections_total"] { counter(name).increment(by: 0) }
    }

    private func counter(_ name: String, _ labels: [(String, String)] = []) -> CoreMetrics.Counter {
        CoreMetrics.Counter(label: name, dimensions: labels, factory: factory)
    }

    private func gauge(_ name: String, _ labels: [(String, String)] = []) -> CoreMetrics.Gauge {
        CoreMetrics.Gauge(label: name, dimensions: labels, factory: factory)
    }

    private func timer(_ name: String, _ labels: [(String, String)] = []) -> CoreMetrics.Timer {
        CoreMetrics.Timer(label: name, dimensions: labels, factory: factory)
    }

    /// Counts what an event of the node says.
    func observe(_ event: SyncNode.Event) {
        switch event {
        case .connected:
            counter("lattice_connections_total").increment()
        case .disconnected(_, _, let reason):
            counter("lattice_disconnections_total", [("cause", reason?.cause.rawValue ?? "other")]).increment()
        case .refused:
            counter("lattice_refusals_total", [("reason", "untrusted_device")]).increment()
        case .writesRefused(_, _, let records, _):
            counter("lattice_refusals_total", [("reason", "write_without_right")]).increment()
            counter("lattice_refused_records_total").increment(by: Int64(records))
        case .deferred(_, _, let records):
            counter("lattice_deferred_records_total").increment(by: Int64(records))
        case .syncStarted(let peer, let zone, let direction, let records, let bytes):
            let labels = [("peer", peerLabel(peer)), ("direction", direction.rawValue), ("database", zone.scope.description)]
            counter("lattice_sync_batches_total", labels).increment()
            counter("lattice_sync_records_total", labels).increment(by: Int64(records))
            counter("lattice_sync_bytes_total", labels).increment(by: Int64(bytes))
        case .discovered:
            counter("lattice_discovery_events_total", [("event", "discovered")]).increment()
        case .vanished:
            counter("lattice_discovery_events_total", [("event", "vanished")]).increment()
        case .discoveryUnavailable:
            counter("lattice_discovery_events_total", [("event", "unavailable")]).increment()
        case .discoveryAvailable:
            counter("lattice_discovery_events_total", [("event", "available")]).increment()
        case .unreachable:
            counter("lattice_dial_failures_total").increment()
        case .assetFetched(_, let fetched, let resumed):
            counter("lattice_asset_bytes_total", [("source", "network")]).increment(by: fetched)
            counter("lattice_asset_bytes_total", [("source", "resumed")]).increment(by: resumed)
            counter("lattice_assets_fetched_total").increment()
        case .assetRejected:
            counter("lattice_asset_rejections_total").increment()
        case .listening, .syncFinished, .progress, .caughtUp, .publicOnly, .assetProgress:
            break
        }
    }

    /// A peer's label: its device ID for a device of the account, `other` for
    /// anyone else. Strangers of the public database make identities at will,
    /// and each would be a series for ever; the account's devices are few.
    private func peerLabel(_ peer: String) -> String {
        let cached = accountDevices.withLockedValue { $0 }
        let devices: Set<String>
        if let cached, Date().timeIntervalSince(cached.read) < 10 {
            devices = cached.devices
        } else {
            devices = Set(((try? container.account())?.devices ?? []).map(\.deviceID))
            accountDevices.withLockedValue { $0 = (Date(), devices) }
        }
        return devices.contains(peer) ? peer : "other"
    }

    /// Counts commits since the last call, and the records from other
    /// devices they brought: merged, in conflict, and how long after their
    /// writer saved them (the writer's clock against this one's).
    func observeCommits(merged: [(record: Record, database: Database)]) {
        if let sequence = try? container.commitSequence() {
            let previous = lastSequence.withLockedValue { value in defer { value = sequence }; return value }
            if let previous, sequence > previous { counter("lattice_commits_total").increment(by: Int64(sequence - previous)) }
        }
        let now = Date().timeIntervalSince1970 * 1000
        let startedAt = started.timeIntervalSince1970 * 1000
        for (record, database) in merged {
            counter("lattice_records_merged_total", [("database", database.databaseScope.description)]).increment()
            guard let written = record.modificationDate, Double(written) >= startedAt else { continue }
            timer("lattice_propagation_seconds").recordNanoseconds(Int64(max(0, now - Double(written)) * 1_000_000))
            if let conflicts = try? database.conflicts(for: record.recordID), !conflicts.isEmpty {
                counter("lattice_conflicts_total").increment()
            }
        }
    }

    /// Counts a request answered.
    func observeRequest(operation: String, status: Int, duration: Duration) {
        counter("lattice_http_requests_total", [("operation", operation), ("code", String(status))]).increment()
        timer("lattice_http_request_duration_seconds", [("operation", operation)]).recordNanoseconds(duration.nanoseconds)
    }

    /// The text `/metrics` serves: the gauges read now, then everything.
    func exposition(openEventStreams: Int = 0) -> String {
        let directory = container.directory
        let bytes = Self.storeBytes(of: directory)
        gauge("lattice_store_bytes", [("part", "database")]).record(bytes.database)
        gauge("lattice_store_bytes", [("part", "assets")]).record(bytes.assets)
        gauge("lattice_event_streams").record(openEventStreams)
        if let status = NodeStatus.read(store: directory) {
            gauge("lattice_peers", [("state", "connected")]).record(status.peers.filter(\.connected).count)
            gauge("lattice_peers", [("state", "known")]).record(status.peers.count)
            // Summed over peers, for the same reason as the counters: per-peer detail is in `lattice status` and the console.
            let verified = status.peers.flatMap { $0.verified ?? [] }
            gauge("lattice_zones_verified").record(verified.filter { $0.inSyncAt != nil && $0.differences == 0 }.count)
            gauge("lattice_zone_differences").record(verified.reduce(0) { $0 + $1.differences })
            gauge("lattice_records_behind").record(status.peers.reduce(0) { $0 + $1.recordsBehind })
            for (reason, count) in status.strangers?.totals ?? [:] { gauge("lattice_strangers_turned_away", [("reason", reason)]).record(count) }
        }
        return registry.emitToString()
    }

    /// The store's database files (with its write-ahead log) and its asset files, in bytes.
    static func storeBytes(of directory: URL) -> (database: Int64, assets: Int64, total: Int64) {
        var database: Int64 = 0
        for suffix in ["", "-wal", "-shm"] {
            let path = directory.appendingPathComponent("lattice.sqlite" + suffix).path
            database += ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.int64Value ?? 0
        }
        var assets: Int64 = 0
        if let files = FileManager.default.enumerator(at: directory.appendingPathComponent("assets"), includingPropertiesForKeys: [.fileSizeKey]) {
            for case let file as URL in files { assets += Int64((try? file.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
        }
        return (database, assets, database + assets)
    }
}

extension Duration {
    var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}
