import Foundation
import GRDB
import LatticeStore
import Testing

/// Stores edited on disk behind Lattice's back, and files a command leaves
/// for others to read: real `lattice` processes, as a user or an attacker
/// with a shell would run them (issue 38, findings 7 and 8).
@Suite struct HostileStoreTests {
    let cli = CLI()

    func editStore(_ store: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: URL(fileURLWithPath: cli.path(store)).appendingPathComponent(RecordStore.databaseFileName).path)
        try queue.write { try $0.execute(sql: sql) }
    }

    func title(_ store: String, _ name: String) throws -> String? {
        let result = try cli.run(["record", "get", "Movies/\(name)", "--json"], store: store)
        let record = (result.json["records"] as? [[String: Any]])?.first
        return ((record?["fields"] as? [String: Any])?["title"] as? [String: Any])?["value"] as? String
    }

    /// The clock a store keeps in `meta.hlc`, set back behind the store's own
    /// writes (a copy restored, or an edit): the next saves go through, stamp
    /// after the writes the store holds, and win over them as later writes do.
    @Test(.runsUnderFaketime)
    func aStoreWhoseClockWasSetBackStillSavesAndItsNewWritesWin() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        for index in 0..<5 { try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Take \(index)"]) }
        try editStore("a", "UPDATE meta SET value = 1 WHERE key = 'hlc'")
        // And the wall clock six years back (libfaketime, installed by scripts/install-deps.sh).
        let past = try FakeTime.wrapper("2020-01-01 00:00:00")
        for (index, arguments) in [
            ["record", "save", "Movies/m1", "--type", "Movie", "title=After the clock went back"],
            ["record", "save", "Movies/m2", "--type", "Movie", "title=Another"],
            ["record", "delete", "Movies/m2"],
            ["zone", "create", "Shows"],
        ].enumerated() {
            let result = try cli.run(arguments, wrapper: past)
            #expect(result.status == 0, "command \(index) after the clock was set back failed: \(result.stderr)")
        }
        #expect(try title("a", "m1") == "After the clock went back")
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Last"])
        #expect(try title("a", "m1") == "Last")
        // The store still opens and reads whole.
        #expect(try cli.run(["query", "Movie", "--zone", "Movies"]).status == 0)
    }

    /// A bundle holds the private database's records: the file is the user's
    /// alone whatever the umask, as the store directory is.
    @Test func aBundleIsCreatedReadableByItsOwnerAlone() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"])
        try cli.ok(["zone", "create", "Movies"])
        try cli.ok(["record", "save", "Movies/m1", "--type", "Movie", "title=Private"])
        let file = cli.path("out.ltb")
        try cli.ok(["bundle", "create", "-o", file])
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "the bundle's mode is \(String(mode, radix: 8))")
        // Created again over an old one, it stays private and still applies.
        try cli.ok(["bundle", "create", "-o", file])
        let again = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(again & 0o077 == 0)
        try cli.ok(["init"], store: "b")
        try cli.ok(["bundle", "apply", file], store: "b")
        #expect(try title("b", "m1") == "Private")
    }
}

/// Debian's `faketime`: a command run with its wall clock set to another time.
enum FakeTime {
    static let command = "/usr/bin/faketime"

    struct Missing: Error, CustomStringConvertible {
        var description: String { "faketime is missing (\(FakeTime.command)): scripts/install-deps.sh installs it" }
    }

    /// Under `scripts/tsan.sh` (which says so in `LATTICE_SANITIZER`), a sanitized
    /// `lattice` started through libfaketime never gets past its start.
    static var deadlocksHere: Bool { ProcessInfo.processInfo.environment["LATTICE_SANITIZER"] == "thread" }

    /// The wrapper that runs a command at `time` (its clock then runs on from there);
    /// a test that uses it carries the trait `.runsUnderFaketime`.
    static func wrapper(_ time: String) throws -> [String] {
        guard FileManager.default.isExecutableFile(atPath: command) else { throw Missing() }
        return [command, "-f", "@\(time)"]
    }
}

extension Trait where Self == ConditionTrait {
    /// For a test that starts `lattice` through `FakeTime.wrapper`: skipped
    /// where that deadlocks (under ThreadSanitizer), run everywhere else.
    static var runsUnderFaketime: Self {
        .disabled(if: FakeTime.deadlocksHere, "libfaketime and ThreadSanitizer's runtime deadlock as a process starts")
    }
}
