import Foundation
import LatticeTestSupport
import Testing

/// Several stores, each written by its own background processes while
/// bundles travel between them, through nothing but `lattice` commands:
/// they converge with the same records and the same conflicts, a bundle
/// applied twice takes no commit, and a schema deployed on one store while
/// the others keep writing ends up refusing new fields everywhere.
@Suite struct StoresAndProcessesTests {
    let cli = CLI()
    let stores = ["a", "b", "c"]

    func bundle(from: String, to: String) throws -> (file: String, result: CLI.Result) {
        let vector = cli.path("\(to)-vector-\(UUID().uuidString).json")
        try cli.ok(["vector", "--json"], store: to).stdout.write(toFile: vector, atomically: true, encoding: .utf8)
        let file = cli.path("\(from)-to-\(to)-\(UUID().uuidString).ltb")
        try cli.ok(["bundle", "create", "-o", file, "--since", vector], store: from)
        return (file, try cli.ok(["bundle", "apply", file, "--json"], store: to))
    }

    func exchangeAll() throws {
        for _ in 0..<2 {
            for from in stores { for to in stores where to != from { _ = try bundle(from: from, to: to) } }
        }
    }

    func commitSequence(_ store: String) throws -> Int {
        try cli.ok(["status", "--json"], store: store).json["commitSequence"] as? Int ?? -1
    }

    /// Starts a shell loop of `lattice record save` processes on `store`; returns it running.
    func writer(_ store: String, saves: Int) throws -> Process {
        let script = """
            for i in $(seq 1 \(saves)); do
              "$LATTICE" record save "Movies/\(store)-$i" --type Movie "title=by \(store) $i" "rating:int=$i" --store "$STORE" || exit 1
              "$LATTICE" record save Movies/shared --type Movie "title=\(store) $i" --store "$STORE" || exit 1
            done
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        var environment = ProcessInfo.processInfo.environment
        environment["LATTICE"] = CLI.binary.path
        environment["STORE"] = cli.path(store)
        environment["LATTICE_STORE"] = nil
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func storesWrittenByManyProcessesConvergeThroughBundles() throws {
        defer { cli.cleanup() }
        for store in stores { try cli.ok(["init", "--name", store], store: store) }
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=3"], store: "a")
        try cli.ok(["record", "save", "Movies/studio", "--type", "Studio", "title=Pixar"], store: "a")
        try cli.ok(["record", "save", "Movies/cars", "--type", "Movie", "title=Cars", "studio:ref-cascade=studio"], store: "a")
        for other in ["b", "c"] { _ = try bundle(from: "a", to: other) }

        // Every store is written by its own processes while bundles travel.
        let writers = try stores.map { try writer($0, saves: 12) }
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "rating:int=4"], store: "a")
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "rating:int=5"], store: "b")
        try cli.ok(["record", "delete", "Movies/studio"], store: "c") // cascades to cars
        try cli.ok(["record", "save", "Movies/cars", "--type", "Movie", "title=Cars 2"], store: "b") // races the cascade
        // The schema is deployed on a while the others keep writing.
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "note=first"], store: "c")
        try cli.ok(["schema", "deploy"], store: "a")
        _ = try bundle(from: "a", to: "b")
        let refused = try cli.run(["record", "save", "Movies/up", "--type", "Movie", "brandNew=1"], store: "b")
        #expect(refused.status == 65 && refused.stderr.contains("production"), "b has the deployment: \(refused.stderr)")
        _ = try bundle(from: "c", to: "a")
        for process in writers {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "a writer process failed")
        }
        try exchangeAll()

        let snapshots = try stores.map { try cli.snapshot($0) }
        #expect(snapshots[0] == snapshots[1] && snapshots[1] == snapshots[2], "stores differ after exchanging bundles")
        let records = (try JSONSerialization.jsonObject(with: Data(snapshots[0].utf8)) as? [String: Any])?["records"] as? [[String: Any]] ?? []
        let names = Set(records.map { $0["recordName"] as? String ?? "" })
        #expect(names.isSuperset(of: ["up", "shared", "a-12", "b-12", "c-12"]))
        #expect(!names.contains("cars"), "the cascade from the studio's delete wins over the concurrent edit")
        // Every store shows the same conflicts: they travel with the record.
        let conflicts = try stores.map { try cli.ok(["conflicts", "Movies/up", "--json"], store: $0).stdout }
        #expect(conflicts[0] == conflicts[1] && conflicts[1] == conflicts[2])
        #expect(conflicts[0].contains("\"rating\""))
        let shared = try stores.map { try cli.ok(["conflicts", "Movies/shared", "--json"], store: $0).stdout }
        #expect(shared[0] == shared[1] && shared[1] == shared[2])
        // The deployment reached everyone.
        for store in stores {
            let refusal = try cli.run(["record", "save", "Movies/up", "--type", "Movie", "another=1"], store: store)
            #expect(refusal.status == 65, "store \(store) still accepts new fields")
        }
        // Clearing on one store is a write that reaches the others.
        try cli.ok(["conflicts", "Movies/up", "--clear"], store: "c")
        try exchangeAll()
        for store in stores {
            #expect(try cli.ok(["conflicts", "Movies/up", "--json"], store: store).json["conflicts"] as? [Any] != nil)
            #expect((try cli.ok(["conflicts", "Movies/up", "--json"], store: store).json["conflicts"] as? [Any])?.isEmpty == true, "store \(store) still shows cleared conflicts")
        }
    }

    @Test func aBundleAppliedTwiceTakesNoCommit() throws {
        defer { cli.cleanup() }
        for store in ["a", "b"] { try cli.ok(["init"], store: store) }
        try cli.ok(["zone", "create", "Movies"], store: "a")
        for index in 0..<5 { try cli.ok(["record", "save", "Movies/m\(index)", "--type", "Movie", "title=T\(index)"], store: "a") }
        let (file, first) = try bundle(from: "a", to: "b")
        #expect(first.json["recordsChanged"] as? Int == 5)
        let sequence = try commitSequence("b")
        let token = try cli.ok(["changes", "Movies", "--json"], store: "b").json["syncToken"] as? String ?? ""
        for _ in 0..<2 {
            let again = try cli.ok(["bundle", "apply", file, "--json"], store: "b").json
            #expect(again["recordsChanged"] as? Int == 0 && again["recordsReceived"] as? Int == 5)
            #expect(try commitSequence("b") == sequence, "re-applying a bundle moved the commit sequence")
        }
        let since = try cli.ok(["changes", "Movies", "--since", token, "--json"], store: "b").json
        #expect((since["records"] as? [Any])?.isEmpty == true && since["syncToken"] as? String == token)
        // Saving what is already there is no commit either.
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=T1"], store: "b")
        #expect(try commitSequence("b") == sequence)
    }
}
