@_spi(Tools) import LatticeCore
import LatticeStore

/// Sends `to` what it lacks of `zone` from `from`, as a node's stream would:
/// a change set since the vector `to` holds (or, `asANodeTells`, the vector a
/// node tells its peers, which a gap in its own writes lowers), applied in one
/// transaction. The tests' one store-to-store sync.
@discardableResult
package func sync(_ from: RecordStore, to: RecordStore, _ zone: ZoneKey, asANodeTells: Bool = false) throws -> ApplySummary {
    let vector = try to.read { snapshot in
        try snapshot.syncState(of: zone).map { asANodeTells ? try snapshot.vectorToTell($0, in: zone) : $0.vector }
    } ?? VersionVector()
    return try to.apply(try from.changeSet(for: zone, since: vector))
}
