import LatticeCrypto
import LatticeDiscovery
import LatticeProtocol

/// How a Lattice node shows itself on DNS-SD.
public enum LatticeService {
    public static let type = "_lattice._tcp"

    /// The TXT record: device ID, container, and the protocol versions spoken (`1` or `1-2`).
    static func txt(deviceID: String, container: String, versions: ClosedRange<UInt8>) -> [String: String] {
        ["id": deviceID, "container": container, "pv": versions.count == 1 ? "\(versions.lowerBound)" : "\(versions.lowerBound)-\(versions.upperBound)"]
    }

    /// Parses `pv`; nil when absent or malformed.
    static func versions(_ text: String?) -> ClosedRange<UInt8>? {
        guard let text else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let low = UInt8(parts[0]), let high = UInt8(parts.last!), low <= high else { return nil }
        return low...high
    }
}

/// A device found by discovery: every instance of it, on every interface, as one.
public struct DiscoveredDevice: Sendable, Hashable {
    public var deviceID: String
    public var container: String
    /// Nil when its TXT record carries no readable version.
    public var versions: ClosedRange<UInt8>?
    public var services: [DiscoveredService]

    /// Addresses to dial, IPv4 first, each once (one host can be seen on several interfaces).
    public var addresses: [PeerAddress] {
        var seen = Set<PeerAddress>()
        var result: [PeerAddress] = []
        for service in services {
            for host in service.addresses {
                let address = PeerAddress(host: host, port: service.port)
                if seen.insert(address).inserted { result.append(address) }
            }
        }
        return result.sorted { ($0.host.contains(":") ? 1 : 0) < ($1.host.contains(":") ? 1 : 0) }
    }

    /// The instances that advertise `container` and a version among `spoken`. Anyone can
    /// advertise any device ID: an instance claiming another container or version must
    /// not decide for the real one (the handshake proves who answers).
    func compatibleServices(container ours: String, versions spoken: ClosedRange<UInt8>) -> [DiscoveredService] {
        services.filter { service in
            service.txt["container"] == ours && LatticeService.versions(service.txt["pv"]).map { $0.overlaps(spoken) } == true
        }
    }

    /// Where to dial it: the addresses of its compatible instances only.
    func dialAddresses(container ours: String, versions spoken: ClosedRange<UInt8>) -> [PeerAddress] {
        DiscoveredDevice(deviceID: deviceID, container: container, versions: versions, services: compatibleServices(container: ours, versions: spoken)).addresses
    }

    /// Why this node will not sync with it, as a user should read it; nil when it may.
    func problem(container ours: String, versions spoken: ClosedRange<UInt8>, trusted: Bool) -> String? {
        if compatibleServices(container: ours, versions: spoken).isEmpty {
            guard services.contains(where: { $0.txt["container"] == ours }) else {
                return "another container (\(container)): only devices of \(ours) sync with this one (if it should, run both with the same --container)"
            }
            let theirs = services.first { $0.txt["container"] == ours }.flatMap { LatticeService.versions($0.txt["pv"]) }
            return "protocol version mismatch: it speaks \(theirs.map(Self.describe) ?? "an unknown version"), this node \(Self.describe(spoken)); update the older one"
        }
        if !trusted { return "not trusted here (trust it with `lattice trust \(deviceID)`)" }
        return nil
    }

    static func describe(_ versions: ClosedRange<UInt8>) -> String {
        versions.count == 1 ? "version \(versions.lowerBound)" : "versions \(versions.lowerBound)-\(versions.upperBound)"
    }
}

/// The Lattice services discovery has found, grouped by the device they advertise.
/// Pure: fed discovery events, it answers which devices are present and how to reach them.
struct DiscoveredPeers {
    private struct Key: Hashable {
        var name: String
        var interfaceIndex: UInt32
    }

    private var services: [Key: DiscoveredService] = [:]
    let ownDeviceID: String

    init(ownDeviceID: String) {
        self.ownDeviceID = ownDeviceID
    }

    /// Applies an event; returns the IDs of other devices whose entry changed.
    mutating func apply(_ event: DiscoveryEvent) -> Set<String> {
        var changed = changes(event)
        changed.remove(ownDeviceID)
        return changed
    }

    private mutating func changes(_ event: DiscoveryEvent) -> Set<String> {
        switch event {
        case .found(let service):
            let key = Key(name: service.name, interfaceIndex: service.interfaceIndex)
            let before = services[key].flatMap { Self.deviceID(of: $0) }
            services[key] = Self.deviceID(of: service) == nil ? nil : service
            return Set([before, Self.deviceID(of: service)].compactMap { $0 })
        case .lost(let name, let interfaceIndex):
            return Set([services.removeValue(forKey: Key(name: name, interfaceIndex: interfaceIndex)).flatMap { Self.deviceID(of: $0) }].compactMap { $0 })
        case .unavailable:
            let ids = Set(services.values.compactMap { Self.deviceID(of: $0) })
            services.removeAll()
            return ids
        case .registered, .available:
            return []
        }
    }

    /// Every device present but this one, by device ID.
    var devices: [DiscoveredDevice] {
        var byID: [String: DiscoveredDevice] = [:]
        for service in services.values.sorted(by: { ($0.name, $0.interfaceIndex) < ($1.name, $1.interfaceIndex) }) {
            guard let id = Self.deviceID(of: service), id != ownDeviceID else { continue }
            if byID[id] == nil {
                byID[id] = DiscoveredDevice(deviceID: id, container: service.txt["container"] ?? "", versions: LatticeService.versions(service.txt["pv"]), services: [])
            }
            byID[id]!.services.append(service)
        }
        return byID.values.sorted { $0.deviceID < $1.deviceID }
    }

    func device(_ id: String) -> DiscoveredDevice? { devices.first { $0.deviceID == id } }

    /// The device ID a service advertises, if it is a well-formed one.
    private static func deviceID(of service: DiscoveredService) -> String? {
        service.txt["id"].flatMap(DeviceID.init)?.description
    }
}
