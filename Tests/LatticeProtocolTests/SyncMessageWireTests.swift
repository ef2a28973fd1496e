@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import Testing

let replicaA = ReplicaID(high: 1, low: 1)
let replicaB = ReplicaID(high: 2, low: 2)
let notes = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "notes", ownerName: ZoneID.defaultOwnerName))
let sharedZone = ZoneKey(scope: .shared, zoneID: ZoneID(zoneName: "team", ownerName: ZoneID.defaultOwnerName))

func vector(_ pairs: (ReplicaID, UInt64)...) -> VersionVector {
    VersionVector(pairs.map { ($0.0, HLCTimestamp(rawValue: $0.1)) })
}

let zoneState = ZoneState(causalLength: 1, stamp: Stamp(time: HLCTimestamp(rawValue: 5), replica: replicaA))

/// A change set with no records: what a batch carries at least.
func changeSet(zone: ZoneKey = notes, base: VersionVector = VersionVector(), top: VersionVector = vector((replicaA, 10)), claims: Bool) throws -> [UInt8] {
    let header = ChangeSetHeader(zone: zone, zoneState: zoneState, base: base, top: top, claimsTop: claims, replicas: [replicaA, replicaB], schema: Schema())
    var bytes: [UInt8] = []
    var writer = try ChangeSetWriter(header: header, proofs: nil) { bytes += $0 }
    try writer.finish()
    return bytes
}

