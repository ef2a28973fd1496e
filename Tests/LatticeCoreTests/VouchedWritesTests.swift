@testable import LatticeCore
import Testing

/// The lists of writes an owner's devices vouch for (issue 38, finding 2):
/// what a field holds reads back exactly, bytes from a peer never trap, and
/// the rule of which writes need vouching follows the owner's word alone.
@Suite struct VouchedWritesTests {
    func randomStamp() -> Stamp {
        Stamp(time: HLCTimestamp(rawValue: UInt64.random(in: 1...(1 << 60))), replica: ReplicaID(high: UInt64.random(in: 0...3), low: 7))
    }

    @Test func aListReadsBackAsWrittenAndNamesOnlyTheDigestItHolds() throws {
        var list = VouchedWrites()
        var written: [Stamp: [UInt8]] = [:]
        for _ in 0..<500 {
            let digest = (0..<32).map { _ in UInt8.random(in: 0...255) }
            let stamp = randomStamp()
            written[stamp] = digest
            list.insert(stamp, digest: digest)
        }
        let read = try VouchedWrites(decoding: list.encoded)
        #expect(read == list)
        for (stamp, digest) in written {
            #expect(read.vouches(for: stamp, digest: digest))
            var other = digest
            other[3] ^= 1
            #expect(!read.vouches(for: stamp, digest: other), "another write signed under a vouched stamp")
        }
        #expect(!read.vouches(for: Stamp(time: HLCTimestamp(rawValue: 1 << 61), replica: ReplicaID(high: 0, low: 7)), digest: written.first!.value))
    }

    @Test func twoListsNamingOneStampWithTwoDigestsVouchForNeither() {
        let stamp = randomStamp()
        var one = VouchedWrites([stamp: [UInt8](repeating: 1, count: 32)])
        one.formUnion(VouchedWrites([stamp: [UInt8](repeating: 2, count: 32)]))
        #expect(!one.vouches(for: stamp, digest: [UInt8](repeating: 1, count: 32)))
        #expect(!one.vouches(for: stamp, digest: [UInt8](repeating: 2, count: 32)))
    }

    @Test func bytesFromAPeerNeverTrap() throws {
        var list = VouchedWrites()
        for _ in 0..<20 { list.insert(randomStamp(), digest: (0..<32).map { _ in UInt8.random(in: 0...255) }) }
        let good = list.encoded
        var refused = 0
        for _ in 0..<5_000 {
            var bytes = good
            switch Int.random(in: 0..<3) {
            case 0: bytes[Int.random(in: 0..<bytes.count)] = UInt8.random(in: 0...255)
            case 1: bytes.removeLast(Int.random(in: 1..<bytes.count))
            default: bytes = (0..<Int.random(in: 0..<64)).map { _ in UInt8.random(in: 0...255) }
            }
            if (try? VouchedWrites(decoding: bytes)) == nil { refused += 1 }
        }
        #expect(refused > 0)
    }

    @Test func onlyTheOwnersDowngradeOrRemovalCallsForVouching() {
        func change(_ permission: SharePermission, _ time: UInt64, leave: Bool = false) -> Share.Change {
            Share.Change(permission: permission, time: HLCTimestamp(rawValue: time), isLeave: leave)
        }
        let share = Share(owner: "o", participants: [
            "kept": [change(.readWrite, 10)],
            "removed": [change(.readWrite, 10), change(.removed, 50), change(.readWrite, 90)],
            "left": [change(.readWrite, 10), change(.removed, 50, leave: true)],
            // A leave backdated before a write does not free it from a later removal.
            "leftThenRemoved": [change(.readWrite, 10), change(.removed, 20, leave: true), change(.removed, 60)],
        ])
        #expect(!share.requiresVouching("kept", at: HLCTimestamp(rawValue: 40)))
        #expect(share.requiresVouching("removed", at: HLCTimestamp(rawValue: 40)))
        #expect(!share.requiresVouching("removed", at: HLCTimestamp(rawValue: 95)))
        #expect(!share.requiresVouching("left", at: HLCTimestamp(rawValue: 40)))
        #expect(share.requiresVouching("leftThenRemoved", at: HLCTimestamp(rawValue: 15)))
        #expect(share.revokedAccounts == ["removed", "leftThenRemoved"])
    }
}
