import Foundation
import LatticeTestSupport
import Testing

/// Asset content between `lattice serve` processes on loopback, through the
/// CLI alone: a large asset fetched byte-identical, a fetch killed with
/// SIGKILL half-way that resumes from what it had, and what `record get`,
/// `asset list` and `status` say meanwhile.
@Suite(.serialized) struct AssetCLITests {
    let cli = CLI()

    /// `count` bytes nobody else makes, in a file of the test's directory.
    func randomFile(_ name: String, bytes count: Int) throws -> URL {
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            let words = buffer.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = generator.next() }
        }
        let url = cli.root.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    func poster(_ store: String) throws -> [String: Any]? {
        let result = try cli.run(["record", "get", "Movies/film", "--json"], store: store)
        guard result.status == 0 else { return nil }
        return ((result.json["records"] as? [[String: Any]])?.first?["fields"] as? [String: Any])?["poster"] as? [String: Any]
    }

    func posterValue(_ store: String) throws -> [String: Any]? { try poster(store)?["value"] as? [String: Any] }

    /// Large enough that a kill on the first progress event lands mid-way.
    static let filmSize = 100 * 1024 * 1024 + 4321

    @Test func aLargeAssetIsFetchedWholeAndAKilledFetchResumes() throws {
        defer { cli.cleanup() }
        var ids: [String: String] = [:]
        for store in ["a", "b", "c"] {
            try cli.ok(["init"], store: store)
            ids[store] = try cli.ok(["id", "--json"], store: store).json["deviceID"] as? String
        }
        for (one, other) in [("a", "b"), ("a", "c")] {
            try cli.ok(["trust", ids[other]!], store: one)
            try cli.ok(["trust", ids[one]!], store: other)
        }
        let source = try randomFile("film.bin", bytes: Self.filmSize)
        try cli.ok(["zone", "create", "Movies"], store: "a")
        try cli.ok(["record", "save", "Movies/film", "--type", "Movie", "poster:asset=\(source.path)"], store: "a")
        let hash = try #require(try posterValue("a")?["fileChecksum"] as? String)
        #expect(try posterValue("a")?["local"] as? Bool == true)

        let a = try NodeProcess(cli: cli, store: "a")
        defer { _ = a.stop() }
        let b = try NodeProcess(cli: cli, store: "b", peers: [a.port])
        defer { _ = b.stop() }

        // The record comes at once; its content, over 256 KiB, when asked for.
        #expect(try eventuallyBlocking(30) { try poster("b") != nil })
        #expect(try posterValue("b")?["local"] as? Bool == false)
        #expect(try posterValue("b")?["downloadURL"] == nil)
        #expect(try cli.ok(["record", "get", "Movies/film"], store: "b").stdout.contains("content not here yet"))
        let missing = try cli.ok(["asset", "list", "--missing", "--json"], store: "b").json["assets"] as? [[String: Any]]
        #expect(missing?.map { $0["fileChecksum"] as? String } == [hash])
        #expect(missing?.first?["records"] as? [String] == ["Movies/film"])

        let fetched = try cli.ok(["asset", "fetch", "Movies/film", "poster", "--timeout", "120"], store: "b")
        #expect(fetched.stdout.contains("poster: /"), "\(fetched.stdout)")
        let downloadURL = try #require(try posterValue("b")?["downloadURL"] as? String)
        let url = try #require(URL(string: downloadURL))
        #expect(try Data(contentsOf: url) == Data(contentsOf: source))
        #expect(try cli.ok(["asset", "list", "--missing"], store: "b").stdout.contains("no asset content is missing"))

        // C's node is killed with SIGKILL half-way through the transfer; a new one resumes it.
        var c = try NodeProcess(cli: cli, store: "c", peers: [a.port])
        #expect(try eventuallyBlocking(30) { try poster("c") != nil })
        let asked = try cli.run(["asset", "fetch", "Movies/film", "--timeout", "0.2"], store: "c")
        #expect(asked.status == 69 || asked.status == 0, "\(asked.stderr)")
        var heldAtKill: Int64 = 0
        let sawProgress = eventuallyBlocking(60) {
            let progress = c.events.filter { $0["event"] as? String == "assetProgress" }.compactMap { ($0["bytesDone"] as? NSNumber)?.int64Value }
            heldAtKill = progress.max() ?? 0
            return heldAtKill > 0
        }
        #expect(sawProgress)
        c.kill9()
        #expect(heldAtKill < Self.filmSize, "the transfer ended before the kill: the test did not test a resume")
        let partial = URL(fileURLWithPath: cli.path("c")).appendingPathComponent("assets/partial/\(hash)")
        let sizeAtKill = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int64) ?? 0
        #expect(c.count("assetFetched") == 0, "the transfer ended before the kill: the test did not test a resume")
        #expect(sizeAtKill > 0)

        c = try NodeProcess(cli: cli, store: "c", peers: [a.port])
        defer { _ = c.stop() }
        try cli.ok(["asset", "fetch", "Movies/film", "--timeout", "120"], store: "c")
        let copyURL = try #require(try posterValue("c")?["downloadURL"] as? String)
        let copy = try #require(URL(string: copyURL))
        #expect(try Data(contentsOf: copy) == Data(contentsOf: source))
        let done = try #require(c.events.first { $0["event"] as? String == "assetFetched" })
        let fetchedBytes = try #require((done["fetchedBytes"] as? NSNumber)?.int64Value)
        let resumedBytes = try #require((done["resumedBytes"] as? NSNumber)?.int64Value)
        print("asset resume: \(heldAtKill) bytes reported held at the SIGKILL, partial file \(sizeAtKill) bytes; after: \(resumedBytes) found whole, \(fetchedBytes) fetched")
        // What the killed node had reported held was found whole on disk and not fetched again.
        #expect(resumedBytes >= heldAtKill, "resumed \(resumedBytes), held at the kill \(heldAtKill)")
        #expect(fetchedBytes + resumedBytes == Self.filmSize)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
    }

    @Test func badArgumentsAndNoNodeAreClearErrors() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        let source = try randomFile("small.bin", bytes: 1000)
        try cli.ok(["record", "save", "Movies/film", "--type", "Movie", "title=Up", "poster:asset=\(source.path)"], store: "a")
        #expect(try cli.run(["asset", "fetch", "Movies/film", "title"], store: "a").status == 66)
        #expect(try cli.run(["asset", "fetch", "Movies/nothing"], store: "a").status == 66)
        #expect(try cli.run(["asset", "fetch", "Movies/film", "--timeout", "0"], store: "a").status == 64)
        // Content that is here needs no node.
        #expect(try cli.ok(["asset", "fetch", "Movies/film"], store: "a").stdout.contains("poster: /"))
        #expect(try cli.run(["zone", "assets", "Nowhere", "eager"], store: "a").status == 66)
        #expect(try cli.run(["zone", "assets", "Movies", "sometimes"], store: "a").status == 64)
        #expect(try cli.ok(["zone", "assets", "Movies", "eager"], store: "a").stdout.contains("eager"))
        #expect(try cli.ok(["zone", "assets", "Movies"], store: "a").stdout.contains("eager"))
        // Not here, and no node to fetch it: said so, with what to do.
        try cli.ok(["init"], store: "b")
        let bundle = cli.path("films.bundle")
        try cli.ok(["bundle", "create", "-o", bundle], store: "a")
        try cli.ok(["bundle", "apply", bundle], store: "b")
        let refused = try cli.run(["asset", "fetch", "Movies/film"], store: "b")
        #expect(refused.status == 69 && refused.stderr.contains("lattice serve"), "\(refused.stderr)")
    }

    /// The quota on other accounts' assets: set with `serve`, kept in the
    /// store, shown by `status` with the content held per source.
    @Test func theQuotaOnOtherAccountsAssetsIsSetWithServeAndShownInStatus() throws {
        defer { cli.cleanup() }
        try cli.ok(["init"], store: "a")
        func quota() throws -> (Int?, Int?) {
            let assets = try cli.ok(["status", "--json"], store: "a").json["assets"] as? [String: Any]
            return (assets?["quotaPerSource"] as? Int, assets?["quotaTotal"] as? Int)
        }
        #expect(try quota() == (1 << 30, 4 << 30))
        for bad in [["--asset-quota", "lots"], ["--asset-quota-per-writer=-1M"]] {
            let refused = try cli.run(["serve", "--port", "0", "--no-mdns"] + bad, store: "a")
            #expect(refused.status == 64 && refused.stderr.contains("takes a size"), "\(refused.stderr)")
        }
        #expect(try quota() == (1 << 30, 4 << 30), "a refused flag changes nothing")
        let node = try NodeProcess(cli: cli, store: "a", extra: ["--asset-quota-per-writer", "2M", "--asset-quota", "1.5G"])
        _ = node.stop()
        #expect(try quota() == (2 << 20, 3 << 29))
        try cli.ok(["zone", "create", "Movies"], store: "a")
        let source = try randomFile("small.bin", bytes: 3000)
        try cli.ok(["record", "save", "Movies/film", "--type", "Movie", "poster:asset=\(source.path)"], store: "a")
        let status = try cli.ok(["status"], store: "a").stdout
        #expect(status.contains("assets     this account: 1 asset held (2.9 KiB)"), "\(status)")
        let sources = (try cli.ok(["status", "--json"], store: "a").json["assets"] as? [String: Any])?["sources"] as? [[String: Any]]
        #expect(sources?.first?["source"] as? String == "this account" && sources?.first?["heldBytes"] as? Int == 3000)
    }

    @Test func bundlesCarryAssetsWhenAskedAndABadOneChangesNothing() throws {
        defer { cli.cleanup() }
        for store in ["a", "b", "c", "d"] { try cli.ok(["init"], store: store) }
        try cli.ok(["zone", "create", "Movies"], store: "a")
        let source = try randomFile("poster.jpg", bytes: 600_000)
        try cli.ok(["record", "save", "Movies/film", "--type", "Movie", "poster:asset=\(source.path)"], store: "a")
        let withAssets = cli.path("with.ltb"), without = cli.path("without.ltb")
        let created = try cli.ok(["bundle", "create", "-o", withAssets, "--with-assets", "--json"], store: "a").json
        #expect(created["assets"] as? Int == 1)
        try cli.ok(["bundle", "create", "-o", without], store: "a")

        try cli.ok(["bundle", "apply", withAssets], store: "b")
        let url = try #require(try posterValue("b")?["downloadURL"] as? String)
        #expect(try Data(contentsOf: try #require(URL(string: url))) == Data(contentsOf: source))
        try cli.ok(["bundle", "apply", without], store: "c")
        #expect(try posterValue("c")?["local"] as? Bool == false)

        // One byte of the asset's content changed in the file: refused whole, with no record applied.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: withAssets))
        bytes[13 + 40 + 1000] ^= 0xFF // past the header (9 + 4 bytes) and the asset's hash and size
        let bad = cli.path("bad.ltb")
        try bytes.write(to: URL(fileURLWithPath: bad))
        let refused = try cli.run(["bundle", "apply", bad], store: "d")
        #expect(refused.status == 65 && refused.stderr.contains("does not match its hash"), "\(refused.stderr)")
        #expect(try poster("d") == nil)
        // Cut short in the asset: refused too.
        try bytes.prefix(13 + 40 + 500).write(to: URL(fileURLWithPath: bad))
        #expect(try cli.run(["bundle", "apply", bad], store: "d").status == 65)
        #expect(try poster("d") == nil)
    }

    @Test func syncOnceBringsSmallAssetsWithTheirRecords() throws {
        defer { cli.cleanup() }
        var ids: [String: String] = [:]
        for store in ["a", "b"] {
            try cli.ok(["init"], store: store)
            ids[store] = try cli.ok(["id", "--json"], store: store).json["deviceID"] as? String
        }
        try cli.ok(["trust", ids["b"]!], store: "a")
        try cli.ok(["trust", ids["a"]!], store: "b")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        let source = try randomFile("icon.png", bytes: 200_000)
        try cli.ok(["record", "save", "Movies/film", "--type", "Movie", "poster:asset=\(source.path)"], store: "a")
        let a = try NodeProcess(cli: cli, store: "a")
        defer { _ = a.stop() }
        try cli.ok(["sync", "--peer", "127.0.0.1:\(a.port)", "--once", "--timeout", "60"], store: "b")
        #expect(try posterValue("b")?["local"] as? Bool == true, "a 200 KB asset did not come with its record")
    }
}