@Suite struct SyncMessageWireTests {
    static let samples: [SyncMessage] = [
        .hello(Hello(container: "com.example.app", zones: [
            ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3), (replicaB, 9)), resume: StreamCursor(sequence: 4, row: 7)),
            ZoneAdvert(zone: sharedZone, zoneState: zoneState, vector: VersionVector(), resume: nil),
        ])),
        .streamStart(StreamStart(zone: notes, records: 100, bytes: 12345)),
        .changes(ChangesPart(zone: notes, bytes: [1, 2, 3], end: nil)),
        .changes(ChangesPart(zone: notes, bytes: [], end: .init(cursor: StreamCursor(sequence: 9, row: 1), final: true, records: 0))),
        .acknowledgement(Acknowledgement(zone: notes, cursor: StreamCursor(sequence: 9, row: 1), vector: vector((replicaA, 3)))),
        .caughtUp, .ping, .pong, .caughtUpAfter(grants: 3),
        .hello(Hello(container: "app", zones: [], grants: [.public], sharedGrants: [ZoneID(zoneName: "Lists", ownerName: "OWNER")], membership: [1, 2, 3])),
        .grants(Grants(sharedZones: [ZoneID(zoneName: "team", ownerName: ZoneID.defaultOwnerName)], zones: [
            ZoneAdvert(zone: sharedZone, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil),
        ])),
        .assetRequest(AssetRequest(hash: Array(repeating: 1, count: 32), size: 300_000, chunk: nil)),
        .assetRequest(AssetRequest(hash: Array(repeating: 2, count: 32), size: 300_000, chunk: 1)),
        .assetReply(.outline(hash: Array(repeating: 3, count: 32), chunks: [Array(repeating: 4, count: 32), Array(repeating: 5, count: 32)])),
        .assetReply(.chunk(hash: Array(repeating: 6, count: 32), index: 2, leaves: [Array(repeating: 7, count: 32)], bytes: [8, 9, 10])),
        .assetReply(.unavailable(hash: Array(repeating: 11, count: 32), chunk: 0, reason: "not here")),
        .neighbors([DeviceID(digest: Array(repeating: 1, count: 32)), DeviceID(digest: Array(repeating: 2, count: 32))]),
        .holdsRequest,
        .holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: vector((replicaA, 3)), resume: nil)]),
        .hello({ var hello = Hello(container: "app", zones: []); hello.relays = true; return hello }()),
        .hello({ var hello = Hello(container: "app", zones: []); hello.excluded = [notes, sharedZone].sorted { $0.description < $1.description }; return hello }()),
        .hello({ var hello = Hello(container: "app", zones: []); hello.replicatesOnly = [notes]; return hello }()),
        .hello({ var hello = Hello(container: "app", zones: []); hello.replicatesOnly = []; hello.excluded = [sharedZone]; return hello }()),
        .collected(zone: notes, zoneIncarnation: 3, records: [
            CollectedRecord(name: "up", residue: RecordResidue(causalLength: 2, vector: vector((replicaA, 3)))),
            CollectedRecord(name: "coco", residue: RecordResidue(causalLength: 4, vector: VersionVector(), deletion: Stamp(time: HLCTimestamp(rawValue: 9), replica: replicaA))),
        ], blocks: [deletionBlock]),
    ]

    @Test func collectedRecordsThatNoTombstoneCouldLeaveAreRefused() {
        // A live incarnation (odd), none at all, a name listed twice, an empty name.
        for records in [
            [CollectedRecord(name: "up", residue: RecordResidue(causalLength: 3, vector: VersionVector()))],
            [CollectedRecord(name: "up", residue: RecordResidue(causalLength: 0, vector: VersionVector()))],
            [CollectedRecord(name: "up", residue: RecordResidue(causalLength: 2, vector: VersionVector())),
             CollectedRecord(name: "up", residue: RecordResidue(causalLength: 4, vector: VersionVector()))],
            [CollectedRecord(name: "", residue: RecordResidue(causalLength: 2, vector: VersionVector()))],
        ] {
            #expect(throws: ProtocolError.self) { try SyncMessage(decoding: SyncMessage.collected(zone: notes, zoneIncarnation: 1, records: records, blocks: []).encoded()) }
        }
        // Nothing is collected in a deleted zone (an even incarnation).
        let deletedZone = SyncMessage.collected(zone: notes, zoneIncarnation: 2, records: [CollectedRecord(name: "up", residue: RecordResidue(causalLength: 2, vector: VersionVector()))], blocks: [])
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: deletedZone.encoded()) }
    }

    @Test func assetMessagesOutOfBoundsAreRefused() {
        // A chunk beyond the asset's size, a chunk over 256 KiB, more leaves than a chunk has.
        let beyond = SyncMessage.assetRequest(AssetRequest(hash: Array(repeating: 1, count: 32), size: 10, chunk: 5))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: beyond.encoded()) }
        let large = SyncMessage.assetReply(.chunk(hash: Array(repeating: 1, count: 32), index: 0, leaves: [], bytes: Array(repeating: 0, count: 262_145)))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: large.encoded()) }
        let leafy = SyncMessage.assetReply(.chunk(hash: Array(repeating: 1, count: 32), index: 0, leaves: Array(repeating: Array(repeating: 0, count: 32), count: 17), bytes: []))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: leafy.encoded()) }
    }

    @Test func neighborsListedTwiceAndHoldsWithResumePointsAreRefused() {
        let device = DeviceID(digest: Array(repeating: 1, count: 32))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: SyncMessage.neighbors([device, device]).encoded()) }
        let resuming = SyncMessage.holds([ZoneAdvert(zone: notes, zoneState: zoneState, vector: VersionVector(), resume: StreamCursor(sequence: 1, row: 1))])
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: resuming.encoded()) }
    }

    @Test func grantsThatAdvertiseAZoneTheyDoNotGrantAreRefused() {
        let lying = SyncMessage.grants(Grants(sharedZones: [], zones: [ZoneAdvert(zone: sharedZone, zoneState: zoneState, vector: VersionVector(), resume: nil)]))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: lying.encoded()) }
        let twice = SyncMessage.grants(Grants(sharedZones: [ZoneID(zoneName: "a", ownerName: "o"), ZoneID(zoneName: "a", ownerName: "o")], zones: []))
        #expect(throws: ProtocolError.self) { try SyncMessage(decoding: twice.encoded()) }
    }

    @Test(arguments: samples) func roundTrips(_ message: SyncMessage) throws {
        #expect(try SyncMessage(decoding: message.encoded()) == message)
    }

    @Test func everyTruncationIsAnErrorNotACrash() throws {
        for message in Self.samples {
            let bytes = message.encoded()
            for length in 0..<bytes.count {
                #expect(throws: ProtocolError.self) { _ = try SyncMessage(decoding: Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func trailingBytesAreRefused() throws {
        #expect(throws: ProtocolError.self) { _ = try SyncMessage(decoding: SyncMessage.ping.encoded() + [0]) }
    }

    @Test func randomBytesNeverCrash() throws {
        var rng = SystemRandomNumberGenerator()
        var decoded = 0
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if (try? SyncMessage(decoding: bytes)) != nil { decoded += 1 }
        }
        // A few one-byte pings and pongs may decode; a random hello essentially never does.
        #expect(decoded < 2_000)
    }

    @Test func invalidNamesAndOversizedMessagesAreRefused() throws {
        var bad = SyncMessage.streamStart(StreamStart(zone: notes, records: 1, bytes: 1)).encoded()
        bad[3] = UInt8(ascii: "/") // inside the zone name
        #expect(throws: ProtocolError.self) { _ = try SyncMessage(decoding: bad) }
        let huge = [UInt8](repeating: 6, count: SyncWire.maximumMessageSize + 1)
        #expect(throws: ProtocolError.limitExceeded("a message of \(huge.count) bytes is over the \(SyncWire.maximumMessageSize)-byte maximum")) {
            _ = try SyncMessage(decoding: huge)
        }
    }
}

/// A signed block of two writes, as a `collected` message carries one.
let deletionBlock: WriteBlock = {
    let entries = [WriteBlock.Entry(time: HLCTimestamp(rawValue: 5), digest: Array(repeating: 1, count: 32)),
                   WriteBlock.Entry(time: HLCTimestamp(rawValue: 9), digest: Array(repeating: 2, count: 32))]
    return try! WriteBlock.seal(entries, last: HLCTimestamp(rawValue: 9), in: notes, by: try! Identity.generate())
}()
