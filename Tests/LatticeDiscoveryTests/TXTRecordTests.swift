@testable import LatticeDiscovery
import Testing

@Suite struct TXTRecordTests {
    @Test func entriesRoundTripInKeyOrder() throws {
        let entries = ["id": "ABCDEFG-1234567", "container": "com.example.notes", "pv": "1-2"]
        let bytes = try TXTRecord.encode(entries)
        #expect(TXTRecord.decode(bytes) == entries)
        #expect(bytes.first == UInt8("container=com.example.notes".utf8.count))
    }

    @Test func anEmptyRecordIsOneZeroByte() throws {
        #expect(try TXTRecord.encode([:]) == [0])
        #expect(TXTRecord.decode([0]).isEmpty)
    }

    @Test func entriesThatCannotBeCarriedAreRefused() {
        #expect(throws: DiscoveryError.self) { try TXTRecord.encode(["k": String(repeating: "x", count: 254)]) }
        #expect(throws: DiscoveryError.self) { try TXTRecord.encode(["": "x"]) }
        #expect(throws: DiscoveryError.self) { try TXTRecord.encode(["a=b": "x"]) }
    }

    @Test func keysAreCaseInsensitiveAndTheFirstWins() {
        let bytes: [UInt8] = [4] + Array("ID=a".utf8) + [4] + Array("id=b".utf8)
        #expect(TXTRecord.decode(bytes) == ["id": "a"])
    }

    @Test func malformedBytesFromTheNetworkAreSkippedNotTrusted() {
        // A length past the end, an entry without '=', an empty key, invalid UTF-8.
        #expect(TXTRecord.decode([9] + Array("id=a".utf8)).isEmpty)
        #expect(TXTRecord.decode([3] + Array("abc".utf8) + [3] + Array("k=v".utf8)) == ["k": "v"])
        #expect(TXTRecord.decode([2] + Array("=v".utf8)).isEmpty)
        #expect(TXTRecord.decode([3, 0x6B, 0x3D, 0xFF]).isEmpty)
        // Control characters (terminal escapes, newlines) never reach a terminal.
        let escape = Array("container=x\u{1B}[31mRED\nok fake".utf8)
        #expect(TXTRecord.decode([UInt8(escape.count)] + escape + [3] + Array("k=v".utf8)) == ["k": "v"])
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = TXTRecord.decode(bytes) // must not trap
        }
    }
}

@Suite struct ServiceTableTests {
    let key = ServiceTable.Key(name: "peer", interfaceIndex: 2)

    @Test func anInstanceIsFoundOnceResolvedWithAnAddress() {
        var table = ServiceTable()
        let isNew = table.browsed(key)
        #expect(isNew)
        let early = table.resolved(key, host: "h1.local.", port: 7766, txt: ["id": "x"])
        #expect(early == nil) // no address yet
        guard case .found(let service) = table.address(key, "10.0.0.1", added: true) else { Issue.record("not found"); return }
        #expect(service.port == 7766 && service.addresses == ["10.0.0.1"] && service.txt == ["id": "x"])
    }

    @Test func ipv4ComesBeforeLinkLocalIPv6() {
        var table = ServiceTable()
        _ = table.browsed(key)
        _ = table.resolved(key, host: "h1.local.", port: 1, txt: [:])
        _ = table.address(key, "fe80::1%eth0", added: true)
        guard case .found(let service) = table.address(key, "10.0.0.1", added: true) else { Issue.record("not found"); return }
        #expect(service.addresses == ["10.0.0.1", "fe80::1%eth0"])
        let again = table.address(key, "10.0.0.1", added: true)
        #expect(again == nil) // nothing changed
    }

    @Test func anInstanceReportedPerProtocolIsGoneOnlyAfterBothRemovals() {
        var table = ServiceTable()
        let first = table.browsed(key)
        let second = table.browsed(key) // the same instance over IPv6: no second resolve
        #expect(first && !second)
        _ = table.resolved(key, host: "h1.local.", port: 1, txt: [:])
        _ = table.address(key, "10.0.0.1", added: true)
        let firstRemoval = table.removed(key)
        #expect(firstRemoval.gone == false)
        let (gone, event) = table.removed(key)
        #expect(gone && event == .lost(name: "peer", interfaceIndex: 2))
    }

    @Test func losingTheLastAddressLosesTheInstanceAndTheDaemonGoingVoidsAll() {
        var table = ServiceTable()
        _ = table.browsed(key)
        _ = table.resolved(key, host: "h1.local.", port: 1, txt: [:])
        _ = table.address(key, "10.0.0.1", added: true)
        let lastAddressGone = table.address(key, "10.0.0.1", added: false)
        #expect(lastAddressGone == .lost(name: "peer", interfaceIndex: 2))
        _ = table.address(key, "10.0.0.2", added: true)
        let other = ServiceTable.Key(name: "unresolved", interfaceIndex: 2)
        _ = table.browsed(other)
        let voided = table.removeAll()
        #expect(voided == [.lost(name: "peer", interfaceIndex: 2)])
        #expect(!table.contains(key) && !table.contains(other))
    }

    @Test func linkLocalIPv6AddressesCarryTheirInterface() {
        #expect(ServiceDiscovery.address(type: 1, data: [10, 77, 0, 3], interface: 2) == "10.77.0.3")
        let global: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]
        #expect(ServiceDiscovery.address(type: 28, data: global, interface: 2) == "2001:db8::1")
        let linkLocal: [UInt8] = [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]
        #expect(ServiceDiscovery.address(type: 28, data: linkLocal, interface: 1) == "fe80::1%lo")
        #expect(ServiceDiscovery.address(type: 28, data: linkLocal, interface: 0) == nil)
        #expect(ServiceDiscovery.address(type: 1, data: [1, 2, 3], interface: 2) == nil)
    }

    @Test func withoutADaemonItSaysWhichPartIsMissing() {
        let error = DiscoveryError.from(code: -65537, doing: "browsing")
        #expect(error.code == .noSystemBus || error.code == .noDaemon)
        #expect(error.message.contains("avahi-daemon"))
        #expect(DiscoveryError.from(code: -65540, doing: "browsing").code == .refused)
    }
}
