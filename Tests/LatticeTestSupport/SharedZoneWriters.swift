@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// `count` signed replicas on `clock`, numbered from 1, that all hold
/// `zone` as the first created it (`genesis`, the change set that gave it
/// to the others): the start of a random history.
package func writersSharing(_ zone: ZoneKey, count: Int = 3, clock: ManualClock) throws -> (writers: [MemoryReplica], genesis: [UInt8]) {
    let writers = try (1...count).map { try MemoryReplica(identity: .numbered(UInt64($0)), wallClock: { clock.now }) }
    writers[0].createZone(zone)
    let genesis = try writers[0].makeChangeSet(for: zone, since: VersionVector())
    for writer in writers.dropFirst() { try writer.apply(genesis) }
    return (writers, genesis)
}
