import Foundation
@testable import Lattice
@_spi(Tools) import LatticeCore
import NIOConcurrencyHelpers
import LatticeTestSupport
import Testing
@_spi(Tools) import LatticeCrypto

extension TemporaryDirectory {
    func container(_ name: String = "store") throws -> Container {
        try Container(identifier: "com.example.test", directory: url.appendingPathComponent(name))
    }
}

func movie(_ name: String, zone: Zone.ID = .default, _ fields: [String: FieldValue]) -> Record {
    var record = Record(recordType: "Movie", recordName: name, zoneID: zone)
    for (key, value) in fields { record[key] = value }
    return record
}

/// Sends what `to` lacks of every zone `from` knows.
@discardableResult
func sync(_ from: Container, to: Container) throws -> ApplySummary {
    var total = ApplySummary()
    for zone in try from.allZoneKeys() {
        total.add(try to.apply(changeSet: from.changeSet(for: zone, since: to.vector(for: zone))))
    }
    return total
}

/// The path of an executable product built beside the tests.
func builtProduct(_ name: String) -> URL {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.main.bundleURL.deletingLastPathComponent(),
        Bundle.main.bundleURL,
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug"),
    ]
    for directory in candidates {
        let url = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    return candidates.last!.appendingPathComponent(name)
}

/// Expects `body` to fail with `code`; succeeding is a test failure too.
func expectError<T>(_ code: LatticeError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        _ = try body()
        Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as LatticeError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// A node on loopback at a port of its own, dialing `peers` (ports on loopback).
func loopbackNode(_ container: Container, peers: [Int] = []) -> SyncNode {
    var configuration = SyncNode.Configuration()
    configuration.port = 0
    configuration.listenHost = "127.0.0.1"
    configuration.peers = peers.map { PeerAddress(host: "127.0.0.1", port: $0) }
    return SyncNode(container: container, configuration: configuration)
}

/// `device` joins `founder`'s account, as pairing makes it.
func joinAccount(_ device: Container, to founder: Container) throws {
    let roster = try founder.store.write { transaction -> AccountRoster in
        _ = try transaction.signRosterEntry(.add(name: "device"), subject: device.store.identity.publicKey)
        return try transaction.roster()
    }
    try device.store.write { _ = try $0.adoptRoster(roster, joining: true) }
}

/// Every event `node` reports from now on, gathered by the task returned (cancel it at the end).
func recordEvents(_ node: SyncNode) -> (NIOLockedValueBox<[SyncNode.Event]>, Task<Void, Never>) {
    let events = NIOLockedValueBox<[SyncNode.Event]>([])
    let stream = node.events
    return (events, Task { for await event in stream { events.withLockedValue { $0.append(event) } } })
}
