import ArgumentParser
import Foundation
import Lattice

/// Version vectors as JSON: `{"vectors":[{"database":"private","zoneName":"Movies","ownerName":"…","vector":{"<replica hex>":<hlc>}}]}`.
/// `lattice vector --json > mine.json` on one side, `lattice bundle create --since mine.json` on the other.
enum VectorFile {
    /// The file for these vectors: what `vector --json` prints and `--since` reads.
    static func file(_ vectors: [(ZoneKey, VersionVector)]) -> File {
        File(vectors: vectors.map { key, vector in
            File.Entry(database: key.scope.description, zoneName: key.zoneID.zoneName, ownerName: key.zoneID.ownerName,
                       vector: Dictionary(uniqueKeysWithValues: vector.entries.map { ($0.replica.description, $0.time.rawValue) }))
        })
    }

    struct File: Codable {
        struct Entry: Codable {
            var database: String
            var zoneName: String
            var ownerName: String?
            /// Exact unsigned integers: 1.5, true or 1e30 are refused, not rounded.
            var vector: [String: UInt64]
        }
        var vectors: [Entry]
    }

    static func read(_ path: String) throws -> [ZoneKey: VersionVector] {
        guard let data = FileManager.default.contents(atPath: path) else { throw CLIError(.notFound, code: "NOT_FOUND", "cannot read vector file \(path)") }
        let file: File
        do { file = try JSONDecoder().decode(File.self, from: data) } catch {
            throw CLIError.corrupt("\(path) is not a vector file (make one with `lattice vector --json`): \(describe(error))")
        }
        var vectors: [ZoneKey: VersionVector] = [:]
        for (index, entry) in file.vectors.enumerated() {
            guard let scope = DatabaseScope(name: entry.database) else {
                throw CLIError.corrupt("\(path): vectors[\(index)] names an unknown database \"\(entry.database)\"")
            }
            var vector = VersionVector()
            for (hex, time) in entry.vector {
                guard let replica = ReplicaID(hex: hex) else {
                    throw CLIError.corrupt("\(path): vectors[\(index)] has a malformed entry \"\(hex)\"")
                }
                vector.advance(replica, to: HLCTimestamp(rawValue: time))
            }
            vectors[ZoneKey(scope: scope, zoneID: Zone.ID(zoneName: entry.zoneName, ownerName: entry.ownerName ?? Zone.ID.defaultOwnerName))] = vector
        }
        return vectors
    }

    /// Where in the file decoding failed, in a line a person can act on.
    private static func describe(_ error: Error) -> String {
        guard let error = error as? Swift.DecodingError else { return "\(error)" }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? context.debugDescription : "at \(path): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

struct VectorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "vector", abstract: "Print this store's version vectors (what to ask a bundle for).",
        discussion: "Example: lattice vector --json > have.json")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let keys = try library { try container.allZoneKeys() }
        let vectors = try keys.map { key in (key, try library { try container.vector(for: key) }) }
        if options.json {
            Output.json(VectorFile.file(vectors))
        } else {
            for (key, vector) in vectors {
                Output.line("\(key): " + vector.entries.map { "\($0.replica.description.prefix(8))=\($0.time)" }.joined(separator: " "))
            }
        }
    }
}

