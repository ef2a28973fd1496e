import Foundation
@_spi(Testing) @testable import Lattice
@_spi(Tools) import LatticeCore
import LatticeStore
import LatticeTestSupport
import NIOConcurrencyHelpers
import Testing

/// Real nodes on loopback sharing a zone between accounts (CKShare): X
/// (two devices) owns it, Y (two devices) takes part read-only, then
/// read-write, then is removed; and a relay X1 — Z1 — Y1 through a third
/// account, whose forged write both ends refuse.
@Suite(.serialized) struct SharedZoneNodeTests {
    func node(_ container: Container, peers: [Int] = []) -> SyncNode { loopbackNode(container, peers: peers) }


    /// Synchronous on purpose: in an async test the library's async overloads would be chosen.
    func title(_ container: Container, _ name: String, in zone: ZoneID) -> String? {
        guard let record = try? container.sharedCloudDatabase.record(for: Record.ID(recordName: name, zoneID: zone)) else { return nil }
        if case .string(let title)? = record["title"] { return title }
        return nil
    }

    func save(_ container: Container, _ name: String, _ title: String, in zone: ZoneID) throws {
        var record = (try? container.sharedCloudDatabase.record(for: Record.ID(recordName: name, zoneID: zone))) ?? Record(recordType: "Item", recordName: name, zoneID: zone)
        record["title"] = .string(title)
        _ = try container.sharedCloudDatabase.save(record)
    }

    /// A private zone `Lists`, with one record if asked.
    func privateList(_ container: Container, with name: String? = nil, _ title: String = "") throws {
        try container.privateCloudDatabase.save(Zone(zoneName: "Lists"))
        guard let name else { return }
        var record = Record(recordType: "Item", recordName: name, zoneID: ZoneID(zoneName: "Lists"))
        record["title"] = .string(title)
        try container.privateCloudDatabase.save(record)
    }

    /// A record's title in the private zone `Lists`.
    func privateTitle(_ container: Container, _ name: String) -> String? {
        guard let record = try? container.privateCloudDatabase.record(for: Record.ID(recordName: name, zoneID: ZoneID(zoneName: "Lists"))) else { return nil }
        if case .string(let title)? = record["title"] { return title }
        return nil
    }

    func invitations(_ container: Container) -> Int { (try? container.shareInvitations().count) ?? 0 }

    func refusals(_ events: NIOLockedValueBox<[SyncNode.Event]>) -> Int {
        events.withLockedValue { $0 }.filter { if case .writesRefused = $0 { return true } else { return false } }.count
    }


