import Foundation
import GRDB
@testable import Lattice
@_spi(Tools) import LatticeCore
import LatticeTestSupport
import Testing

/// Tombstone collection through real nodes on loopback: a deletion's
/// tombstone goes on every device once all of them acknowledged it, a device
/// away holds it back (and is named for it), and when that device returns
/// with edits made meanwhile the deleted record does not come back.
@Suite(.serialized) struct TombstoneNodeTests {
    func holds(_ container: Container, _ name: String) -> Bool {
        (try? container.privateCloudDatabase.record(for: Record.ID(recordName: name))) != nil
    }

    /// Synchronous on purpose: in an async test the library's async overloads would be chosen.
    func save(_ container: Container, _ name: String, _ title: String) throws {
        _ = try container.privateCloudDatabase.save(movie(name, ["title": .string(title)]))
    }

    func edit(_ container: Container, _ name: String, _ title: String) throws {
        var record = try container.privateCloudDatabase.record(for: Record.ID(recordName: name))
        record["title"] = .string(title)
        _ = try container.privateCloudDatabase.save(record)
    }

    func delete(_ container: Container, _ name: String) throws {
        try container.privateCloudDatabase.deleteRecord(withID: Record.ID(recordName: name))
    }

    func report(_ container: Container) -> TombstoneReport? { try? container.tombstoneReports().first }

