@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore
import NIOConcurrencyHelpers

/// The devices this store trusts, held in memory so a connection's trust is
/// known at once on the network's thread, with no store access: a stranger
/// is refused before it costs anything. Reloaded on every wake-up of the
/// store (trust changes wake running nodes) and by the node's fallback poll.
final class TrustedDevices: Sendable {
    private let store: RecordStore
    private let devices: NIOLockedValueBox<Set<DeviceID>>
    private let encodedRoster = NIOLockedValueBox<[UInt8]>([])
    /// One reload at a time, so an older read never replaces a newer one.
    private let reloading = NIOLock()
    /// The trusted IDs as the store spells them at the last reload: parsing them
    /// (base32 with check characters) on every commit cost more than the read.
    private let trustedSpellings = NIOLockedValueBox<Set<String>>([])

    init(store: RecordStore) {
        self.store = store
        devices = NIOLockedValueBox([])
    }

    func contains(_ device: DeviceID) -> Bool {
        device != store.identity.deviceID && devices.withLockedValue { $0.contains(device) }
    }

    /// The account's roster as last read, encoded (`AccountRoster.encoded`), for the sessions to tell.
    var roster: [UInt8] { encodedRoster.withLockedValue { $0 } }

    /// The set now, as the device IDs' printed form.
    var all: Set<String> { Set(devices.withLockedValue { $0 }.map(\.description)) }

    /// The shared zones this store holds or accepted, with their shares (nil until one arrives).
    private let shares = NIOLockedValueBox<[ZoneID: Share?]>([:])
    /// This device's membership of its account, encoded, for hellos.
    private let ownMembership = NIOLockedValueBox<[UInt8]>([])
    /// Other accounts' devices' accounts, as their hellos proved them (bounded).
    private let peerAccounts = NIOLockedValueBox<[DeviceID: Set<String>]>([:])
    static let maximumPeerAccounts = 4096
    /// Shared zones one device's offers are remembered for.
    static let maximumOffersPerPeer = 64

    var membership: [UInt8] { ownMembership.withLockedValue { $0 } }

    /// The shared zones `peer` may sync here: those whose share admits one
    /// of its accounts (owner or participant), and accepted ones not held yet
    /// from their owner's devices.
    func sharedZones(for peer: DeviceID) -> Set<ZoneID> {
        sharedZones(for: peer, in: shares.withLockedValue { $0 })
    }

    /// The shared zones `peer` may sync by `shares` (as a snapshot has them),
    /// its accounts (`also` those the store knows) and its offers.
    func sharedZones(for peer: DeviceID, in shares: [ZoneID: Share?], also: Set<String> = []) -> Set<ZoneID> {
        var zones = Self.sharedZones(in: shares, for: accounts(of: peer).union(also))
        // An accepted zone not held yet comes from whoever offers it (its share and writes are checked on arrival).
        for zone in offers.withLockedValue({ $0[peer] }) ?? [] where shares[zone] == .some(nil) { zones.insert(zone) }
        return zones
    }

    /// Shared zones each device offered this one in its session (bounded).
    private let offers = NIOLockedValueBox<[DeviceID: Set<ZoneID>]>([:])

    /// Notes that `peer` offers these shared zones.
    func noteOffers(_ zones: [ZoneID], from peer: DeviceID) {
        offers.withLockedValue { offers in
            if offers.count >= Self.maximumPeerAccounts { offers.removeAll() }
            offers[peer, default: []].formUnion(zones.prefix(Self.maximumOffersPerPeer))
        }
    }

    /// The accounts `peer`'s hellos proved it belongs to.
    func accounts(of peer: DeviceID) -> Set<String> { peerAccounts.withLockedValue { $0[peer] } ?? [] }

    /// The zones of `shares` a device of `accounts` may sync.
    static func sharedZones(in shares: [ZoneID: Share?], for accounts: Set<String>) -> Set<ZoneID> {
        guard !accounts.isEmpty else { return [] }
        return Set(shares.compactMap { zone, share in
            if let share { return share.lists(accounts) ? zone : nil }
            return accounts.contains(zone.ownerName) ? zone : nil
        })
    }

    /// Whether this store holds or accepted the shared zone.
    func holdsOrAccepted(_ zone: ZoneID) -> Bool { shares.withLockedValue { $0[zone] != nil } }

    /// Takes `peer`'s proof of its account (from its hello); returns whether it is new.
    func notePeerMembership(_ bytes: [UInt8], of peer: DeviceID) -> Bool {
        guard let membership = try? AccountMembership(decoding: bytes),
              (try? DeviceID(publicKey: membership.member)) == peer else { return false }
        let account = membership.accountID
        return peerAccounts.withLockedValue { accounts in
            if accounts[peer]?.contains(account) == true { return false }
            if accounts.count >= Self.maximumPeerAccounts { accounts.removeAll() }
            guard (accounts[peer]?.count ?? 0) < StoreTransaction.maximumAccountsPerReplica else { return false }
            accounts[peer, default: []].insert(account)
            return true
        }
    }

    /// Reads the set from the store; returns whether it changed.
    @discardableResult
    func reload() throws -> Bool {
        try reloading.withLock {
            let (spellings, roster, sharedZones) = try store.read { snapshot in
                (Set(try snapshot.peers().filter(\.trusted).map(\.deviceID)), try snapshot.encodedRoster(), try snapshot.sharedZones())
            }
            let unchanged = trustedSpellings.withLockedValue { $0 == spellings }
            let fresh = unchanged ? devices.withLockedValue { $0 } : Set(spellings.compactMap { DeviceID($0) })
            trustedSpellings.withLockedValue { $0 = spellings }
            // The membership follows the roster; its signatures are checked only when the roster changed.
            if roster != encodedRoster.withLockedValue({ $0 }) || ownMembership.withLockedValue({ $0.isEmpty }) {
                let membership = (try? AccountRoster(decoding: roster)).flatMap { AccountMembership(of: store.identity.publicKey, in: $0) }
                ownMembership.withLockedValue { $0 = membership?.encoded ?? [] }
            }
            encodedRoster.withLockedValue { $0 = roster }
            shares.withLockedValue { $0 = sharedZones }
            return devices.withLockedValue { current in
                defer { current = fresh }
                return current != fresh
            }
        }
    }
}
