import Foundation
@_spi(Tools) import LatticeCore

/// Where a model container keeps its store and how it syncs, as SwiftData's
/// `ModelConfiguration(cloudKitDatabase:)`.
public struct ModelConfiguration: Sendable {
    /// The container identifier (`iCloud.com.example.movies`): one store per identifier per device.
    public var containerIdentifier: String
    /// The store's directory; nil: the default for the identifier (`Container.defaultDirectory(for:)`).
    public var directory: URL?
    /// A throwaway store in a new temporary directory, removed when the container closes (for tests and previews).
    public var isStoredInMemoryOnly: Bool
    /// The zone of the private database the objects live in.
    public var zoneName: String
    public var sync: SyncPolicy
    /// The zones of the private database this device replicates (selective
    /// sync), its own `zoneName` always among them; nil, the default: every
    /// zone. Another app's zones on the same container are then neither
    /// stored nor sent here. Record types are chosen through their zone: a
    /// container keeps its model types in its zone.
    public var replicatedZones: Set<String>?

    public init(_ containerIdentifier: String, directory: URL? = nil, isStoredInMemoryOnly: Bool = false,
                zoneName: String = ZoneID.defaultZoneName, sync: SyncPolicy = .automatic) {
        self.containerIdentifier = containerIdentifier
        self.directory = directory
        self.isStoredInMemoryOnly = isStoredInMemoryOnly
        self.zoneName = zoneName
        self.sync = sync
    }

    /// A throwaway store that does not sync, as `ModelConfiguration(isStoredInMemoryOnly: true)`.
    public init(isStoredInMemoryOnly: Bool) {
        self.init("lattice.models.memory", isStoredInMemoryOnly: isStoredInMemoryOnly, sync: isStoredInMemoryOnly ? .none : .automatic)
    }
}

/// How a model container's sync node finds peers. Only trusted devices sync:
/// devices of one account (`lattice pair`) or trusted by hand (`lattice trust`).
public struct SyncPolicy: Sendable, Hashable {
    /// Find peers by mDNS on the LAN and advertise this device.
    public var discovers: Bool
    /// Peers to dial, as `lattice serve --peer`.
    public var peers: [PeerAddress]
    /// The port to listen on; 0: any free port (advertised by mDNS); nil: do not listen.
    public var port: Int?

    public init(discovers: Bool, peers: [PeerAddress] = [], port: Int? = 0) {
        self.discovers = discovers
        self.peers = peers
        self.port = port
    }

    /// LAN discovery, listening on a free port.
    public static let automatic = SyncPolicy(discovers: true)
    /// No sync node: the store stays on this device.
    public static let none = SyncPolicy(discovers: false, port: nil)

    /// Static peers, without mDNS.
    public static func peers(_ peers: [PeerAddress], port: Int? = 0) -> SyncPolicy {
        SyncPolicy(discovers: false, peers: peers, port: port)
    }

    var isEnabled: Bool { discovers || !peers.isEmpty || port != nil }
}
