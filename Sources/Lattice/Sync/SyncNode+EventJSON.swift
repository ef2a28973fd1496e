import Foundation

/// An event as one JSON object, as `lattice serve --json` prints it and the
/// HTTP event stream sends it: `{"event":"connected","peer":…,"address":…}`,
/// null where a value is unknown.
extension SyncNode.Event: Encodable {

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        func put(_ name: String, _ value: some Encodable) throws { try container.encode(value, forKey: Key(name)) }
        func putOrNull(_ name: String, _ value: (some Encodable)?) throws {
            if let value { try container.encode(value, forKey: Key(name)) } else { try container.encodeNil(forKey: Key(name)) }
        }
        switch self {
        case .listening(let port):
            try put("event", "listening"); try put("port", port)
        case .connected(let peer, let address):
            try put("event", "connected"); try put("peer", peer); try put("address", address)
        case .refused(let peer, let address):
            try put("event", "refused"); try put("peer", peer); try put("address", address)
        case .unreachable(let address, let reason):
            try put("event", "unreachable"); try put("address", address); try put("reason", reason)
        case .disconnected(let peer, let address, let reason):
            try put("event", "disconnected"); try putOrNull("peer", peer); try put("address", address); try putOrNull("reason", reason?.description)
        case .syncStarted(let peer, let zone, let direction, let records, let bytes):
            try put("event", "syncStarted"); try put("peer", peer); try put("zone", zone.zoneID.zoneName); try put("direction", direction.rawValue)
            try put("records", records); try put("bytes", bytes)
        case .progress(let peer, let zone, let direction, let recordsDone, let recordsTotal, let bytesDone, let bytesTotal):
            try put("event", "progress"); try put("peer", peer); try put("zone", zone.zoneID.zoneName); try put("direction", direction.rawValue)
            try put("recordsDone", recordsDone); try put("recordsTotal", recordsTotal); try put("bytesDone", bytesDone); try put("bytesTotal", bytesTotal)
        case .syncFinished(let peer, let zone, let direction):
            try put("event", "syncFinished"); try put("peer", peer); try put("zone", zone.zoneID.zoneName); try put("direction", direction.rawValue)
        case .caughtUp(let peer):
            try put("event", "caughtUp"); try put("peer", peer)
        case .publicOnly(let peer):
            try put("event", "publicOnly"); try put("peer", peer)
        case .deferred(let peer, let zone, let records):
            try put("event", "deferred"); try put("peer", peer); try put("zone", zone.zoneID.zoneName); try put("records", records)
        case .writesRefused(let peer, let zone, let records, let reason):
            try put("event", "writesRefused"); try put("peer", peer); try put("database", zone.scope.description); try put("zone", zone.zoneID.zoneName)
            try put("records", records); try put("reason", reason)
        case .discovered(let peer, let addresses, let problem):
            try put("event", "discovered"); try put("peer", peer); try put("addresses", addresses); try putOrNull("problem", problem)
        case .vanished(let peer):
            try put("event", "vanished"); try put("peer", peer)
        case .discoveryUnavailable(let reason):
            try put("event", "discoveryUnavailable"); try put("reason", reason)
        case .discoveryAvailable:
            try put("event", "discoveryAvailable")
        case .assetProgress(let asset, let peer, let bytesDone, let bytesTotal):
            try put("event", "assetProgress"); try put("asset", asset); try put("peer", peer); try put("bytesDone", bytesDone); try put("bytesTotal", bytesTotal)
        case .assetFetched(let asset, let fetchedBytes, let resumedBytes):
            try put("event", "assetFetched"); try put("asset", asset); try put("fetchedBytes", fetchedBytes); try put("resumedBytes", resumedBytes)
        case .assetRejected(let asset, let peer, let chunk, let reason):
            try put("event", "assetRejected"); try put("asset", asset); try put("peer", peer); try put("chunk", chunk); try put("reason", reason)
        }
    }
}
