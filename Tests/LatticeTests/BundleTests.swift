import Foundation
@testable import Lattice
import LatticeTestSupport
import Testing

/// Bundles through the library: an app writes what another device lacks to a
/// file and the other applies it, all or nothing.
@Suite struct BundleTests {
    /// A laptop that saved one movie, and a phone that holds nothing yet.
    func laptopHoldingUpAndAnEmptyPhone() throws -> (TemporaryDirectory, Container, Container) {
        let directory = TemporaryDirectory()
        let laptop = try directory.container("laptop")
        try laptop.privateCloudDatabase.save(movie("up", ["title": "Up"]))
        return (directory, laptop, try directory.container("phone"))
    }

    @Test func aBundleCarriesWhatTheOtherSideLacks() throws {
        let (directory, laptop, phone) = try laptopHoldingUpAndAnEmptyPhone()
        let everything = directory.url.appendingPathComponent("all.ltb").path
        let first = try laptop.writeBundle(to: everything, zones: try laptop.allZoneKeys())
        #expect(first.records == 1 && first.zones == 1 && first.assets == 0)
        #expect(try phone.applyBundle(at: everything).recordsChanged == 1)
        #expect(try phone.privateCloudDatabase.record(for: Record.ID(recordName: "up"))["title"] == "Up")

        // The phone's vectors, through their file, ask only for what came since.
        try laptop.privateCloudDatabase.save(movie("coco", ["title": "Coco"]))
        let vectorPath = directory.url.appendingPathComponent("phone.json").path
        let keys = try phone.allZoneKeys()
        try JSONEncoder().encode(VersionVectorFile(try keys.map { ($0, try phone.vector(for: $0)) })).write(to: URL(fileURLWithPath: vectorPath))
        let since = try VersionVectorFile.read(vectorPath)
        #expect(since.count == keys.count)
        let delta = directory.url.appendingPathComponent("delta.ltb").path
        #expect(try laptop.writeBundle(to: delta, zones: try laptop.allZoneKeys(), since: since).records == 1)
        #expect(try phone.applyBundle(at: delta).recordsChanged == 1)
        #expect(try phone.privateCloudDatabase.record(for: Record.ID(recordName: "coco"))["title"] == "Coco")
        // Written whole or not at all: no temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).filter { $0.contains(".partial-") }.isEmpty)
    }

    @Test func aDamagedOrMissingBundleChangesNothing() throws {
        let (directory, laptop, phone) = try laptopHoldingUpAndAnEmptyPhone()
        let path = directory.url.appendingPathComponent("all.ltb").path
        try laptop.writeBundle(to: path, zones: try laptop.allZoneKeys())
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0xFF
        let damaged = directory.url.appendingPathComponent("damaged.ltb").path
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        expectError(.invalidArguments) { try phone.applyBundle(at: damaged) }
        let cut = directory.url.appendingPathComponent("cut.ltb").path
        try Data(bytes.prefix(bytes.count - 10)).write(to: URL(fileURLWithPath: cut))
        expectError(.invalidArguments) { try phone.applyBundle(at: cut) }
        let foreign = directory.url.appendingPathComponent("foreign.ltb").path
        try Data("not a bundle".utf8).write(to: URL(fileURLWithPath: foreign))
        expectError(.invalidArguments) { try phone.applyBundle(at: foreign) }
        expectError(.unknownItem) { try phone.applyBundle(at: directory.url.appendingPathComponent("none.ltb").path) }
        expectError(.unknownItem) { _ = try phone.privateCloudDatabase.record(for: Record.ID(recordName: "up")) }
        // The good one still applies.
        #expect(try phone.applyBundle(at: path).recordsChanged == 1)
    }

    @Test func aVectorFileThatIsNotOneSaysWhere() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let path = directory.url.appendingPathComponent("v.json").path
        try Data(#"{"vectors":[{"database":"private","zoneName":"Z","vector":{"00000000000000000000000000000001":1.5}}]}"#.utf8).write(to: URL(fileURLWithPath: path))
        do {
            _ = try VersionVectorFile.read(path)
            Issue.record("a vector of 1.5 was read")
        } catch {
            #expect(error.code == .invalidArguments && error.message.contains("is not a vector file"), "\(error)")
        }
        expectError(.unknownItem) { _ = try VersionVectorFile.read(directory.url.appendingPathComponent("none.json").path) }
    }
}
