@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// The histories the fuzzer starts from: a base state every input is applied
/// onto, and seed inputs that reach the interesting paths (conflicts,
/// deletes and re-creations, cascades, zone deletion and re-creation, schema
/// deployment, several zones in one bundle, split change sets, clocks ahead).
package enum FuzzHistories {
    final class Clock: @unchecked Sendable {
        var now = ChangeSetFuzzTarget.now - 50_000
    }

    package static func make() -> (base: [UInt8], seeds: [[UInt8]]) {
        do { return try build() } catch { fatalError("the fuzz histories cannot be built: \(error)") }
    }

    private static func build() throws -> (base: [UInt8], seeds: [[UInt8]]) {
        let zone = ChangeSetFuzzTarget.zone
        let other = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Other"))
        let clock = Clock()
        let ahead = Clock()
        ahead.now += 3_600_000
        let a = try! MemoryReplica(identity: .numbered(1), wallClock: { clock.now })
        let b = try! MemoryReplica(identity: .numbered(2), wallClock: { clock.now })
        let c = try! MemoryReplica(identity: .numbered(3), wallClock: { clock.now })
        let future = try! MemoryReplica(identity: .numbered(4), wallClock: { ahead.now })
        a.createZone(zone)
        try a.save("studio", type: "Studio", in: zone, changes: [("name", .string("Pixar"))])
        for index in 0..<4 {
            try a.save("m\(index)", type: "Movie", in: zone, changes: [
                ("title", .string("Movie \(index)")), ("rating", .int64(Int64(index))), ("tags", .list([.string("a"), .string("b")])),
                ("studio", .reference(RecordReference(recordName: "studio", action: .deleteSelf))),
                ("where", .location(Location(latitude: 1, longitude: 2, altitude: index % 2 == 0 ? 3 : nil))),
            ])
        }
        try a.save("gone", type: "Movie", in: zone, changes: [("title", .string("Gone"))])
        try a.delete("gone", in: zone)
        let base = try a.makeChangeSet(for: zone, since: VersionVector())
        for replica in [b, c, future] { try replica.apply(base) }
        let baseVector = a.syncState(of: zone)!.vector

        clock.now += 10
        try a.save("m0", type: "Movie", in: zone, changes: [("rating", .int64(10))])
        try b.save("m0", type: "Movie", in: zone, changes: [("rating", .int64(20)), ("seen", .bool(true))])
        try b.save("m1", type: "Movie", in: zone, changes: [("title", nil)], replacement: .allKeys)
        try c.delete("studio", in: zone)
        try c.save("gone", type: "Movie", in: zone, changes: [("title", .string("Back")), ("poster", .bytes([1, 2, 3]))])
        try c.deploySchema()
        try a.apply(try b.makeChangeSet(for: zone, since: baseVector))
        try a.clearConflicts(of: "m0", in: zone)
        try future.save("m2", type: "Movie", in: zone, changes: [("title", .string("From the future"))])
        b.createZone(other)
        try b.save("x", type: "Note", in: other, changes: [("text", .string("elsewhere")), ("when", .date(5))])
        let deleter = try! MemoryReplica(identity: .numbered(5), wallClock: { clock.now })
        try deleter.apply(base)
        try deleter.deleteZone(zone)
        deleter.createZone(zone)
        try deleter.save("fresh", type: "Movie", in: zone, changes: [("title", .string("After the re-creation"))])

        var seeds: [[UInt8]] = []
        for replica in [a, b, c, future, deleter] {
            seeds.append(try replica.makeChangeSet(for: zone, since: VersionVector()))
            seeds.append(try replica.makeChangeSet(for: zone, since: baseVector))
        }
        seeds.append(try b.makeChangeSet(for: zone, since: baseVector) + b.makeChangeSet(for: other, since: VersionVector()))
        seeds.append(try split(try c.makeChangeSet(for: zone, since: VersionVector())))
        return (base, seeds)
    }

    /// The first half of a change set's records as a part that claims nothing.
    private static func split(_ bytes: [UInt8]) throws -> [UInt8] {
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        guard var header = try reader.readHeader() else { return bytes }
        var records: [RecordState] = []
        while let record = try reader.nextRecord() { records.append(record) }
        header.claimsTop = false
        return try MemoryReplica.encode(header: header, records: Array(records.prefix(records.count / 2 + 1)))
    }
}
