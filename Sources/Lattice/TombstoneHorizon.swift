import Foundation
import LatticeStore

/// How long a device of the account may go unseen before it stops holding
/// tombstones back (DESIGN §4): kept in the store, so `lattice status` and
/// every node on it agree. 30 days unless set.
public enum TombstoneHorizon {
    public static let settingKey = "tombstoneHorizon"
    public static let defaultSeconds: Double = 30 * 86_400

    /// The store's horizon, in seconds.
    static func seconds(in snapshot: StoreSnapshot) throws -> Double {
        try snapshot.setting(settingKey).flatMap(Double.init) ?? defaultSeconds
    }

    /// Reads a duration as people write it: `30d`, `12h`, `15m`, `90s` (seconds without a unit).
    public static func parse(_ text: String) -> Double? {
        let units: [Character: Double] = ["d": 86_400, "h": 3_600, "m": 60, "s": 1]
        var number = Substring(text.trimmingCharacters(in: .whitespaces))
        var unit: Double = 1
        if let last = number.last, let scale = units[last] {
            unit = scale
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value > 0 else { return nil }
        return value * unit
    }

    /// The devices among `devices` away longer than `horizon` seconds at
    /// `now` (milliseconds since 1970): last seen before then, and not
    /// connected now. A device never seen holds tombstones back (nothing
    /// says when it could have been).
    static func away(_ devices: Set<String>, peers: [PeerRow], connected: Set<String>, horizon: Double, now: UInt64) -> Set<String> {
        let limit = UInt64(max(0, horizon * 1000))
        let seen = Dictionary(peers.map { ($0.deviceID, $0.lastSeen) }, uniquingKeysWith: { first, _ in first })
        return devices.filter { device in
            guard !connected.contains(device), let last = seen[device] ?? nil else { return false }
            return now > last && now - last > limit
        }
    }
}
