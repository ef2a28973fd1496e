import ArgumentParser
@testable import LatticeCLI
import LatticeTestSupport
import Testing

/// The quick path for `record get` and `record save` reads exactly what the
/// argument parser reads, and leaves everything else to it.
@Suite struct QuickCommandTests {
    /// What the parser makes of `arguments`, in the quick path's terms (nil: another command, or an error).
    func parsed(_ arguments: [String]) -> QuickCommand? {
        guard let command = try? LatticeCommand.parseAsRoot(arguments) else { return nil }
        if let save = command as? RecordCommand.Save {
            return QuickCommand(options: save.options.values, action: .save(path: save.path, recordType: save.recordType, fields: save.fields, ifTag: save.ifTag, allKeys: save.allKeys))
        }
        if let get = command as? RecordCommand.Get, !get.fetchAssets, get.peer.isEmpty, get.timeout == 600 {
            return QuickCommand(options: get.options.values, action: .get(path: get.path))
        }
        return nil
    }

    @Test func thePlainFormsTakeTheQuickPathAndReadAsTheParserDoes() throws {
        let plain: [[String]] = [
            ["record", "get", "Movies/up"],
            ["record", "get", "Movies/up", "--json", "--store", "/tmp/s"],
            ["record", "get", "--store=/tmp/s", "Movies/up", "--database", "shared", "--container", "iCloud.x", "--log-level", "DEBUG"],
            ["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=5", "--store", "/tmp/s"],
            ["record", "save", "--type=Movie", "Movies/up", "--if-tag", "3f9k2", "title=a=b", "note="],
            ["record", "save", "Movies/up", "--type", "Movie", "--all-keys", "--json"],
            ["record", "save", "Movies/up", "--type", "Movie", "--store", ""],
        ]
        for arguments in plain {
            let quick = try #require(QuickCommand(arguments), "\(arguments) should take the quick path")
            #expect(quick == parsed(arguments), "\(arguments)")
        }
    }

    /// Random argument lists from tokens the two readers could disagree on:
    /// whenever the quick path takes one, the parser reads the same values from it.
    @Test(arguments: [UInt64(1), 2, 3])
    func whateverTheQuickPathTakesTheParserReadsTheSame(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let tokens = [
            "Movies/up", "Movies/up", "title=Up", "rating:int=-5", "-5", "--type", "--type", "Movie", "--type=Movie", "--json", "--all-keys",
            "--if-tag", "", "3f9k2", "--store", "/tmp/s", "--store=", "--database", "shared", "bogus", "--container", "--log-level", "DEBUG", "loud",
            "--", "-h", "--help", "--version", "--fetch-assets", "--peer", "--timeout", "--json=1", "--all-keys=yes", "-", "=x",
        ]
        var quickOnes = 0
        for _ in 0..<3_000 {
            let subcommand = Bool.random(using: &random) ? "get" : "save"
            let arguments = ["record", subcommand] + (0..<Int.random(in: 1...7, using: &random)).map { _ in tokens.randomElement(using: &random)! }
            guard let quick = QuickCommand(arguments) else { continue }
            quickOnes += 1
            let why = Result { try LatticeCommand.parseAsRoot(arguments) }
            #expect(quick == parsed(arguments), "\(arguments): \(why)")
        }
        #expect(quickOnes > 50, "only \(quickOnes) random argument lists took the quick path")
    }
}
