@_spi(Tools) @testable import Lattice
import LatticeStore
@_spi(Tools) import LatticeCrypto

extension StoreSyncAdapter {
    /// An adapter over `store` that trusts `peer`'s device, in the store (which
    /// produce and apply check) and in memory.
    static func trusting(_ peer: RecordStore, store: RecordStore, container: String = "app") throws -> StoreSyncAdapter {
        try store.write { try $0.upsertPeer(peer.identity.deviceID.description, name: nil, trusted: true) }
        let trusted = TrustedDevices(store: store)
        try trusted.reload()
        return StoreSyncAdapter(store: store, container: container, trusted: trusted)
    }
}
