@_spi(Tools) import LatticeCore

/// A request for part of an asset's content, by its hash: its outline (the
/// chunk hashes, `chunk == nil`) or one chunk (`AssetOutline`).
@_spi(Tools) public struct AssetRequest: Hashable, Sendable, CustomStringConvertible {
    /// The asset's hash (`AssetReference.hash`): the root of its hash tree.
    public var hash: [UInt8]
    /// The content's size, as the record that references it says.
    public var size: Int64
    /// The chunk asked for, from 0 (256 KiB each); nil for the outline.
    public var chunk: Int?

    /// A request for chunk `chunk` of the asset `hash`, or for its outline when nil.
    public init(hash: [UInt8], size: Int64, chunk: Int?) {
        self.hash = hash
        self.size = size
        self.chunk = chunk
    }

    /// What a reply answers: the hash and the chunk (nil: the outline).
    public var key: Key { Key(hash: hash, chunk: chunk) }

    /// What matches a reply to its request: the asset's hash and the chunk.
    public struct Key: Hashable, Sendable {
        /// The asset's hash (`AssetReference.hash`).
        public var hash: [UInt8]
        /// The chunk's index, from 0; nil for the outline.
        public var chunk: Int?
    }

    public var description: String {
        let hex = hash.prefix(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return chunk.map { "chunk \($0) of asset \(hex)…" } ?? "outline of asset \(hex)…"
    }
}

/// A peer's answer to an `AssetRequest`. What it holds is checked by the
/// requester against the hash it asked for (`AssetOutline`), never trusted.
@_spi(Tools) public enum AssetReply: Hashable, Sendable {
    /// The chunk hashes of the asset.
    case outline(hash: [UInt8], chunks: [[UInt8]])
    /// One chunk: its leaves' hashes, then its bytes.
    case chunk(hash: [UInt8], index: Int, leaves: [[UInt8]], bytes: [UInt8])
    /// The peer does not hold it, or this device may not have it.
    case unavailable(hash: [UInt8], chunk: Int?, reason: String)

    /// The request this answers.
    public var key: AssetRequest.Key {
        switch self {
        case .outline(let hash, _): return AssetRequest.Key(hash: hash, chunk: nil)
        case .chunk(let hash, let index, _, _): return AssetRequest.Key(hash: hash, chunk: index)
        case .unavailable(let hash, let chunk, _): return AssetRequest.Key(hash: hash, chunk: chunk)
        }
    }

    /// Content bytes it carries.
    public var contentBytes: Int {
        if case .chunk(_, _, _, let bytes) = self { return bytes.count }
        return 0
    }
}