struct BundleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bundle", abstract: "Change sets as files: sync by USB stick.",
        subcommands: [Create.self, Apply.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Write what the other side lacks to a file.",
            discussion: "Example: lattice bundle create -o for-phone.ltb --since phone-vector.json Movies")
        @OptionGroup var options: GlobalOptions
        @Option(name: .shortAndLong, help: "Bundle file to write.") var output: String
        @Option(help: "The other side's `lattice vector --json` file (default: everything).") var since: String?
        @Flag(name: .customLong("with-assets"), help: "Carry the content of the assets the zones' records reference (that is here).") var withAssets = false
        @Argument(help: "Zones to include (default: all).") var zones: [String] = []

        func run() throws {
            let container = try options.openContainer()
            let vectors = try since.map(VectorFile.read) ?? [:]
            var keys = try library { try container.allZoneKeys() }
            if !zones.isEmpty {
                keys = try zones.map { name in
                    guard let key = keys.first(where: { $0.zoneID.zoneName == name && $0.scope == options.scope }) else {
                        throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "zone \(name) does not exist in the \(options.scope) database")
                    }
                    return key
                }
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory), isDirectory.boolValue {
                throw CLIError.usage("-o \(output) is a directory; give the bundle a file name, such as \(output)/out.ltb")
            }
            let temporary = output + ".partial-\(getpid())"
            // A bundle holds the database's records: it is the user's alone (0600), as the store is,
            // from its creation on (O_EXCL: never a file someone else placed there).
            unlink(temporary)
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw CLIError.io("cannot write \(output): \(String(cString: strerror(errno)))") }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            var records = 0
            let included = Set(keys)
            let assets = withAssets
                ? try library { try container.assetEntries() }.filter { $0.isLocal && !$0.zones.isDisjoint(with: included) }.map(\.asset) : []
            let header = BundleFormat.header(zones: keys.count, assets: withAssets ? assets.count : nil)
            var bytes = header.count
            do {
                try handle.write(contentsOf: header)
                for asset in assets {
                    guard let url = container.fileURL(for: asset), let input = FileHandle(forReadingAtPath: url.path) else {
                        throw CLIError.io("asset \(asset.hexHash.prefix(16))… is no longer here")
                    }
                    defer { try? input.close() }
                    try handle.write(contentsOf: BundleFormat.assetHeader(asset))
                    var left = asset.size
                    while left > 0, let piece = try input.read(upToCount: Int(min(left, 1 << 20))), !piece.isEmpty {
                        try handle.write(contentsOf: piece)
                        left -= Int64(piece.count)
                    }
                    guard left == 0 else { throw CLIError.io("asset \(asset.hexHash.prefix(16))… is shorter here than its size") }
                    bytes += BundleFormat.assetHeaderLength + Int(asset.size)
                }
                for key in keys {
                    let written = try library { try container.writeChangeSet(for: key, since: vectors[key] ?? VersionVector()) { try handle.write(contentsOf: $0) } }
                    records += written.records
                    bytes += written.bytes
                }
                try handle.synchronize()
                try handle.close()
                // rename(2) replaces a file atomically and refuses to replace a directory.
                guard rename(temporary, output) == 0 else {
                    throw CLIError.io("cannot move the bundle into \(output): \(String(cString: strerror(errno)))")
                }
            } catch let error as CLIError {
                try? FileManager.default.removeItem(atPath: temporary)
                throw error
            } catch {
                try? FileManager.default.removeItem(atPath: temporary)
                throw CLIError.io("writing \(output): \(error.localizedDescription)")
            }
            if options.json { Output.json(BundleCreated(file: output, zones: keys.count, records: records, assets: assets.count, bytes: bytes)) } else {
                Output.line("wrote \(Output.count(records, "record")) of \(Output.count(keys.count, "zone"))\(withAssets ? " and \(Output.count(assets.count, "asset"))" : "") to \(output) (\(bytes) bytes)")
            }
        }
    }

    struct Apply: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "apply", abstract: "Apply a bundle, all or nothing.",
            discussion: "Example: lattice bundle apply from-laptop.ltb")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Bundle file.") var file: String

        func run() throws {
            let container = try options.openContainer()
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                  let handle = FileHandle(forReadingAtPath: file) else {
                throw CLIError(.notFound, code: "NOT_FOUND", "cannot read bundle \(file): no such file")
            }
            var source = FileByteSource(handle)
            let opening: BundleFormat.Opening
            do { opening = try BundleFormat.readHeader(from: &source) } catch { throw CLIError.io("reading \(file): \(error.localizedDescription)") }
            let expected: Int?
            var assetCount = 0
            switch opening {
            case .notABundle: throw CLIError.corrupt("\(file) is not a Lattice bundle (make one with `lattice bundle create`); nothing was applied")
            case .uncounted: expected = nil
            case .counted(let changeSets, let assets):
                expected = changeSets
                assetCount = assets
            }
            // Assets first, each checked against its hash into a file of its own; taken only once the records apply.
            let staging = container.directory.appendingPathComponent("assets/partial/bundle-\(getpid())")
            defer { try? FileManager.default.removeItem(at: staging) }
            var carried: [(asset: AssetReference, file: URL)] = []
            for index in 0..<assetCount {
                do {
                    carried.append(try BundleFormat.readAsset(from: handle, into: staging.appendingPathComponent("\(index)"), container: container))
                } catch let error as CLIError {
                    throw error
                } catch {
                    throw CLIError.io("reading \(file): \(error.localizedDescription)")
                }
            }
            let summary: ApplySummary
            do {
                summary = try container.apply(changeSetsFrom: source, expectedChangeSets: expected)
            } catch {
                // Typed throws: `error` is a LatticeError here.
                guard error.code == .invalidArguments else { throw CLIError(error) }
                throw CLIError.corrupt("\(file) is not a usable bundle: \(error.message); nothing from it was applied")
            }
            // Content no record here references is not taken.
            let referenced = Set(try library { try container.assetEntries() }.map(\.asset))
            for (asset, url) in carried where referenced.contains(asset) && container.fileURL(for: asset) == nil {
                _ = try library { try container.importAsset(fileAt: url) }
            }
            if options.json {
                Output.json(BundleApplied(file: file, recordsReceived: summary.recordsReceived, recordsChanged: summary.recordsChanged,
                                          conflicts: summary.conflicts, recordsDeferred: summary.recordsDeferred))
            } else {
                Output.line("applied \(file): \(Output.count(summary.recordsChanged, "record")) changed of \(summary.recordsReceived) received, \(Output.count(summary.conflicts, "conflict"))"
                    + (summary.recordsDeferred > 0 ? ", \(summary.recordsDeferred) deferred (their clock is too far ahead)" : ""))
            }
        }
    }
}

