import Foundation
@_spi(Tools) import LatticeCore

/// The bundle file's layout: `LTBN`, a version byte, the number of change
/// sets (4 bytes little-endian) and, from version 3, the number of assets;
/// then each asset (its hash, its size in 8 bytes, its content) and the
/// change sets one after another (docs/formats.md).
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
