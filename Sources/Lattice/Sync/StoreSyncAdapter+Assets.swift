import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
@_spi(Tools) import LatticeProtocol
import LatticeStore

extension StoreSyncAdapter {
    /// A peer gets an asset's content only if a live record of a zone it may
    /// sync references it: a device that may not read a zone gets none of
    /// its assets (a stranger, those of the public database alone). And only
    /// in a scope the content was vouched for here (`AssetScope`): a record
    /// naming a hash is not enough, or a stranger could name a private file's
    /// hash in a public record and get the file. Content held but not served
    /// is answered as content not here, so the answer says nothing of what
    /// this device holds.
    func serveAsset(_ request: AssetRequest, for peer: DeviceID) throws -> AssetReply {
        let asset = AssetReference(hash: request.hash, size: request.size)
        let refusal = try store.read { snapshot -> String? in
            guard let access = try access(for: peer, in: snapshot) else { throw PeerNoLongerTrusted(peer: peer) }
            var readable = false
            for zone in try snapshot.zonesReferencing(asset: request.hash) where access.allows(zone) {
                if zone.scope == .shared, !access.isAccount, let share = try snapshot.share(of: zone),
                   !share.admits(accounts(of: peer, in: snapshot)) { continue }
                readable = true
                if try snapshot.servesAsset(request.hash, in: zone) { return nil }
            }
            return readable ? "its content is not here yet" : "no record this device may read references it here"
        }
        if let refusal { return .unavailable(hash: request.hash, chunk: request.chunk, reason: refusal) }
        guard let outline = try outline(of: asset) else {
            return .unavailable(hash: request.hash, chunk: request.chunk, reason: "the content here does not hash to it (saved by an earlier build, or damaged)")
        }
        guard let chunk = request.chunk else { return .outline(hash: request.hash, chunks: outline) }
        guard let bytes = try AssetFiles.readChunk(chunk, of: asset, in: store.directory) else {
            return .unavailable(hash: request.hash, chunk: chunk, reason: "the content here is shorter than its size")
        }
        // The leaf hashes kept beside the content, when they agree with the outline: the bytes
        // are not hashed again here (the receiver checks them, leaf by leaf). Without them,
        // they are computed, and a copy damaged on this disk is not sent.
        if let kept = AssetFiles.keptLeaves(chunk, of: asset, in: store.directory), try AssetOutline.chunkHash(leaves: kept) == outline[chunk] {
            return .chunk(hash: request.hash, index: chunk, leaves: kept, bytes: bytes)
        }
        let leaves = try AssetOutline.leafHashes(of: bytes)
        guard try AssetOutline.chunkHash(leaves: leaves) == outline[chunk] else {
            return .unavailable(hash: request.hash, chunk: chunk, reason: "the copy here is damaged (chunk \(chunk) does not match its hash)")
        }
        return .chunk(hash: request.hash, index: chunk, leaves: leaves, bytes: bytes)
    }

    /// The asset's outline, from memory for the assets being served.
    private func outline(of asset: AssetReference) throws -> [[UInt8]]? {
        if let known = servedOutlines.withLockedValue({ $0[asset.hash] }) { return known }
        guard let outline = try AssetFiles.outline(for: asset, in: store.directory) else { return nil }
        servedOutlines.withLockedValue { outlines in
            if outlines.count >= 16 { outlines.removeAll() }
            outlines[asset.hash] = outline
        }
        return outline
    }
}
