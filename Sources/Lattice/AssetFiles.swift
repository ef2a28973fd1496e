import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// Asset content lives in `assets/` beside the database, one file per hash,
/// written to a temporary name, synced, then renamed: a crash leaves either
/// the whole file or none. Beside it, `assets/outlines/HASH` holds its chunk
/// hashes (`AssetOutline`), which peers fetching it check first; content
/// arriving from peers grows in `assets/partial/HASH` until every chunk
/// checks (`PartialAsset`).
enum AssetFiles {
    static func directory(in store: URL) -> URL { store.appendingPathComponent("assets") }

    static func path(for asset: AssetReference, in store: URL) -> URL {
        directory(in: store).appendingPathComponent(asset.hexHash)
    }

    static func outlinePath(for asset: AssetReference, in store: URL) -> URL {
        directory(in: store).appendingPathComponent("outlines").appendingPathComponent(asset.hexHash)
    }

    static func partialPath(for asset: AssetReference, in store: URL) -> URL {
        directory(in: store).appendingPathComponent("partial").appendingPathComponent(asset.hexHash)
    }

    /// Every 16 KiB leaf's hash, in order, beside the outline: a node serving
    /// the asset sends them with each chunk without hashing its bytes again.
    static func leavesPath(for asset: AssetReference, in store: URL) -> URL {
        directory(in: store).appendingPathComponent("outlines").appendingPathComponent(asset.hexHash + ".leaves")
    }

    static func partialLeavesPath(for asset: AssetReference, in store: URL) -> URL {
        directory(in: store).appendingPathComponent("partial").appendingPathComponent(asset.hexHash + ".leaves")
    }

    /// The leaf hashes of chunk `index` as kept beside the content, if they are
    /// (they are checked against the outline by the caller).
    static func keptLeaves(_ index: Int, of asset: AssetReference, in store: URL) -> [[UInt8]]? {
        let length = AssetOutline.chunkLength(index, size: asset.size)
        let count = max(1, (length + AssetOutline.leafSize - 1) / AssetOutline.leafSize)
        let fd = open(leavesPath(for: asset, in: store).path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: count * AssetOutline.hashLength)
        let offset = off_t(index) * off_t(AssetOutline.leavesPerChunk * AssetOutline.hashLength)
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
        guard read == bytes.count else { return nil }
        return stride(from: 0, to: bytes.count, by: AssetOutline.hashLength).map { Array(bytes[$0..<$0 + AssetOutline.hashLength]) }
    }

    static func importFile(at url: URL, into store: URL) throws -> AssetReference {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
              let input = FileHandle(forReadingAtPath: url.path) else {
            throw LatticeError(.assetFileNotFound, "asset file \(url.path) does not exist or cannot be read")
        }
        defer { try? input.close() }
        let directory = directory(in: store)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".incoming-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil), let output = FileHandle(forWritingAtPath: temporary.path) else {
            throw LatticeError(.internalError, "cannot write into \(directory.path)")
        }
        var leaves: [UInt8] = []
        let hasher = AssetHasher { chunk in leaves += chunk.flatMap { $0 } }
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try chunk.withUnsafeBytes { try hasher.update($0) }
                try output.write(contentsOf: chunk)
            }
            try output.synchronize()
            try output.close()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw LatticeError(.internalError, "copying asset \(url.path): \(error)")
        }
        let reference = AssetReference(hash: try hasher.finish(), size: hasher.size)
        try writeOutline(hasher.chunks, for: reference, in: store)
        try Data(leaves).write(to: leavesPath(for: reference, in: store), options: .atomic)
        let destination = path(for: reference, in: store)
        if FileManager.default.fileExists(atPath: destination.path) {
            try? FileManager.default.removeItem(at: temporary)
        } else {
            try FileManager.default.moveItem(at: temporary, to: destination)
        }
        return reference
    }

    /// Hashes what `input` holds from where it is to its end, as an asset.
    static func hash(_ input: FileHandle, into hasher: AssetHasher) throws -> AssetReference {
        while let piece = try input.read(upToCount: 1 << 20), !piece.isEmpty {
            try piece.withUnsafeBytes { try hasher.update($0) }
        }
        return AssetReference(hash: try hasher.finish(), size: hasher.size)
    }

    /// Writes an outline (already checked against the asset's hash), atomically.
    static func writeOutline(_ chunks: [[UInt8]], for asset: AssetReference, in store: URL) throws {
        let url = outlinePath(for: asset, in: store)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(chunks.flatMap { $0 }).write(to: url, options: .atomic)
    }

    /// The asset's outline: as written beside it, or computed from its
    /// content (a store of an earlier build wrote none). Nil when the content
    /// is not here, or does not hash to the asset's hash (content an earlier
    /// build hashed otherwise: it cannot be served).
    static func outline(for asset: AssetReference, in store: URL) throws -> [[UInt8]]? {
        if let data = try? Data(contentsOf: outlinePath(for: asset, in: store)), data.count % AssetOutline.hashLength == 0 {
            let bytes = [UInt8](data)
            let chunks = stride(from: 0, to: bytes.count, by: AssetOutline.hashLength).map { Array(bytes[$0..<$0 + AssetOutline.hashLength]) }
            if try AssetOutline.outlineMatches(chunks, hash: asset.hash, size: asset.size) { return chunks }
        }
        guard let input = FileHandle(forReadingAtPath: path(for: asset, in: store).path) else { return nil }
        defer { try? input.close() }
        var leaves: [UInt8] = []
        let hasher = AssetHasher { chunk in leaves += chunk.flatMap { $0 } }
        guard try hash(input, into: hasher) == asset else { return nil }
        try writeOutline(hasher.chunks, for: asset, in: store)
        try Data(leaves).write(to: leavesPath(for: asset, in: store), options: .atomic)
        return hasher.chunks
    }

    /// Chunk `index` of the asset's content, or nil when the content is not
    /// here (or shorter than its size says).
    static func readChunk(_ index: Int, of asset: AssetReference, in store: URL) throws -> [UInt8]? {
        let length = AssetOutline.chunkLength(index, size: asset.size)
        guard let input = FileHandle(forReadingAtPath: path(for: asset, in: store).path) else { return nil }
        defer { try? input.close() }
        try input.seek(toOffset: UInt64(index) * UInt64(AssetOutline.chunkSize))
        let data = try input.read(upToCount: length) ?? Data()
        guard data.count == length else { return nil }
        return [UInt8](data)
    }
}
