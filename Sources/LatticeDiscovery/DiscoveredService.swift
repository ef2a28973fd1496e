/// A service instance found on one interface, resolved to a port, a TXT record and addresses.
package struct DiscoveredService: Sendable, Hashable {
    /// The instance name, as advertised (renamed "name #2" on a clash).
    package var name: String
    package var interfaceIndex: UInt32
    /// The host name it resolved to (`host.local.`).
    package var host: String
    package var port: Int
    package var txt: [String: String]
    /// IPv4 addresses, then IPv6 ones; link-local IPv6 ones carry `%interface`.
    package var addresses: [String]

    package init(name: String, interfaceIndex: UInt32, host: String, port: Int, txt: [String: String], addresses: [String]) {
        self.name = name
        self.interfaceIndex = interfaceIndex
        self.host = host
        self.port = port
        self.txt = txt
        self.addresses = addresses
    }
}

/// What discovery reports, on its own queue, in order.
package enum DiscoveryEvent: Sendable, Hashable {
    /// The advertisement is up, under this name.
    case registered(name: String)
    /// A service resolved, or changed (port, TXT record, addresses).
    case found(DiscoveredService)
    /// A service that was found is gone from that interface.
    case lost(name: String, interfaceIndex: UInt32)
    /// Discovery stopped working (no daemon, the daemon died, …); it retries by itself.
    case unavailable(DiscoveryError)
    /// The daemon answers again after `unavailable`.
    case available
}

/// Browse, resolve and address answers gathered per instance and interface,
/// turned into `found`/`lost` events once an instance is complete. Pure, so
/// the order in which the daemon answers can be tested without one.
struct ServiceTable {
    struct Key: Hashable {
        var name: String
        var interfaceIndex: UInt32
    }

    private struct Entry {
        /// Browse "add"s not yet matched by a "remove": with IPv4 and IPv6 on, the
        /// daemon reports an instance once per protocol on the same interface.
        var adds = 1
        var host: String?
        var port: Int?
        var txt: [String: String] = [:]
        var addresses: [String] = []
        var announced: DiscoveredService?
    }

    private var entries: [Key: Entry] = [:]

    func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// Whether the instance was reported `found` (resolved, with an address).
    func isAnnounced(_ key: Key) -> Bool { entries[key]?.announced != nil }

    /// A browse "add": true when the instance is new (so resolve it).
    mutating func browsed(_ key: Key) -> Bool {
        guard entries[key] == nil else {
            entries[key]!.adds += 1
            return false
        }
        entries[key] = Entry()
        return true
    }

    mutating func resolved(_ key: Key, host: String, port: Int, txt: [String: String]) -> DiscoveryEvent? {
        guard entries[key] != nil else { return nil }
        entries[key]!.host = host
        entries[key]!.port = port
        entries[key]!.txt = txt
        return announce(key)
    }

    mutating func address(_ key: Key, _ address: String, added: Bool) -> DiscoveryEvent? {
        guard var entry = entries[key] else { return nil }
        entry.addresses.removeAll { $0 == address }
        if added { entry.addresses.append(address) }
        // IPv4 first: a link-local IPv6 address needs its interface and is tried last.
        entry.addresses.sort { ($0.contains(":") ? 1 : 0, $0) < ($1.contains(":") ? 1 : 0, $1) }
        entries[key] = entry
        return announce(key)
    }

    /// A browse "remove": the instance is gone once every "add" is matched.
    /// True in `gone` when it is (so stop resolving it).
    mutating func removed(_ key: Key) -> (gone: Bool, event: DiscoveryEvent?) {
        guard var entry = entries[key] else { return (false, nil) }
        entry.adds -= 1
        guard entry.adds <= 0 else {
            entries[key] = entry
            return (false, nil)
        }
        entries[key] = nil
        guard entry.announced != nil else { return (true, nil) }
        return (true, .lost(name: key.name, interfaceIndex: key.interfaceIndex))
    }

    /// The daemon went away: everything it told is void.
    mutating func removeAll() -> [DiscoveryEvent] {
        let lost = entries.filter { $0.value.announced != nil }.keys.sorted { ($0.name, $0.interfaceIndex) < ($1.name, $1.interfaceIndex) }
        entries.removeAll()
        return lost.map { .lost(name: $0.name, interfaceIndex: $0.interfaceIndex) }
    }

    private mutating func announce(_ key: Key) -> DiscoveryEvent? {
        let entry = entries[key]!
        guard let host = entry.host, let port = entry.port else { return nil }
        guard !entry.addresses.isEmpty else {
            guard entry.announced != nil else { return nil }
            entries[key]!.announced = nil
            return .lost(name: key.name, interfaceIndex: key.interfaceIndex)
        }
        let service = DiscoveredService(name: key.name, interfaceIndex: key.interfaceIndex, host: host, port: port, txt: entry.txt, addresses: entry.addresses)
        guard service != entry.announced else { return nil }
        entries[key]!.announced = service
        return .found(service)
    }
}
