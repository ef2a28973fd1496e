@_spi(Tools) import LatticeCore
import Testing

@Suite struct CodecTests {
    @Test func changeSetRoundTripsEveryValueType() throws {
        let clock = ManualClock()
        let replica = makeReplica(7, clock: clock)
        replica.createZone(testZone)
        let values: [(String, FieldValue?)] = [
            ("s", "text ✓"), ("i", .int64(-42)), ("d", .double(2.5)), ("b", .bool(true)), ("t", .date(-5)),
            ("y", .bytes([0, 255])), ("r", .reference(RecordReference(recordName: "other", action: .deleteSelf))),
            ("a", .asset(AssetReference(hash: [UInt8](repeating: 9, count: 32), size: 10))),
            ("l", .location(Location(latitude: 1, longitude: 2, altitude: 3))), ("ls", .list([.date(1), .date(2)])),
            ("ll", .list([.location(Location(latitude: 1, longitude: 2))])),
        ]
        try replica.save("rec", type: "T", in: testZone, changes: values)
        let bytes = try replica.makeChangeSet(for: testZone, since: VersionVector())
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        let header = try #require(try reader.readHeader())
        #expect(header.zone == testZone && header.claimsTop)
        let decoded = try #require(try reader.nextRecord())
        #expect(decoded == replica.record("rec", in: testZone))
        #expect(try reader.nextRecord() == nil)
    }

    @Test func recordNamesAreFrontCodedWithinAFrameWhateverTheirBytes() throws {
        let clock = ManualClock()
        let replica = makeReplica(7, clock: clock)
        replica.createZone(testZone)
        // Shared prefixes that end inside a two-byte scalar ("é" C3 A9, "ê" C3 AA), and none at all.
        let names = ["r000001", "r000002", "r000010", "é1", "ê2", "ê", "ê", "zz", "a", "r000001x"]
        for name in Set(names) { try replica.save(name, type: "T", in: testZone, changes: [("v", .int64(1))]) }
        let bytes = try replica.makeChangeSet(for: testZone, since: VersionVector())
        #expect(bytes[4] == ChangeSetFormat.version)
        var reader = ChangeSetReader(source: ArrayByteSource(bytes))
        _ = try reader.readHeader()
        var read: [String] = []
        while let record = try reader.nextRecord() { read.append(record.recordName) }
        #expect(read.sorted() == Set(names).sorted())
    }

    @Test func everyTruncationAndEveryBitFlipIsDetected() throws {
        let clock = ManualClock()
        let replica = makeReplica(3, clock: clock)
        replica.createZone(testZone)
        for index in 0..<5 { try replica.save("r\(index)", type: "T", in: testZone, changes: [("v", .int64(Int64(index)))]) }
        let bytes = try replica.makeChangeSet(for: testZone, since: VersionVector())
        let target = makeReplica(4, clock: clock)
        for length in 1..<bytes.count {
            #expect(throws: (any Error).self) { try target.apply(Array(bytes.prefix(length))) }
        }
        for index in bytes.indices {
            var damaged = bytes
            damaged[index] ^= 0x01
            #expect(throws: (any Error).self, "flip at \(index) accepted") { try target.apply(damaged) }
        }
        #expect(target.zoneKeys.isEmpty)
    }

    @Test func hybridLogicalClockIsStrictlyIncreasing() {
        var clock = HybridLogicalClock()
        var last = HLCTimestamp.zero
        for wall: UInt64 in [100, 100, 99, 100, 101, 50] {
            let now = clock.tick(wallClock: wall)
            #expect(now > last)
            last = now
        }
        #expect(clock.accepts(HLCTimestamp(milliseconds: 100 + HybridLogicalClock.defaultMaximumSkewMilliseconds, counter: 0), wallClock: 100))
        #expect(!clock.accepts(HLCTimestamp(milliseconds: 101 + HybridLogicalClock.defaultMaximumSkewMilliseconds, counter: 0), wallClock: 100))
    }

    @Test func versionVectorOrderings() {
        let a = VersionVector([(replicaID(1), HLCTimestamp(rawValue: 5))])
        let b = VersionVector([(replicaID(1), HLCTimestamp(rawValue: 5)), (replicaID(2), HLCTimestamp(rawValue: 1))])
        let c = VersionVector([(replicaID(2), HLCTimestamp(rawValue: 3))])
        #expect(a.compare(to: a) == .equal)
        #expect(a.compare(to: b) == .lesser)
        #expect(b.compare(to: a) == .greater)
        #expect(a.compare(to: c) == .concurrent)
        #expect(a.joined(with: c).dominates(b))
    }
}
