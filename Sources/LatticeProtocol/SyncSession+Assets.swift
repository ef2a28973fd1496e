import LatticeCore

/// Asset content moves in the same session as records, as requests and
/// replies one chunk at a time: the requester keeps a few chunks in flight,
/// so record batches are never queued behind more than those (DESIGN §4).
/// The session checks only the exchange (bounded requests, no unasked
/// reply); what a reply holds is checked against the asset's hash by the
/// requester, and what a peer may fetch by the store (`serveAsset`).
extension SyncSession {
    /// Asks the peer for an asset's outline or a chunk. Asking again for
    /// what is already asked sends nothing.
    /// Before the peer's hello, the request waits for it.
    public mutating func requestAsset(_ request: AssetRequest) -> [Action] {
        guard !closed, assetRequests.insert(request.key).inserted else { return [] }
        guard peerHello != nil else {
            assetRequestsBeforeHello.append(request)
            return []
        }
        return [.send(.assetRequest(request))]
    }

    /// The requests made before the peer's hello, sent once it came.
    mutating func sendAssetRequestsMadeBeforeHello() -> [Action] {
        defer { assetRequestsBeforeHello = [] }
        return assetRequestsBeforeHello.map { .send(.assetRequest($0)) }
    }

    /// The store answered a `serveAsset`.
    public mutating func assetServed(_ reply: AssetReply) -> [Action] {
        guard !closed else { return [] }
        assetServes = max(0, assetServes - 1)
        return [.send(.assetReply(reply))]
    }

    /// Requests this side has not had an answer to.
    public var pendingAssetRequests: Int { assetRequests.count }

    mutating func receiveAssetRequest(_ request: AssetRequest) -> [Action] {
        guard assetServes < Self.maximumAssetServes else {
            return close(.limitExceeded("more than \(Self.maximumAssetServes) asset requests unanswered at once: the peer floods them"))
        }
        assetServes += 1
        return [.serveAsset(request)]
    }

    mutating func receiveAssetReply(_ reply: AssetReply) -> [Action] {
        guard assetRequests.remove(reply.key) != nil else { return close(.unexpected("an asset reply to nothing asked (\(reply.key.chunk.map { "chunk \($0)" } ?? "outline"))")) }
        return [.event(.assetReply(reply))]
    }
}
