import Foundation
import Testing

/// A flood of throwaway identities from one host against a real node that
/// runs a long store write: trusted devices keep syncing as fast as under the
/// same load aimed at another node, the node's memory and store stay bounded.
@Suite(.serialized) struct FloodTests {
    let cli = CLI()

    struct Phase {
        var propagation: [Double]
        var flood: [String: Any]
        var trustedDialIn: CLI.Result
        /// The samples were taken under the flood (it still ran when they ended).
        var floodOutlastedSamples: Bool
        var p99: Double { FloodRig.percentile(propagation, 0.99) }
    }

    /// Floods `target` with throwaway identities that each then send 1 MiB
    /// messages, while `a` imports 50,000 records in one transaction and a
    /// trusted device dials `a`; once the write is done, `a` and `b` keep
    /// syncing under the flood, which the samples time. The flood ends after
    /// the samples, having made at least 2,000 attempts.
    func phase(_ rig: FloodRig, target: NodeProcess, tag: String) throws -> Phase {
        let cpuBefore = FloodRig.cpuSeconds(target)
        let flood = try rig.flood(port: target.port, handshakes: 100_000)
        let write = try rig.longWrite(store: "a", count: 50_000, tag: tag)
        Thread.sleep(forTimeInterval: 0.3)
        let dialIn = try cli.run(["sync", "--peer", "127.0.0.1:\(rig.a.port)", "--once", "--timeout", "60"], store: "d")
        write.waitUntilExit()
        let sampling = Date()
        let samples = try rig.propagation(tag: tag, minimum: 100) { Date().timeIntervalSince(sampling) > 3 && flood.attempts >= 2000 }
        let floodRan = flood.process.isRunning
        print("target cpu \(FloodRig.cpuSeconds(target) - cpuBefore) s")
        return Phase(propagation: samples, flood: flood.summary(stop: true), trustedDialIn: dialIn, floodOutlastedSamples: floodRan)
    }

    @Test func aFloodOfStrangersLeavesTrustedDevicesSyncing() throws {
        defer { cli.cleanup() }
        let rig = try FloodRig(cli: cli)
        defer { rig.stop() }
        _ = try rig.propagation(tag: "warm-up", minimum: 4) { true }

        // Strangers alone: the store hears of them at most once a minute, not per attempt.
        let before = rig.storeBytes("a")
        let strangersOnly = try rig.flood(port: rig.a.port, handshakes: 300, messages: 0).summary()
        let growth = rig.storeBytes("a") - before
        #expect((strangersOnly["handshakes"] as? Int ?? 0) >= 30, "\(strangersOnly)")
        #expect(growth < 256 * 1024, "300 strangers grew the store by \(growth) bytes")

        let quiet = try phase(rig, target: rig.c, tag: "quiet")
        let attacked = try phase(rig, target: rig.a, tag: "attacked")
        let peak = FloodRig.peakRSS(rig.a)
        print("flood: quiet p50 \(FloodRig.percentile(quiet.propagation, 0.5)) ms p99 \(quiet.p99) ms (\(quiet.propagation.count) saves), attacked p50 \(FloodRig.percentile(attacked.propagation, 0.5)) ms p99 \(attacked.p99) ms (\(attacked.propagation.count) saves); a's peak RSS \(peak) MB; store +\(growth) bytes for 300 strangers; floods \(quiet.flood) \(attacked.flood)")

        for phase in [quiet, attacked] {
            // The flood really ran: its handshakes completed, and each stranger tried to send 4 MiB.
            #expect((phase.flood["attempts"] as? Int ?? 0) >= 2000, "\(phase.flood)")
            #expect((phase.flood["handshakes"] as? Int ?? 0) >= 30, "\(phase.flood)")
            #expect(phase.trustedDialIn.status == 0, "a trusted device could not sync with the node: \(phase.trustedDialIn.stderr)")
            #expect(phase.floodOutlastedSamples, "the flood ended before the samples did")
        }
        // Strangers were refused at once, not held while the store wrote.
        #expect((attacked.flood["heldP99Ms"] as? Double ?? .infinity) < 1000, "\(attacked.flood)")
        // Within 2x, or within 25 ms where 2x is less: at p99s of 10-30 ms the
        // machine's own scheduling moves the quiet figure itself by that much from run to run.
        let allowed = max(2 * quiet.p99, quiet.p99 + 25)
        #expect(attacked.p99 <= allowed, "propagation p99 under attack \(attacked.p99) ms, under the same load elsewhere \(quiet.p99) ms")
        #expect(peak < 200, "the attacked node's peak RSS was \(peak) MB")
        let peers = try cli.ok(["peers", "--json"], store: "a").json["peers"] as? [[String: Any]] ?? []
        #expect(peers.count <= 102, "a's store lists \(peers.count) devices after 2,300 strangers")
    }
}
