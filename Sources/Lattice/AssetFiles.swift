import Foundation
import LatticeCore
import LatticeCrypto

/// Asset content lives in `assets/` beside the database, one file per hash,
/// written to a temporary name, synced, then renamed: a crash leaves either
/// the whole file or none.
enum AssetFiles {
    static func path(for asset: AssetReference, in store: URL) -> URL {
        store.appendingPathComponent("assets").appendingPathComponent(asset.hexHash)
    }

    static func importFile(at url: URL, into store: URL) throws -> AssetReference {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
              let input = FileHandle(forReadingAtPath: url.path) else {
            throw LatticeError(.assetFileNotFound, "asset file \(url.path) does not exist or cannot be read")
        }
        defer { try? input.close() }
        let directory = store.appendingPathComponent("assets")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".incoming-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil), let output = FileHandle(forWritingAtPath: temporary.path) else {
            throw LatticeError(.internalError, "cannot write into \(directory.path)")
        }
        let hasher = try ContentHasher()
        var size: Int64 = 0
        do {
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                try chunk.withUnsafeBytes { try hasher.update($0) }
                try output.write(contentsOf: chunk)
                size += Int64(chunk.count)
            }
            try output.synchronize()
            try output.close()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw LatticeError(.internalError, "copying asset \(url.path): \(error)")
        }
        let reference = AssetReference(hash: try hasher.finish(), size: size)
        let destination = path(for: reference, in: store)
        if FileManager.default.fileExists(atPath: destination.path) {
            try? FileManager.default.removeItem(at: temporary)
        } else {
            try FileManager.default.moveItem(at: temporary, to: destination)
        }
        return reference
    }
}
