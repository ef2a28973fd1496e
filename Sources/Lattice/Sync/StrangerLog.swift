import Foundation

/// Connections this node turned away, in bounded form however many come:
/// counts per source address and reason, and the last few device IDs that
/// proved an identity without being trusted (so a person can trust one).
/// Kept in memory and published in `node-status.json`; the store hears of the
/// recent IDs at most once a minute, never per attempt.
public struct StrangerLog: Codable, Sendable, Hashable {
    public enum Reason: String, Codable, Sendable, Hashable, CaseIterable {
        /// A device proved its identity but is not trusted here.
        case untrusted
        /// Too many connections from its address, or in total.
        case tooManyConnections
        /// Its address brought more untrusted or failed connections than it
        /// may (an allowance that comes back with time): refused at connect.
        case tooManyStrangers
        /// The handshake failed or did not finish in time.
        case handshakeFailed
        /// Not turned away: a device of another account, let sync the public database only.
        case publicOnly
    }

    public struct Source: Codable, Sendable, Hashable {
        /// An IP address (no port).
        public var address: String
        public var reason: Reason
        public var count: Int
        /// Milliseconds since 1970.
        public var last: UInt64
    }

    public struct Device: Codable, Sendable, Hashable {
        public var deviceID: String
        public var address: String
        public var count: Int
        /// Milliseconds since 1970.
        public var last: UInt64
        /// It was last let sync the public database (not refused).
        public var publicOnly: Bool?
    }

    /// Sources and devices kept; the least recent go first.
    public static let maximumSources = 32
    public static let maximumDevices = 10

    /// Every refusal since the node started, per reason (its raw value).
    public var totals: [String: Int] = [:]
    /// The most recent sources, newest first.
    public var sources: [Source] = []
    /// The most recent untrusted devices, newest first.
    public var devices: [Device] = []

    public init() {}

    public var total: Int { totals.values.reduce(0, +) }

    mutating func note(_ reason: Reason, address: String, deviceID: String? = nil, at now: UInt64) {
        totals[reason.rawValue, default: 0] += 1
        var source = Source(address: address, reason: reason, count: 0, last: now)
        if let index = sources.firstIndex(where: { $0.address == address && $0.reason == reason }) { source = sources.remove(at: index) }
        source.count += 1
        source.last = now
        sources.insert(source, at: 0)
        if sources.count > Self.maximumSources { sources.removeLast() }
        guard let deviceID else { return }
        var device = Device(deviceID: deviceID, address: address, count: 0, last: now)
        if let index = devices.firstIndex(where: { $0.deviceID == deviceID }) { device = devices.remove(at: index) }
        device.count += 1
        device.last = now
        device.publicOnly = reason == .publicOnly ? true : nil
        device.address = address
        devices.insert(device, at: 0)
        if devices.count > Self.maximumDevices { devices.removeLast() }
    }
}
