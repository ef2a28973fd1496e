@_spi(Tools) import LatticeCrypto
import LatticeDiscovery
@_spi(Tools) import LatticeProtocol

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

/// Why a node does not sync with a device discovery shows it.
public struct DiscoveryProblem: Sendable, Hashable, CustomStringConvertible {
    public enum Cause: String, Codable, Sendable {
        case anotherContainer, versionMismatch, notTrustedHere
    }

    public var cause: Cause
    /// As a user should read it, with what to do.
    public var description: String
}

/// A device found by discovery: every instance of it, on every interface, as one.
struct DiscoveredDevice: Sendable, Hashable {
    var deviceID: String
    var services: [DiscoveredService]

    /// The container it advertises (the first instance's, when instances disagree).
    var container: String { services.first?.txt["container"] ?? "" }

    /// Addresses to dial, IPv4 first, each once (one host can be seen on several interfaces).
    var addresses: [PeerAddress] { Self.addresses(of: services) }

    static func addresses(of services: [DiscoveredService]) -> [PeerAddress] {
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

    static func describe(_ versions: ClosedRange<UInt8>) -> String {
        versions.count == 1 ? "version \(versions.lowerBound)" : "versions \(versions.lowerBound)-\(versions.upperBound)"
    }
}

/// The Lattice services discovery has found, grouped by the device they advertise,
/// judged against this node's container and protocol versions. Pure: fed discovery
/// events, it answers which devices are present, which to sync with, and where.
struct DiscoveredPeers {
    private struct Key: Hashable {
        var name: String
        var interfaceIndex: UInt32
    }

    /// Each instance with the device ID it advertises (never this node's own).
    private var services: [Key: (deviceID: String, service: DiscoveredService)] = [:]
    private var keysOfDevice: [String: Set<Key>] = [:]
    let ownDeviceID: String
    let container: String
    let versions: ClosedRange<UInt8>

    init(ownDeviceID: String, container: String, versions: ClosedRange<UInt8>) {
        self.ownDeviceID = ownDeviceID
        self.container = container
        self.versions = versions
    }

    /// Applies an event; returns the IDs of other devices whose entry changed.
    mutating func apply(_ event: DiscoveryEvent) -> Set<String> {
        switch event {
        case .found(let service):
            let key = Key(name: service.name, interfaceIndex: service.interfaceIndex)
            let before = remove(key)
            guard let id = service.txt["id"].flatMap(DeviceID.init)?.description, id != ownDeviceID else { return Set([before].compactMap { $0 }) }
            services[key] = (id, service)
            keysOfDevice[id, default: []].insert(key)
            return Set([before, id].compactMap { $0 })
        case .lost(let name, let interfaceIndex):
            return Set([remove(Key(name: name, interfaceIndex: interfaceIndex))].compactMap { $0 })
        case .unavailable:
            defer {
                services.removeAll()
                keysOfDevice.removeAll()
            }
            return Set(keysOfDevice.keys)
        case .registered, .available:
            return []
        }
    }

    /// Forgets an instance; returns the device it advertised.
    private mutating func remove(_ key: Key) -> String? {
        guard let (id, _) = services.removeValue(forKey: key) else { return nil }
        keysOfDevice[id]?.remove(key)
        if keysOfDevice[id]?.isEmpty == true { keysOfDevice[id] = nil }
        return id
    }

    /// Every device present but this one, by device ID.
    var devices: [DiscoveredDevice] { keysOfDevice.keys.sorted().compactMap(device) }

    func device(_ id: String) -> DiscoveredDevice? {
        guard let keys = keysOfDevice[id] else { return nil }
        let instances = keys.sorted { ($0.name, $0.interfaceIndex) < ($1.name, $1.interfaceIndex) }.compactMap { services[$0]?.service }
        return DiscoveredDevice(deviceID: id, services: instances)
    }

    /// The instances that advertise this container and a common version. Anyone can
    /// advertise any device ID: an instance claiming another container or version must
    /// not decide for the real one (the handshake proves who answers).
    private func compatible(_ device: DiscoveredDevice) -> [DiscoveredService] {
        device.services.filter { service in
            service.txt["container"] == container && LatticeService.versions(service.txt["pv"]).map { $0.overlaps(versions) } == true
        }
    }

    /// Why this node will not sync with `device`; nil when it may.
    func problem(_ device: DiscoveredDevice, trusted: Bool) -> DiscoveryProblem? {
        if compatible(device).isEmpty {
            guard let ofOurs = device.services.first(where: { $0.txt["container"] == container }) else {
                return DiscoveryProblem(cause: .anotherContainer, description: "another container (\(device.container)): only devices of \(container) sync with this one (if it should, run both with the same --container)")
            }
            let theirs = LatticeService.versions(ofOurs.txt["pv"]).map(DiscoveredDevice.describe) ?? "an unknown version"
            return DiscoveryProblem(cause: .versionMismatch, description: "protocol version mismatch: it speaks \(theirs), this node \(DiscoveredDevice.describe(versions)); update the older one")
        }
        if !trusted { return DiscoveryProblem(cause: .notTrustedHere, description: "not trusted here (add it to the account with `lattice pair`)") }
        return nil
    }

    /// Where to dial `id`: the addresses of its compatible instances, while it is present
    /// and this node should sync with it; nil otherwise.
    func dialAddresses(_ id: String, trusted: Bool) -> [PeerAddress]? {
        guard let device = device(id), problem(device, trusted: trusted) == nil else { return nil }
        return DiscoveredDevice.addresses(of: compatible(device))
    }
}
