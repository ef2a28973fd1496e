import CSodium

/// How an asset's content hash commits to every 16 KiB of it, so a receiver
/// checks each piece as it arrives, from whichever peer sent it (DESIGN §4).
///
/// Three levels of keyed BLAKE2b-256 (the key separates the levels, so a
/// hash of one level never passes for another's):
/// - a *leaf* is 16 KiB of content (the last one may be shorter);
/// - a *chunk* is 256 KiB, 16 leaves: its hash covers its leaves' hashes;
/// - the *asset* hash covers the content's size and every chunk's hash.
///
/// A receiver first gets the outline (the chunk hashes, 32 bytes per 256 KiB:
/// 512 KiB for an 4 GiB asset) and checks it against the asset hash it
/// already has from the record; then each chunk comes with its leaf hashes,
/// checked against the outline, and each leaf is checked as it is read. So a
/// wrong byte is caught within the 16 KiB leaf that holds it, before anything
/// is written, and the chunk is fetched again elsewhere.
package enum AssetOutline {
    package static let leafSize = 16 * 1024
    package static let leavesPerChunk = 16
    package static let chunkSize = leafSize * leavesPerChunk
    package static let hashLength = 32
    /// The largest asset an outline fits a message for: 32,768 chunks (8 GiB).
    package static let maximumChunks = 32_768

    private static let leafKey = key("lattice asset leaf")
    private static let chunkKey = key("lattice asset chunk")
    private static let assetKey = key("lattice asset root")

    private static func key(_ text: String) -> [UInt8] {
        Array(text.utf8) + [UInt8](repeating: 0, count: 32 - text.utf8.count)
    }

    /// How many chunks content of `size` bytes has (one for empty content).
    package static func chunkCount(size: Int64) -> Int {
        max(1, Int((size + Int64(chunkSize) - 1) / Int64(chunkSize)))
    }

    /// How many leaves content of `size` bytes has, all chunks together: 16
    /// a chunk but the last, whose leaves are those its bytes fill (at least one).
    package static func leafCount(size: Int64) -> Int {
        let chunks = chunkCount(size: size)
        let last = chunkLength(chunks - 1, size: size)
        return (chunks - 1) * leavesPerChunk + max(1, (last + leafSize - 1) / leafSize)
    }

    /// How many bytes chunk `index` of content of `size` bytes holds.
    package static func chunkLength(_ index: Int, size: Int64) -> Int {
        let start = Int64(index) * Int64(chunkSize)
        return Int(max(0, min(Int64(chunkSize), size - start)))
    }

    package static func leafHash(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8] {
        try keyedHash([bytes], key: leafKey)
    }

    /// The hash of a chunk from its leaves' hashes.
    package static func chunkHash(leaves: [[UInt8]]) throws -> [UInt8] {
        try keyedHash(bytes: leaves.flatMap { $0 }, key: chunkKey)
    }

    /// The asset's content hash from its size and its chunks' hashes.
    package static func assetHash(size: Int64, chunks: [[UInt8]]) throws -> [UInt8] {
        var sizeBytes = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { sizeBytes[index] = UInt8(truncatingIfNeeded: UInt64(size) >> (8 * index)) }
        return try keyedHash(bytes: sizeBytes + chunks.flatMap { $0 }, key: assetKey)
    }

    /// The leaf hashes of one chunk's bytes.
    package static func leafHashes(of chunk: UnsafeRawBufferPointer) throws -> [[UInt8]] {
        var hashes: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(offset + leafSize, chunk.count)
            hashes.append(try leafHash(UnsafeRawBufferPointer(rebasing: chunk[offset..<end])))
            offset = end
        } while offset < chunk.count
        return hashes
    }

    package static func leafHashes(of chunk: [UInt8]) throws -> [[UInt8]] {
        try chunk.withUnsafeBytes { try leafHashes(of: $0) }
    }

    /// Whether `chunks` (an outline received from a peer) is the outline of
    /// `asset`: the right count for its size, and hashing to its hash.
    package static func outlineMatches(_ chunks: [[UInt8]], hash: [UInt8], size: Int64) throws -> Bool {
        guard chunks.count == chunkCount(size: size), chunks.allSatisfy({ $0.count == hashLength }) else { return false }
        return try assetHash(size: size, chunks: chunks) == hash
    }

    /// What is wrong with chunk `index` a peer sent, or nil when it checks:
    /// its leaf hashes must hash to the outline's `expected`, and each 16 KiB
    /// of `bytes` to its leaf hash (the first that does not is named).
    package static func problem(withChunk index: Int, leaves: [[UInt8]], bytes: [UInt8], expected: [UInt8], size: Int64) throws -> String? {
        let length = chunkLength(index, size: size)
        guard bytes.count == length else { return "chunk \(index) has \(bytes.count) bytes, not \(length)" }
        let leafCount = max(1, (length + leafSize - 1) / leafSize)
        guard leaves.count == leafCount, leaves.allSatisfy({ $0.count == hashLength }) else {
            return "chunk \(index) comes with \(leaves.count) leaf hashes, not \(leafCount)"
        }
        guard try chunkHash(leaves: leaves) == expected else { return "chunk \(index)'s leaf hashes do not hash to the outline's" }
        return try bytes.withUnsafeBytes { buffer -> String? in
            for (leaf, hash) in leaves.enumerated() {
                let start = leaf * leafSize
                let end = min(start + leafSize, buffer.count)
                if try leafHash(UnsafeRawBufferPointer(rebasing: buffer[start..<end])) != hash {
                    return "chunk \(index): bytes \(Int64(index) * Int64(chunkSize) + Int64(start))..<\(Int64(index) * Int64(chunkSize) + Int64(end)) do not match their leaf hash"
                }
            }
            return nil
        }
    }

    /// Whether `bytes` are chunk `index` as the outline says (a chunk read back from disk).
    package static func chunkMatches(_ bytes: [UInt8], index: Int, outline: [[UInt8]], size: Int64) throws -> Bool {
        guard index < outline.count, bytes.count == chunkLength(index, size: size) else { return false }
        return try chunkHash(leaves: try leafHashes(of: bytes)) == outline[index]
    }

    private static func keyedHash(bytes: [UInt8], key: [UInt8]) throws -> [UInt8] {
        try bytes.withUnsafeBytes { try keyedHash([$0], key: key) }
    }

    private static func keyedHash(_ parts: [UnsafeRawBufferPointer], key: [UInt8]) throws -> [UInt8] {
        try Sodium.ready()
        let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { state.deallocate() }
        try Sodium.check(crypto_generichash_init(OpaquePointer(state), key, key.count, hashLength), "crypto_generichash_init")
        for part in parts {
            guard let base = part.baseAddress?.assumingMemoryBound(to: UInt8.self) else { continue }
            try Sodium.check(crypto_generichash_update(OpaquePointer(state), base, UInt64(part.count)), "crypto_generichash_update")
        }
        var digest = [UInt8](repeating: 0, count: hashLength)
        try Sodium.check(crypto_generichash_final(OpaquePointer(state), &digest, hashLength), "crypto_generichash_final")
        return digest
    }
}