    func changeToken(_ container: Container) throws -> ChangeToken {
        try container.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: nil).changeToken
    }

    func tokenExpired(_ container: Container, _ token: ChangeToken) -> Bool {
        do {
            _ = try container.privateCloudDatabase.recordZoneChanges(inZoneWith: .default, since: token)
            return false
        } catch {
            return error.code == .changeTokenExpired
        }
    }

    func configure(_ configuration: inout SyncNode.Configuration) {
        configuration.assetCollectionInterval = .milliseconds(300)
        configuration.verificationInterval = .seconds(1)
    }

    @Test func tombstonesGoOnceEveryDeviceAcknowledgedThemAndNeverComeBack() async throws {
        let directory = TemporaryDirectory()
        let (containers, nodes) = try await loopbackMesh(directory, 3, configure)
        let (a, b, c) = (containers[0], containers[1], containers[2])
        try save(a, "gone", "Gone")
        try save(a, "kept", "Kept")
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "gone") && holds($0, "kept") } })
        try delete(a, "gone")
        #expect(await eventually(60) { containers.allSatisfy { report($0).map { $0.held == 0 && $0.collected == 1 } == true } },
                "every node collects the tombstone: \(containers.map { report($0).map { "\($0.held) held, \($0.collected) collected" } ?? "-" })")

        // c goes away; a deletes another record. a and b keep its tombstone, waiting for c.
        await nodes[2].stop()
        try delete(a, "kept")
        #expect(await eventually(60) { !holds(b, "kept") })
        try await Task.sleep(nanoseconds: 1_500_000_000) // several collection passes
        for container in [a, b] {
            let held = report(container)
            #expect(held?.held == 1 && held?.waitingFor.map(\.deviceID) == [c.deviceID], "\(String(describing: held))")
        }
        // Meanwhile c edits the record it does not know is deleted, and creates one.
        try edit(c, "kept", "Edited while away")
        try save(c, "new", "Made while away")

        // c returns: the delete wins over its concurrent edit everywhere, its new record spreads, and the tombstone goes.
        let back = SyncNode(container: c, configuration: loopbackConfiguration(peers: nodes[0..<2].compactMap(\.listeningPort), configure))
        try await back.start()
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "new") } })
        #expect(await eventually(60) { containers.allSatisfy { report($0).map { $0.held == 0 && $0.collected == 2 } == true } },
                "\(containers.map { report($0).map { "\($0.held) held, \($0.collected) collected" } ?? "-" })")
        for container in containers {
            #expect(!holds(container, "kept"), "a deleted record came back on \(container.deviceID)")
            #expect(!holds(container, "gone"))
        }
        // The comparisons after each sync found nothing to report (a tombstone collected on one side only is no difference).
        try await Task.sleep(nanoseconds: 2_000_000_000)
        for node in [nodes[0], nodes[1], back] {
            let status = node.status
            #expect(status.peers.allSatisfy { $0.lastMismatch == nil }, "\(status.peers.compactMap(\.lastMismatch))")
        }
        await back.stop()
        for node in nodes[0..<2].reversed() { await node.stop() }
    }

    @Test func aDeviceAwayPastTheHorizonStopsHoldingTombstonesBackAndIsToldWhatWentWhenBack() async throws {
        let directory = TemporaryDirectory()
        let (containers, nodes) = try await loopbackMesh(directory, 3, configure)
        let (a, b, c) = (containers[0], containers[1], containers[2])
        // As `serve --tombstone-horizon 2s` keeps it in each store.
        for container in containers { try container.setTombstoneHorizon(seconds: 2) }
        try save(a, "kept", "Kept")
        try save(a, "other", "Other")
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "kept") && holds($0, "other") } })
        let token = try changeToken(c)

        // c goes away for longer than the horizon: a and b collect the deletion without it.
        await nodes[2].stop()
        try delete(a, "kept")
        #expect(await eventually(60) { [a, b].allSatisfy { report($0).map { $0.held == 0 && $0.collected == 1 } == true } },
                "\([a, b].map { report($0).map { "\($0.held) held, \($0.collected) collected, away \($0.away)" } ?? "-" })")
        #expect(report(a)?.away == [c.deviceID])
        // Meanwhile c edits the record it does not know is deleted, and creates one.
        try edit(c, "kept", "Edited while away")
        try save(c, "new", "Made while away")

        // Back, c is told what went: the record is deleted there too, its new record spreads, nothing comes back.
        let back = SyncNode(container: c, configuration: loopbackConfiguration(peers: nodes[0..<2].compactMap(\.listeningPort), configure))
        try await back.start()
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "new") && !holds($0, "kept") && holds($0, "other") } },
                "\(containers.map { container in ["new", "kept", "other"].filter { holds(container, $0) } })")
        try await Task.sleep(nanoseconds: 2_000_000_000) // more passes and comparisons
        for container in containers {
            #expect(!holds(container, "kept"), "a deleted record came back on \(container.deviceID)")
            #expect(report(container).map { $0.held == 0 && $0.collected == 1 } == true, "\(String(describing: report(container)))")
        }
        // c's view was too old for its change tokens: the one from before it left expired.
        #expect(tokenExpired(c, token))
        for node in [nodes[0], nodes[1], back] {
            #expect(node.status.peers.allSatisfy { $0.lastMismatch == nil }, "\(node.status.peers.compactMap(\.lastMismatch))")
        }
        await back.stop()
        for node in nodes[0..<2].reversed() { await node.stop() }
    }

    /// A member's store, edited on disk, says two live records were
    /// collected — one with no delete behind it, one naming a delete its
    /// writer never signed — and that its zone collected past what the other
    /// device holds. Its node tells the other device so when they meet: that
    /// device deletes nothing on the unsigned word, while the one delete
    /// among them that its writer signed goes through (issue 38, finding 5).
    @Test func aMemberWhoseStoreSaysLiveRecordsWereCollectedDeletesNothing() async throws {
        let directory = TemporaryDirectory()
        let (containers, nodes) = try await loopbackMesh(directory, 2, configure)
        let (a, liar) = (containers[0], containers[1])
        try save(a, "kept", "Kept")
        try save(a, "other", "Other")
        try save(a, "gone", "Gone")
        #expect(await eventually(60) { containers.allSatisfy { holds($0, "kept") && holds($0, "other") && holds($0, "gone") } })
        await nodes[1].stop()
        // One true delete among the lies, collected while a is away from the liar: its signature proves it,
        // and its going shows that the message was sent and taken.
        try delete(liar, "gone")
        let zoneKey = try #require(try liar.store.read { snapshot in
            try snapshot.zones(in: .private).map(\.key).first { key in try snapshot.record("gone", in: key) != nil }
        })
        #expect(try liar.store.collectTombstones(in: zoneKey, acknowledged: try liar.store.read { try $0.syncState(of: zoneKey)?.vector } ?? VersionVector()) == ["gone"])

        let replica = liar.replicaID
        let far = Stamp(time: HLCTimestamp(milliseconds: UInt64(Date().timeIntervalSince1970 * 1000) - 1000, counter: 0), replica: replica)
        let vector = Data(RecordBlob.encodeVector(VersionVector([(replica, far.time)])))
        let database = try DatabaseQueue(path: liar.store.directory.appendingPathComponent("lattice.sqlite").path)
        try await database.write { db in
            let zone = try #require(try Int64.fetchOne(db, sql: "SELECT zone FROM records WHERE name = 'kept'"))
            try db.execute(sql: "INSERT OR REPLACE INTO residues (zone, name, causal_length, vector, deletion) VALUES (?, 'kept', 2, ?, NULL)", arguments: [zone, vector])
            try db.execute(sql: "INSERT OR REPLACE INTO residues (zone, name, causal_length, vector, deletion) VALUES (?, 'other', 2, ?, ?)",
                           arguments: [zone, vector, Data(RecordBlob.encodeStamp(far))])
            try db.execute(sql: "INSERT OR REPLACE INTO collected_through (zone, vector, horizon) VALUES (?, ?, 0)", arguments: [zone, vector])
        }
        try database.close()

        let back = SyncNode(container: liar, configuration: loopbackConfiguration(peers: nodes[0..<1].compactMap(\.listeningPort), configure))
        try await back.start()
        #expect(await eventually(60) { !back.connectedPeers.isEmpty })
        #expect(await eventually(60) { !holds(a, "gone") }, "the signed delete was not taken: was the message sent?")
        #expect(holds(a, "kept") && holds(a, "other"), "a record went on an unsigned word")
        await back.stop()
        await nodes[0].stop()
    }
}
