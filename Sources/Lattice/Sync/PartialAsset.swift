import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// An asset's content arriving from peers, in `assets/partial/HASH`: each
/// chunk is written where it belongs once it checked against the outline,
/// and the file is moved into place (`assets/HASH`) only when every chunk
/// has. Nothing unchecked is ever written, and a half file is never taken
/// for a whole one.
///
/// A transfer cut by a disconnect, a crash or SIGKILL resumes from what the
/// partial file holds: on opening, each chunk in it is read back and checked
/// against the outline, and those that check are kept. So only chunks that
/// were in flight (or half written) are fetched again.
final class PartialAsset {
    let asset: AssetReference
    let outline: [[UInt8]]
    private(set) var done: [Bool]
    private(set) var bytesDone: Int64 = 0
    /// Bytes found whole on opening (a resumed transfer).
    private(set) var resumedBytes: Int64 = 0
    private let store: URL
    private let descriptor: Int32
    /// The leaf hashes of the chunks written, at their places (`AssetFiles.leavesPath` once whole).
    private let leavesDescriptor: Int32

    /// Opens (or makes) the partial file of `asset`, whose outline checked.
    init(asset: AssetReference, outline: [[UInt8]], store: URL) throws {
        self.asset = asset
        self.outline = outline
        self.store = store
        done = Array(repeating: false, count: outline.count)
        let path = AssetFiles.partialPath(for: asset, in: store)
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        descriptor = open(path.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw LatticeError(.internalError, "cannot open \(path.path): \(String(cString: strerror(errno)))") }
        let leavesPath = AssetFiles.partialLeavesPath(for: asset, in: store).path
        leavesDescriptor = open(leavesPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard leavesDescriptor >= 0 else {
            close(descriptor)
            throw LatticeError(.internalError, "cannot open \(leavesPath): \(String(cString: strerror(errno)))")
        }
        try resume()
    }

    deinit {
        close(descriptor)
        close(leavesDescriptor)
    }

    var isComplete: Bool { !done.contains(false) }

    /// Chunks still to fetch, in order.
    var missingChunks: [Int] { done.indices.filter { !done[$0] } }

    private func resume() throws {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return }
        let size = Int64(info.st_size)
        for index in done.indices {
            let length = AssetOutline.chunkLength(index, size: asset.size)
            guard Int64(index) * Int64(AssetOutline.chunkSize) + Int64(length) <= size else { break }
            var bytes = [UInt8](repeating: 0, count: length)
            let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, length, off_t(index) * off_t(AssetOutline.chunkSize)) }
            guard read == length else { continue }
            let leaves = try AssetOutline.leafHashes(of: bytes)
            if try AssetOutline.chunkHash(leaves: leaves) == outline[index] {
                try writeLeaves(leaves, of: index)
                done[index] = true
                bytesDone += Int64(length)
            }
        }
        resumedBytes = bytesDone
    }

    private func writeLeaves(_ leaves: [[UInt8]], of index: Int) throws {
        let bytes = leaves.flatMap { $0 }
        let offset = off_t(index) * off_t(AssetOutline.leavesPerChunk * AssetOutline.hashLength)
        let written = bytes.withUnsafeBytes { pwrite(leavesDescriptor, $0.baseAddress, $0.count, offset) }
        guard written == bytes.count else {
            throw LatticeError(.internalError, "writing asset \(asset.hexHash.prefix(12))'s leaf hashes: \(String(cString: strerror(errno)))")
        }
    }

    /// Writes chunk `index` and its leaf hashes, which checked.
    func write(_ index: Int, bytes: [UInt8], leaves: [[UInt8]]) throws {
        guard !done[index] else { return }
        try writeLeaves(leaves, of: index)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                pwrite(descriptor, buffer.baseAddress! + offset, buffer.count - offset, off_t(index) * off_t(AssetOutline.chunkSize) + off_t(offset))
            }
            guard written > 0 else {
                throw LatticeError(.internalError, "writing asset \(asset.hexHash.prefix(12)): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        done[index] = true
        bytesDone += Int64(bytes.count)
    }

    /// Moves the whole content into place, synced first: the store's copy is
    /// whole or absent, whatever happens to the machine.
    func finish() throws {
        guard isComplete else { return }
        guard ftruncate(descriptor, off_t(asset.size)) == 0, fsync(descriptor) == 0 else {
            throw LatticeError(.internalError, "syncing asset \(asset.hexHash.prefix(12)): \(String(cString: strerror(errno)))")
        }
        try AssetFiles.writeOutline(outline, for: asset, in: store)
        // The leaf hashes first: content in place may be served, and is served with them.
        let leaves = AssetFiles.leavesPath(for: asset, in: store)
        guard ftruncate(leavesDescriptor, off_t(AssetOutline.leafCount(size: asset.size) * AssetOutline.hashLength)) == 0, fsync(leavesDescriptor) == 0,
              rename(AssetFiles.partialLeavesPath(for: asset, in: store).path, leaves.path) == 0 else {
            throw LatticeError(.internalError, "keeping asset \(asset.hexHash.prefix(12))'s leaf hashes: \(String(cString: strerror(errno)))")
        }
        let destination = AssetFiles.path(for: asset, in: store)
        guard rename(AssetFiles.partialPath(for: asset, in: store).path, destination.path) == 0 else {
            throw LatticeError(.internalError, "moving asset \(asset.hexHash.prefix(12)) into place: \(String(cString: strerror(errno)))")
        }
    }
}
