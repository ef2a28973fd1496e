import Foundation
import LatticeStore

/// How much asset content a node fetches by itself for records written
/// outside this account: per source (each other account, or each writer
/// whose account is unknown) and in all. Shared zones bring other accounts'
/// assets eagerly (up to 256 KiB each, or all in an eager zone), so without
/// a bound one participant could fill every member's disk. Content someone
/// asks for (`lattice asset fetch`) comes whatever the quota. Kept in the
/// store, so `lattice status`, `lattice doctor` and every node on it agree.
public struct AssetQuota: Sendable, Hashable {
    /// Bytes held for one source.
    public var perSource: Int64
    /// Bytes held for every source outside the account together.
    public var total: Int64

    public static let settingKey = "assets.outsideQuota"
    public static let `default` = AssetQuota(perSource: 1 << 30, total: 4 << 30)

    public init(perSource: Int64, total: Int64) {
        self.perSource = perSource
        self.total = total
    }

    static func read(in snapshot: StoreSnapshot) -> AssetQuota {
        guard let text = try? snapshot.setting(settingKey) else { return .default }
        let parts = text.split(separator: " ").compactMap { Int64($0) }
        guard parts.count == 2, parts.allSatisfy({ $0 >= 0 }) else { return .default }
        return AssetQuota(perSource: parts[0], total: parts[1])
    }

    var settingValue: String { "\(perSource) \(total)" }

    /// Reads a size as people write it: `512M`, `2G`, `64K`, `1.5GiB`, or bytes.
    public static func parseSize(_ text: String) -> Int64? {
        var number = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where number.hasSuffix(suffix) && number.count > suffix.count {
            number.removeLast(suffix.count)
            break
        }
        let units: [Character: Double] = ["K": 0x1p10, "M": 0x1p20, "G": 0x1p30, "T": 0x1p40]
        var unit: Double = 1
        if let last = number.last, let scale = units[last] {
            unit = scale
            number.removeLast()
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * unit < Double(Int64.max) else { return nil }
        return Int64(value * unit)
    }

    /// A size for people: `1.5 GiB`, `300 MiB`, `12 KiB`, `80 bytes`.
    public static func describe(_ bytes: Int64) -> String {
        let units: [(String, Double)] = [("TiB", 0x1p40), ("GiB", 0x1p30), ("MiB", 0x1p20), ("KiB", 0x1p10)]
        for (name, scale) in units where Double(bytes) >= scale {
            let value = Double(bytes) / scale
            return value >= 100 || value == value.rounded() ? "\(Int(value.rounded())) \(name)" : String(format: "%.1f %@", value, name)
        }
        return "\(bytes) bytes"
    }
}

/// Decides, asset by asset, what fits the quota: the content held for each
/// source and in all, plus what was admitted so far.
struct AssetQuotaAdmission {
    let quota: AssetQuota
    private var bySource: [AssetSource: Int64]
    private var outside: Int64
    /// What did not fit, per source.
    private(set) var refused: [AssetSource: (assets: Int, bytes: Int64)] = [:]

    init(quota: AssetQuota, usage: AssetUsageReport) {
        self.quota = quota
        bySource = Dictionary(uniqueKeysWithValues: usage.sources.map { ($0.source, $0.heldBytes) })
        outside = usage.outsideHeldBytes
    }

    /// Whether content of `size` bytes that `sources` reference may be
    /// fetched; if so it counts from now on. This account's references
    /// are never bounded.
    mutating func admit(_ size: Int64, from sources: Set<AssetSource>) -> Bool {
        let others = sources.filter(\.isOutsideAccount)
        guard others.count == sources.count, !others.isEmpty else { return true }
        let fits = outside + size <= quota.total && others.allSatisfy { bySource[$0, default: 0] + size <= quota.perSource }
        guard fits else {
            for source in others {
                let previous = refused[source] ?? (0, 0)
                refused[source] = (previous.assets + 1, previous.bytes + size)
            }
            return false
        }
        outside += size
        for source in others { bySource[source, default: 0] += size }
        return true
    }
}