/// A bundle file: `"LTBN"`, a version byte and (from version 2) the number
/// of change sets as 4 bytes little-endian, then one change set per zone. The
/// header tells a bundle (even one with no zones) from an empty or foreign
/// file, and the count a bundle cut between two change sets from a whole one.
enum BundleFormat {
    static let magic: [UInt8] = Array("LTBN".utf8)

    /// Version 2 without assets; version 3 (with `assets`) adds their count,
    /// and the assets (`assetHeader` and content each) before the change sets.
    static func header(zones: Int, assets: Int? = nil) -> [UInt8] {
        magic + [assets == nil ? 2 : 3] + littleEndian(UInt64(zones), 4) + (assets.map { littleEndian(UInt64($0), 4) } ?? [])
    }

    static func littleEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * $0)) }
    }

    static let assetHeaderLength = 40

    /// An asset's hash and size (8 bytes little-endian), before its content.
    static func assetHeader(_ asset: AssetReference) -> [UInt8] { asset.hash + littleEndian(UInt64(asset.size), 8) }

    /// Reads one asset of a version-3 bundle into `file`; its content must hash to what it claims.
    static func readAsset(from handle: FileHandle, into file: URL, container: Container) throws -> (asset: AssetReference, file: URL) {
        let header = [UInt8](try handle.read(upToCount: assetHeaderLength) ?? Data())
        guard header.count == assetHeaderLength else { throw CLIError.corrupt("the bundle is cut short in its assets; nothing was applied") }
        let size = header[32...].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
        guard size < 1 << 40 else { throw CLIError.corrupt("the bundle holds an asset of \(size) bytes; nothing was applied") }
        let claimed = AssetReference(hash: Array(header[..<32]), size: Int64(size))
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let output = FileHandle(forWritingAtPath: file.path) else {
            throw CLIError.io("cannot write \(file.path)")
        }
        defer { try? output.close() }
        var left = Int64(size)
        while left > 0, let piece = try handle.read(upToCount: Int(min(left, 1 << 20))), !piece.isEmpty {
            try output.write(contentsOf: piece)
            left -= Int64(piece.count)
        }
        guard left == 0 else { throw CLIError.corrupt("the bundle is cut short in asset \(claimed.hexHash.prefix(16))…; nothing was applied") }
        guard try library({ try container.assetReference(ofFileAt: file) }) == claimed else {
            throw CLIError.corrupt("asset \(claimed.hexHash.prefix(16))… of the bundle does not match its hash; nothing was applied")
        }
        return (claimed, file)
    }

    enum Opening {
        case notABundle
        /// Version 1 does not say how many change sets follow.
        case uncounted
        case counted(changeSets: Int, assets: Int)
    }

    static func readHeader(from source: inout FileByteSource) throws -> Opening {
        let opening = try source.read(upTo: 5)
        guard opening.count == 5, Array(opening.prefix(4)) == magic else { return .notABundle }
        switch opening[4] {
        case 1: return .uncounted
        case 2, 3:
            func count() throws -> Int? {
                let bytes = try source.read(upTo: 4)
                guard bytes.count == 4 else { return nil }
                return Int(bytes.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(8 * $1.offset) })
            }
            guard let changeSets = try count() else { return .notABundle }
            guard opening[4] == 3 else { return .counted(changeSets: changeSets, assets: 0) }
            guard let assets = try count() else { return .notABundle }
            return .counted(changeSets: changeSets, assets: assets)
        default: return .notABundle
        }
    }
}

/// A change-set byte source over a file.
struct FileByteSource: ByteSource {
    let handle: FileHandle

    init(_ handle: FileHandle) { self.handle = handle }

    mutating func read(upTo count: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            guard let chunk = try handle.read(upToCount: count - bytes.count), !chunk.isEmpty else { break }
            bytes.append(contentsOf: chunk)
        }
        return bytes
    }
}

/// What `bundle create --json` prints.
struct BundleCreated: Encodable {
    var file: String
    var zones: Int
    var records: Int
    var assets: Int
    var bytes: Int
}

/// What `bundle apply --json` prints.
struct BundleApplied: Encodable {
    var file: String
    var recordsReceived: Int
    var recordsChanged: Int
    var conflicts: Int
    var recordsDeferred: Int
}
