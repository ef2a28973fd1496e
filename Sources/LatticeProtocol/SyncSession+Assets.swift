@_spi(Tools) import LatticeCore

/// Asset content moves in the same session as records, as requests and
/// replies one chunk at a time: the requester keeps a few chunks in flight,
/// so record batches are never queued behind more than those (DESIGN §4).
/// The session checks only the exchange (bounded requests, no unasked
/// reply); what a reply holds is checked against the asset's hash by the
/// requester, and what a peer may fetch by the store (`serveAsset`).
extension SyncSession {
    /// Asks the peer for an asset's outline or a chunk. Asking again for
    /// what is already asked sends nothing.
    /// Before the peer's hello, the request waits for it. Asked again (an
    /// answer is late), it is sent again, and two answers are taken.
    package mutating func requestAsset(_ request: AssetRequest) -> [Action] {
        guard !closed else { return [] }
        assetRequests[request.key, default: 0] += 1
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
    package mutating func assetServed(_ reply: AssetReply) -> [Action] {
        guard !closed else { return [] }
        assetServes = max(0, assetServes - 1)
        return [.send(.assetReply(reply))]
    }

    mutating func receiveAssetRequest(_ request: AssetRequest) -> [Action] {
        guard assetServes < Self.maximumAssetServes else {
            return close(.limitExceeded("more than \(Self.maximumAssetServes) asset requests unanswered at once: the peer floods them"))
        }
        assetServes += 1
        return [.serveAsset(request)]
    }

    mutating func receiveAssetReply(_ reply: AssetReply) -> [Action] {
        guard let asked = assetRequests[reply.key] else {
            return close(.unexpected("an asset reply to nothing asked (\(reply.key.chunk.map { "chunk \($0)" } ?? "outline"))"))
        }
        assetRequests[reply.key] = asked > 1 ? asked - 1 : nil
        return [.event(.assetReply(reply))]
    }
}
