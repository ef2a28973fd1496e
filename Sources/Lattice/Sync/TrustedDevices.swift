import LatticeCrypto
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

    /// Reads the set from the store; returns whether it changed.
    @discardableResult
    func reload() throws -> Bool {
        try reloading.withLock {
            let (fresh, roster) = try store.read { snapshot in
                (Set(try snapshot.peers().filter(\.trusted).compactMap { DeviceID($0.deviceID) }), try snapshot.encodedRoster())
            }
            encodedRoster.withLockedValue { $0 = roster }
            return devices.withLockedValue { current in
                defer { current = fresh }
                return current != fresh
            }
        }
    }
}
