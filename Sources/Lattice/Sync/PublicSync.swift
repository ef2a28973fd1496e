import Foundation
@_spi(Tools) import LatticeCrypto
import NIOConcurrencyHelpers

/// Who may sync the public database with a node besides its account's
/// devices (`lattice serve --public-from`).
public enum PublicSyncPolicy: String, Sendable, CaseIterable, Codable {
    /// Any device of the container, as CloudKit's public database is open to
    /// every user of the app: a public catalogue spreads by itself.
    case anyone
    /// Only the account's devices (and devices trusted by hand).
    case trusted
}

/// The spam limit on what strangers' public batches may bring: a byte
/// budget per host (identities cost nothing to make; addresses do), as a token bucket. A batch past it is not applied; the
/// session ends and the stranger's stream resumes from where it stopped
/// once the budget has come back (honest peers lose nothing, only time).
/// Each record is bounded as everywhere (1 MB of fields).
public struct PublicWriteAllowance: Hashable, Sendable {
    /// Bytes a stranger may bring at once (its first sync of a catalogue).
    public var burstBytes: Int
    /// Bytes per second that come back.
    public var bytesPerSecond: Int

    public init(burstBytes: Int, bytesPerSecond: Int) {
        self.burstBytes = burstBytes
        self.bytesPerSecond = bytesPerSecond
    }

    /// 256 MiB at once, then 1 MiB a second: a stranger's catalogue of some
    /// hundred thousand records arrives whole; a flood is held to about 86 GB a day per device.
    public static let `default` = PublicWriteAllowance(burstBytes: 256 << 20, bytesPerSecond: 1 << 20)
}

/// A stranger spent its public write allowance (`PublicWriteAllowance`).
struct PublicAllowanceSpent: Error, CustomStringConvertible {
    let host: String
    let retryAfter: Double

    var description: String {
        "strangers from \(host) spent their allowance of public writes here; their streams resume in \(Int(retryAfter.rounded(.up))) s"
    }
}

/// The allowances of the strangers seen lately.
final class PublicWriteAllowances: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    /// Hosts tracked at most: past it, the one seen longest ago is forgotten (its bucket full again).
    static let maximumTracked = 1024
    let allowance: PublicWriteAllowance
    private let buckets = NIOLockedValueBox([String: Bucket]())
    private let now: @Sendable () -> Double

    init(allowance: PublicWriteAllowance, now: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.allowance = allowance
        self.now = now
    }

    /// Takes `bytes` from `host`'s budget, or throws when it has not that much left.
    func spend(_ bytes: Int, by host: String) throws {
        let time = now()
        let burst = Double(allowance.burstBytes)
        let rate = Double(max(1, allowance.bytesPerSecond))
        try buckets.withLockedValue { buckets in
            var bucket = buckets[host] ?? Bucket(tokens: burst, updated: time)
            bucket.tokens = min(burst, bucket.tokens + (time - bucket.updated) * rate)
            bucket.updated = time
            guard bucket.tokens >= Double(bytes) else {
                buckets[host] = bucket
                throw PublicAllowanceSpent(host: host, retryAfter: (Double(bytes) - bucket.tokens) / rate)
            }
            bucket.tokens -= Double(bytes)
            buckets[host] = bucket
            if buckets.count > Self.maximumTracked, let oldest = buckets.min(by: { $0.value.updated < $1.value.updated })?.key {
                buckets[oldest] = nil
            }
        }
    }
}
