@_spi(Tools) import LatticeCrypto
import Testing

/// The hash tree assets are addressed by: any piece sizes hash alike, the
/// hash commits to the size and every byte, and a bad byte is pinned to its
/// 16 KiB leaf.
@Suite struct AssetOutlineTests {
    func content(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        var value = seed
        return (0..<count).map { _ in
            value = value &* 73 &+ 41
            return value
        }
    }

    func hash(_ bytes: [UInt8], pieces: Int) throws -> (hash: [UInt8], outline: [[UInt8]]) {
        let hasher = AssetHasher()
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + pieces, bytes.count)
            try Array(bytes[offset..<end]).withUnsafeBytes { try hasher.update($0) }
            offset = end
        }
        return (try hasher.finish(), hasher.chunks)
    }

    @Test(arguments: [0, 1, 16_384, 262_144, 262_145, 3 * 262_144 + 999])
    func pieceSizesDoNotChangeTheHash(size: Int) throws {
        let bytes = content(size)
        let whole = try hash(bytes, pieces: max(1, size))
        #expect(try hash(bytes, pieces: 1000) == whole)
        #expect(try hash(bytes, pieces: 262_144) == whole)
        #expect(whole.outline.count == AssetOutline.chunkCount(size: Int64(size)))
        #expect(try AssetOutline.outlineMatches(whole.outline, hash: whole.hash, size: Int64(size)))
        // Each chunk checks against the outline, leaf by leaf.
        for index in whole.outline.indices {
            let start = index * AssetOutline.chunkSize
            let chunk = Array(bytes[start..<start + AssetOutline.chunkLength(index, size: Int64(size))])
            let leaves = try AssetOutline.leafHashes(of: chunk)
            #expect(try AssetOutline.problem(withChunk: index, leaves: leaves, bytes: chunk, expected: whole.outline[index], size: Int64(size)) == nil)
            #expect(try AssetOutline.chunkMatches(chunk, index: index, outline: whole.outline, size: Int64(size)))
        }
    }

    @Test func theHashCommitsToTheSizeAndEveryByte() throws {
        let bytes = content(300_000)
        let original = try hash(bytes, pieces: 4096)
        var changed = bytes
        changed[299_999] ^= 1
        #expect(try hash(changed, pieces: 4096).hash != original.hash)
        #expect(try hash(Array(bytes.dropLast()), pieces: 4096).hash != original.hash)
        // The same outline under another size is not this asset's.
        #expect(try !AssetOutline.outlineMatches(original.outline, hash: original.hash, size: 300_001))
        #expect(try !AssetOutline.outlineMatches(Array(original.outline.reversed()), hash: original.hash, size: 300_000))
        // A chunk's hash is not a leaf's, nor the asset's (keyed levels).
        let single = content(100)
        let leaf = try single.withUnsafeBytes { try AssetOutline.leafHash($0) }
        #expect(try AssetOutline.chunkHash(leaves: [leaf]) != leaf)
        #expect(try hash(single, pieces: 100).hash != (try AssetOutline.chunkHash(leaves: [leaf])))
    }

    @Test func aBadByteIsPinnedToItsLeafAndBadLeafHashesToTheChunk() throws {
        let bytes = content(AssetOutline.chunkSize * 2)
        let whole = try hash(bytes, pieces: 65_536)
        let chunk = Array(bytes[AssetOutline.chunkSize...])
        let leaves = try AssetOutline.leafHashes(of: chunk)
        var bad = chunk
        bad[40_000] ^= 0x80 // leaf 2 of chunk 1
        let problem = try AssetOutline.problem(withChunk: 1, leaves: leaves, bytes: bad, expected: whole.outline[1], size: Int64(bytes.count))
        #expect(problem?.contains("bytes 294912..<311296") == true, "\(problem ?? "none")")
        // Leaf hashes made up to match the bad bytes do not hash to the outline's chunk.
        let forged = try AssetOutline.leafHashes(of: bad)
        #expect(try AssetOutline.problem(withChunk: 1, leaves: forged, bytes: bad, expected: whole.outline[1], size: Int64(bytes.count))?.contains("do not hash") == true)
        #expect(try AssetOutline.problem(withChunk: 1, leaves: Array(leaves.dropLast()), bytes: chunk, expected: whole.outline[1], size: Int64(bytes.count)) != nil)
        #expect(try AssetOutline.problem(withChunk: 1, leaves: leaves, bytes: Array(chunk.dropLast()), expected: whole.outline[1], size: Int64(bytes.count)) != nil)
    }
}
