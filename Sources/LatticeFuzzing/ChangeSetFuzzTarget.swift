import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// What the change-set fuzzer checks on every input: whatever bytes a peer
/// sends, reading and applying them into an in-memory replica and into a
/// store on disk never traps; a refused change set changes nothing; and
/// whatever was accepted can be sent on again, every zone of it, and read back.
///
/// A broken promise ends the process (`fatalError`), which is what libFuzzer
/// and the replay runner report as a crash.
package final class ChangeSetFuzzTarget {
    /// The wall clock of every replica here: fixed, so a run replays exactly.
    package static let now: UInt64 = 1_700_000_000_000 + 60_000
    package static let zone = ZoneKey(scope: .private, zoneID: ZoneID(zoneName: "Movies"))
    static let receiver = Identity.numbered(0xF00D)

    let base: [UInt8]
    let store: RecordStore
    let directory: URL
    private struct Rollback: Error {}

    /// Opens a store in `directory` (created) holding the base state every input is applied onto.
    package init(directory: URL) throws {
        self.directory = directory
        base = FuzzHistories.make().base
        store = try RecordStore(directory: directory, wallClock: { ChangeSetFuzzTarget.now })
        _ = try store.apply(base)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Runs one input through both replicas, as sent and with its checksums
    /// repaired (a lying peer computes them too).
    package func run(_ input: [UInt8]) {
        for bytes in [input, ChecksumRepair.repaired(input)] {
            runInMemory(bytes)
            runInStore(bytes)
        }
    }

    func runInMemory(_ input: [UInt8]) {
        let replica = try! MemoryReplica(identity: Self.receiver, wallClock: { Self.now })
        do { try replica.apply(base) } catch { fatalError("the base state does not apply: \(error)") }
        let before = snapshot(replica)
        do {
            _ = try replica.apply(input)
        } catch {
            if snapshot(replica) != before { fatalError("a refused change set changed the memory replica: \(error)") }
        }
        for zone in replica.zoneKeys {
            let bytes: [UInt8]
            do { bytes = try replica.makeChangeSet(for: zone, since: VersionVector()) } catch {
                fatalError("memory replica accepted a change set and cannot send zone \(zone) on: \(error)")
            }
            check(replica.records(in: zone), zone: zone)
            let peer = try! MemoryReplica(identity: .numbered(0xBEEF2), wallClock: { Self.now })
            do { _ = try peer.apply(bytes) } catch { fatalError("a change set the memory replica wrote does not apply: \(error)") }
        }
    }

    func runInStore(_ input: [UInt8]) {
        let sequence: UInt64
        do { sequence = try store.currentSequence() } catch { fatalError("the store cannot be read: \(error)") }
        do {
            try store.write { transaction in
                _ = try transaction.applyChangeSets(from: ArrayByteSource(input))
                for zone in try transaction.allZoneKeys() {
                    var bytes: [UInt8] = []
                    do { try transaction.writeChangeSet(for: zone, since: VersionVector()) { bytes.append(contentsOf: $0) } } catch {
                        fatalError("the store accepted a change set and cannot send zone \(zone) on: \(error)")
                    }
                    check(try transaction.records(changedAfter: 0, in: zone).map(\.state), zone: zone)
                    let peer = try! MemoryReplica(identity: .numbered(0xBEEF3), wallClock: { Self.now })
                    do { _ = try peer.apply(bytes) } catch { fatalError("a change set the store wrote does not apply: \(error)") }
                }
                throw Rollback()
            }
        } catch is Rollback {
        } catch {
            // Refused: the store must be exactly as before.
            let after = (try? store.currentSequence()) ?? .max
            if after != sequence { fatalError("a refused change set moved the store's commit sequence") }
        }
    }

    private func snapshot(_ replica: MemoryReplica) -> [ZoneKey: [RecordState]] {
        var records: [ZoneKey: [RecordState]] = [:]
        for zone in replica.zoneKeys { records[zone] = replica.records(in: zone) }
        return records
    }

    private func check(_ records: [RecordState], zone: ZoneKey) {
        for record in records where !record.vectorCoversEveryStamp {
            fatalError("record \(record.recordName) in \(zone) holds a stamp its vector misses")
        }
    }
}
