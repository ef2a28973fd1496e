@_spi(Tools) import LatticeCore
import LatticeStore

extension TemporaryDirectory {
    /// A record store on disk in this directory (under `name`), with `zones`
    /// created: the tests' one temporary store, removed with the directory.
    package func store(_ name: String = "store", zones: [ZoneKey] = []) throws -> RecordStore {
        let store = try RecordStore(directory: url.appendingPathComponent(name))
        if !zones.isEmpty {
            try store.write { transaction in for zone in zones { _ = try transaction.createZone(zone) } }
        }
        return store
    }
}
