import Foundation
import LatticeTestSupport
import Testing

/// Tombstones through the CLI: `status` says what is held and why, a running
/// `serve` collects what every device acknowledged, and a bad horizon is a
/// usage error that changes nothing.
@Suite(.serialized) struct TombstoneCLITests {
    let cli = CLI()

    func tombstones(_ store: String) throws -> [String: Any]? {
        let status = try cli.ok(["status", "--json"], store: store).json
        return (status["tombstones"] as? [[String: Any]])?.first { $0["zoneName"] as? String == "Movies" }
    }

    @Test func serveCollectsWhatEveryDeviceAcknowledgedAndStatusSaysWhoHoldsTheRestBack() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up"], store: "a")
        try cli.ok(["record", "delete", "Movies/up"], store: "a")
        #expect(try tombstones("a")?["held"] as? Int == 1)

        // A bad horizon: a usage error, and the store is as it was.
        let bad = try cli.run(["serve", "--no-mdns", "--port", "0", "--tombstone-horizon", "soon"], store: "a")
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("--tombstone-horizon"))
        #expect(try tombstones("a")?["held"] as? Int == 1)

        // Alone in its account, the device acknowledges every tombstone itself.
        let node = try NodeProcess(cli: cli, store: "a", extra: ["--collect-every", "0.2", "--tombstone-horizon", "12h"])
        defer { node.stop() }
        var collected: [String: Any]?
        _ = try eventuallyBlocking {
            collected = try tombstones("a")
            return collected?["collected"] as? Int == 1
        }
        #expect(collected?["held"] as? Int == 0 && collected?["collected"] as? Int == 1, "\(String(describing: collected))")
        let get = try cli.run(["record", "get", "Movies/up"], store: "a")
        #expect(get.status != 0, "a collected record stays deleted")

        // A device trusted but never heard from holds the next tombstone back, and is named.
        try cli.ok(["init"], store: "b")
        let other = try cli.ok(["id"], store: "b").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try cli.ok(["trust", other], store: "a")
        try cli.ok(["record", "save", "Movies/coco", "--type", "Movie", "title=Coco"], store: "a")
        try cli.ok(["record", "delete", "Movies/coco"], store: "a")
        Thread.sleep(forTimeInterval: 1)
        let held = try tombstones("a")
        #expect(held?["held"] as? Int == 1 && held?["collected"] as? Int == 1, "\(String(describing: held))")
        #expect((held?["waitingFor"] as? [[String: Any]])?.compactMap { $0["deviceID"] as? String } == [other])
        let text = try cli.ok(["status"], store: "a").stdout
        #expect(text.contains("tombstones Movies: 1 held, waiting for \(other)"), "\(text)")
    }
}
