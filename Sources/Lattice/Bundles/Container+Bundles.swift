import Foundation
@_spi(Tools) import LatticeCore

/// What writing a bundle wrote.
public struct BundleWritten: Sendable, Equatable {
    public var zones: Int
    public var records: Int
    public var assets: Int
    public var bytes: Int
}

extension Container {
    /// Writes a bundle: what a replica at `vectors` lacks of `zones` (a zone
    /// missing from `vectors`: all of it), and with `withAssets` the content of
    /// the assets those zones' records reference that this device holds.
    /// Another device applies it with `applyBundle(at:)`: syncing by a file.
    ///
    /// The file is the user's alone (0600), written under a temporary name
    /// and renamed into place once synced, so a reader never sees half a
    /// bundle. Errors: `internalError` if the file cannot be written (nothing
    /// is left at `path`), and the store's own if reading it fails.
    @discardableResult
    public func writeBundle(to path: String, zones: [ZoneKey], since vectors: [ZoneKey: VersionVector] = [:], withAssets: Bool = false) throws(LatticeError) -> BundleWritten {
        let included = Set(zones)
        let assets = withAssets ? try assetEntries().filter { $0.isLocal && !$0.zones.isDisjoint(with: included) }.map(\.asset) : []
        // A name of this call's own: two writes of one process to one path never share a temporary file.
        let temporary = path + ".partial-\(UUID().uuidString)"
        // A bundle holds the database's records: it is the user's alone, as the store is,
        // from its creation on (O_EXCL: never a file someone else placed there).
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LatticeError(.internalError, "cannot write \(path): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        let header = BundleFormat.header(zones: zones.count, assets: withAssets ? assets.count : nil)
        var written = BundleWritten(zones: zones.count, records: 0, assets: assets.count, bytes: header.count)
        do {
            try handle.write(contentsOf: header)
            for asset in assets {
                guard let url = fileURL(for: asset), let input = FileHandle(forReadingAtPath: url.path) else {
                    throw LatticeError(.internalError, "asset \(asset.hexHash.prefix(16))… is no longer here")
                }
                defer { try? input.close() }
                try handle.write(contentsOf: BundleFormat.assetHeader(asset))
                var left = asset.size
                while left > 0, let piece = try input.read(upToCount: Int(min(left, 1 << 20))), !piece.isEmpty {
                    try handle.write(contentsOf: piece)
                    left -= Int64(piece.count)
                }
                guard left == 0 else { throw LatticeError(.internalError, "asset \(asset.hexHash.prefix(16))… is shorter here than its size") }
                written.bytes += BundleFormat.assetHeaderLength + Int(asset.size)
            }
            for key in zones {
                let zone = try writeChangeSet(for: key, since: vectors[key] ?? VersionVector()) { try handle.write(contentsOf: $0) }
                written.records += zone.records
                written.bytes += zone.bytes
            }
            try handle.synchronize()
            try handle.close()
            // rename(2) replaces a file atomically and refuses to replace a directory.
            guard rename(temporary, path) == 0 else {
                throw LatticeError(.internalError, "cannot move the bundle into \(path): \(String(cString: strerror(errno)))")
            }
        } catch let error as LatticeError {
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw LatticeError(.internalError, "writing \(path): \(error.localizedDescription)")
        }
        return written
    }

    /// Applies a bundle written by `writeBundle`, all or nothing: its change
    /// sets in one transaction, and the assets it carries that a record here
    /// references once they did (each checked against its hash first).
    /// Errors: `unknownItem` if there is no such file, `invalidArguments` for
    /// a file that is not a bundle or is damaged or cut short (nothing applied).
    @discardableResult
    public func applyBundle(at path: String) throws(LatticeError) -> ApplySummary {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
              let handle = FileHandle(forReadingAtPath: path) else {
            throw LatticeError(.unknownItem, "cannot read bundle \(path): no such file")
        }
        defer { try? handle.close() }
        var source = FileByteSource(handle)
        let opening: BundleFormat.Opening
        do { opening = try BundleFormat.readHeader(from: &source) } catch { throw LatticeError(.internalError, "reading \(path): \(error.localizedDescription)") }
        let expected: Int?
        var assetCount = 0
        switch opening {
        case .notABundle: throw LatticeError(.invalidArguments, "\(path) is not a Lattice bundle (make one with `lattice bundle create`); nothing was applied")
        case .uncounted: expected = nil
        case .counted(let changeSets, let assets):
            expected = changeSets
            assetCount = assets
        }
        // Assets first, each checked against its hash into a file of its own; taken only once the records apply.
        // Of this call alone: two applies at once never share (or remove) each other's staged assets.
        let staging = directory.appendingPathComponent("assets/partial/bundle-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: staging) }
        var carried: [(asset: AssetReference, file: URL)] = []
        for index in 0..<assetCount {
            carried.append(try readBundleAsset(from: handle, into: staging.appendingPathComponent("\(index)"), bundle: path))
        }
        let summary: ApplySummary
        do {
            summary = try apply(changeSetsFrom: source, expectedChangeSets: expected)
        } catch {
            guard error.code == .invalidArguments else { throw error }
            throw LatticeError(.invalidArguments, "\(path) is not a usable bundle: \(error.message); nothing from it was applied")
        }
        // Content no record here references is not taken.
        let referenced = Set(try assetEntries().map(\.asset))
        for (asset, url) in carried where referenced.contains(asset) && fileURL(for: asset) == nil {
            _ = try importAsset(fileAt: url)
        }
        return summary
    }

    /// Reads one asset of a version-3 bundle into `file`; its content must hash to what it claims.
    private func readBundleAsset(from handle: FileHandle, into file: URL, bundle path: String) throws(LatticeError) -> (asset: AssetReference, file: URL) {
        let claimed: AssetReference
        do {
            let header = [UInt8](try handle.read(upToCount: BundleFormat.assetHeaderLength) ?? Data())
            guard header.count == BundleFormat.assetHeaderLength else { throw LatticeError(.invalidArguments, "the bundle is cut short in its assets; nothing was applied") }
            let size = header[32...].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << UInt64(8 * $1.offset) }
            guard size < 1 << 40 else { throw LatticeError(.invalidArguments, "the bundle holds an asset of \(size) bytes; nothing was applied") }
            claimed = AssetReference(hash: Array(header[..<32]), size: Int64(size))
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: file.path, contents: nil), let output = FileHandle(forWritingAtPath: file.path) else {
                throw LatticeError(.internalError, "cannot write \(file.path)")
            }
            defer { try? output.close() }
            var left = Int64(size)
            while left > 0, let piece = try handle.read(upToCount: Int(min(left, 1 << 20))), !piece.isEmpty {
                try output.write(contentsOf: piece)
                left -= Int64(piece.count)
            }
            guard left == 0 else { throw LatticeError(.invalidArguments, "the bundle is cut short in asset \(claimed.hexHash.prefix(16))…; nothing was applied") }
        } catch let error as LatticeError {
            throw error
        } catch {
            throw LatticeError(.internalError, "reading \(path): \(error.localizedDescription)")
        }
        guard try assetReference(ofFileAt: file) == claimed else {
            throw LatticeError(.invalidArguments, "asset \(claimed.hexHash.prefix(16))… of the bundle does not match its hash; nothing was applied")
        }
        return (claimed, file)
    }
}