    @Test func aZoneSharedReadOnlyThenReadWriteThenRemoved() async throws {
        let directory = TemporaryDirectory()
        let x1 = try directory.container("x1"), x2 = try directory.container("x2")
        let y1 = try directory.container("y1"), y2 = try directory.container("y2")
        try joinAccount(x2, to: x1)
        try joinAccount(y2, to: y1)
        y2.ignoreWriteRights()
        try privateList(x1, with: "milk", "Milk")
        let share = try x1.share(zone: "Lists", with: try y1.accountID, permission: .readOnly)
        let zone = share.zoneID
        #expect(zone.ownerName == (try x1.accountID) && share.isOwner && share.records == 1)
        #expect(share.participants.map(\.permission) == [.readOnly])

        let nodeX1 = node(x1)
        let (eventsX1, listener) = recordEvents(nodeX1)
        try await nodeX1.start()
        let portX1 = try #require(nodeX1.listeningPort)
        let nodeX2 = node(x2, peers: [portX1])
        try await nodeX2.start()
        let nodeY1 = node(y1, peers: [portX1])
        try await nodeY1.start()
        let nodeY2 = node(y2, peers: [try #require(nodeY1.listeningPort), portX1])
        try await nodeY2.start()

        // Y sees the invitation, accepts it, and every device of both accounts holds the zone.
        #expect(await eventually(30) { invitations(y1) == 1 })
        #expect(try y1.acceptShare("Lists") == zone)
        #expect(await eventually(30) { title(y1, "milk", in: zone) == "Milk" && title(y2, "milk", in: zone) == "Milk" && title(x2, "milk", in: zone) == "Milk" })
        // Every device of the owner's account keeps it in its private database
        // under its own name too, as CloudKit's owner does.
        for owner in [x1, x2] {
            #expect(try owner.privateCloudDatabase.allRecordZones().map(\.zoneID.zoneName) == [ZoneID.defaultZoneName, "Lists"])
            #expect(privateTitle(owner, "milk") == "Milk")
        }

        // Read-only: Y's own store refuses at once; a modified client's write is refused by X.
        expectError(.permissionFailure) { try save(y1, "eggs", "Eggs", in: zone) }
        try save(y2, "forged", "Forged", in: zone)
        #expect(await eventually(30) { refusals(eventsX1) > 0 })
        #expect(title(x1, "forged", in: zone) == nil && title(x2, "forged", in: zone) == nil && title(y1, "forged", in: zone) == nil)

        // Read-write: Y's writes reach every device of X.
        try x1.share(zone: "Lists", with: try y2.accountID)
        #expect(await eventually(30) { (try? save(y1, "eggs", "Eggs", in: zone)) != nil })
        #expect(await eventually(30) { title(x1, "eggs", in: zone) == "Eggs" && title(x2, "eggs", in: zone) == "Eggs" })

        // Removed: Y learns it, and nothing new reaches it.
        try x1.removeParticipant(try y1.accountID, fromZone: "Lists")
        #expect(await eventually(30) { (try? y1.shares().first?.permission) == .removed })
        expectError(.permissionFailure) { try save(y1, "late", "Late", in: zone) }
        try privateList(x1, with: "bread", "Bread")
        #expect(await eventually(30) { title(x2, "bread", in: zone) == "Bread" })
        #expect(await eventually(30) { (try? y2.shares().first?.permission) == .removed })
        try await Task.sleep(nanoseconds: 1_000_000_000)
        #expect(title(y1, "bread", in: zone) == nil && title(y2, "bread", in: zone) == nil)
        for node in [nodeY2, nodeY1, nodeX2, nodeX1] { await node.stop() }
        listener.cancel()
    }

    @Test func aThirdAccountRelaysTheZoneAndItsForgeryIsRefusedAtBothEnds() async throws {
        let directory = TemporaryDirectory()
        let x1 = try directory.container("x1"), y1 = try directory.container("y1"), z1 = try directory.container("z1")
        z1.ignoreWriteRights()
        try privateList(x1)
        try x1.share(zone: "Lists", with: try y1.accountID)
        let zone = try x1.share(zone: "Lists", with: try z1.accountID, permission: .readOnly).zoneID
        try save(x1, "milk", "Milk", in: zone)

        // X1 — Z1 — Y1: X and Y never meet.
        let nodeZ1 = node(z1)
        try await nodeZ1.start()
        let portZ1 = try #require(nodeZ1.listeningPort)
        let nodeX1 = node(x1, peers: [portZ1])
        let (eventsX1, listenerX1) = recordEvents(nodeX1)
        try await nodeX1.start()
        let nodeY1 = node(y1, peers: [portZ1])
        let (eventsY1, listenerY1) = recordEvents(nodeY1)
        try await nodeY1.start()

        #expect(await eventually(30) { invitations(z1) == 1 })
        try z1.acceptShare("Lists")
        // Z holds the share now, so it offers the zone to Y, which the share names.
        #expect(await eventually(30) { invitations(y1) == 1 })
        try y1.acceptShare("Lists:\(zone.ownerName.prefix(7))")
        #expect(await eventually(30) { title(y1, "milk", in: zone) == "Milk" })
        try save(y1, "eggs", "Eggs", in: zone)
        #expect(await eventually(30) { title(x1, "eggs", in: zone) == "Eggs" })

        // Z is read-only: what it writes anyway is refused by X and by Y, and reaches neither.
        try save(z1, "forged", "Forged", in: zone)
        try save(z1, "eggs", "Rotten", in: zone)
        #expect(await eventually(30) { refusals(eventsX1) > 0 && refusals(eventsY1) > 0 })
        #expect(title(x1, "forged", in: zone) == nil && title(y1, "forged", in: zone) == nil)
        #expect(title(x1, "eggs", in: zone) == "Eggs" && title(y1, "eggs", in: zone) == "Eggs")
        for node in [nodeY1, nodeX1, nodeZ1] { await node.stop() }
        listenerX1.cancel()
        listenerY1.cancel()
    }
}