/// Hashes content as it streams past, in any piece sizes: its chunk hashes
/// (the outline) and its asset hash, without holding more than one chunk.
package final class AssetHasher {
    private var pending: [UInt8] = []
    package private(set) var chunks: [[UInt8]] = []
    package private(set) var size: Int64 = 0
    /// Given each chunk's leaf hashes, in order (to keep them beside the content).
    private let leafSink: (([[UInt8]]) throws -> Void)?

    package init(leafSink: (([[UInt8]]) throws -> Void)? = nil) {
        self.leafSink = leafSink
        pending.reserveCapacity(AssetOutline.chunkSize)
    }

    package func update(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let take = min(AssetOutline.chunkSize - pending.count, bytes.count - offset)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + take]))
            offset += take
            if pending.count == AssetOutline.chunkSize { try closeChunk() }
        }
        size += Int64(bytes.count)
    }

    private func closeChunk() throws {
        let leaves = try AssetOutline.leafHashes(of: pending)
        try leafSink?(leaves)
        chunks.append(try AssetOutline.chunkHash(leaves: leaves))
        pending.removeAll(keepingCapacity: true)
    }

    /// The asset hash; the outline is `chunks` after this.
    package func finish() throws -> [UInt8] {
        if !pending.isEmpty || chunks.isEmpty { try closeChunk() }
        return try AssetOutline.assetHash(size: size, chunks: chunks)
    }
}
