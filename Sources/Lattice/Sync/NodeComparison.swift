import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeProtocol
import LatticeStore
import LatticeTransport

/// What `lattice diff DEVICE-ID` asks the running node, and its answer, as
/// they travel through the store's node requests.
struct ComparisonRequest: Codable {
    static let kind = "compare"

    var device: String
    /// Zones by scope and name (`ZoneKey.description`'s parts); nil: every zone of `scope`.
    var zones: [ZoneName]?
    var scope: String?

    struct ZoneName: Codable {
        var scope: String
        var zoneName: String
        var ownerName: String
    }
}

struct ComparisonAnswer: Codable {
    struct Difference: Codable {
        var zone: ComparisonRequest.ZoneName
        var key: Data
        var here: Data?
        var there: Data?
    }

    var error: String?
    var zones: [ComparisonRequest.ZoneName] = []
    var differences: [Difference] = []
    var rounds = 0
    var bytesSent = 0
    var bytesReceived = 0
}

extension ComparisonRequest.ZoneName {
    init(_ key: ZoneKey) {
        self.init(scope: key.scope.description, zoneName: key.zoneID.zoneName, ownerName: key.zoneID.ownerName)
    }

    var key: ZoneKey? {
        DatabaseScope(name: scope).map { ZoneKey(scope: $0, zoneID: ZoneID(zoneName: zoneName, ownerName: ownerName)) }
    }
}

extension ComparisonAnswer {
    init(_ outcome: ZoneComparison) {
        zones = outcome.zones.map(ComparisonRequest.ZoneName.init)
        differences = outcome.differences.map {
            Difference(zone: .init($0.zone), key: Data($0.key), here: $0.here.map { Data($0) }, there: $0.there.map { Data($0) })
        }
        rounds = outcome.rounds
        bytesSent = outcome.bytesSent
        bytesReceived = outcome.bytesReceived
    }

    var outcome: ZoneComparison {
        var outcome = ZoneComparison()
        outcome.zones = zones.compactMap(\.key)
        outcome.differences = differences.compactMap { difference in
            difference.zone.key.map { DigestDifference(zone: $0, key: [UInt8](difference.key), here: difference.here.map { [UInt8]($0) }, there: difference.there.map { [UInt8]($0) }) }
        }
        outcome.rounds = rounds
        outcome.bytesSent = bytesSent
        outcome.bytesReceived = bytesReceived
        return outcome
    }
}

extension Container {
    /// Compares zones with `device` through the node running on this store
    /// (`lattice diff DEVICE-ID`): the node asks the device over its session
    /// and answers through the store. `zones` nil: every zone of `scope` both
    /// sync with each other.
    public func compareThroughRunningNode(with device: String, zones: [ZoneKey]?, scope: DatabaseScope, timeout: Duration) throws(LatticeError) -> ZoneComparison {
        guard NodeStatus.nodeRuns(store: directory) else {
            throw LatticeError(.networkUnavailable, "no node runs on this store: start one (`lattice serve`), or compare with --peer HOST:PORT")
        }
        let request = ComparisonRequest(device: device, zones: zones?.map(ComparisonRequest.ZoneName.init), scope: scope.description)
        let body: [UInt8]
        do { body = [UInt8](try JSONEncoder().encode(request)) } catch { throw LatticeError(.internalError, "cannot encode the request: \(error)") }
        let id = try LatticeError.wrap { try store.postNodeRequest(kind: ComparisonRequest.kind, body: body) }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let answer = try LatticeError.wrap({ try store.takeNodeAnswer(id) }) {
                guard let decoded = try? JSONDecoder().decode(ComparisonAnswer.self, from: Data(answer)) else {
                    throw LatticeError(.internalError, "the node's answer does not decode")
                }
                if let error = decoded.error { throw LatticeError(.networkUnavailable, error) }
                return decoded.outcome
            }
            usleep(20_000)
        }
        try? store.withdrawNodeRequest(id)
        throw LatticeError(.networkUnavailable, "the running node did not answer within \(timeout)")
    }
}

extension SyncNode {
    /// Answers requests other processes posted in the store (on each commit:
    /// posting one wakes the node). Each runs once.
    func serveNodeRequests() {
        guard configuration.publishesStatus else { return } // only the store's own node answers
        let requests: [NodeRequest]
        do { requests = try container.store.pendingNodeRequests() } catch { return }
        for request in requests where request.kind == ComparisonRequest.kind {
            let fresh = state.withLockedValue { $0.sessions.servedRequests.insert(request.id).inserted }
            guard fresh else { continue }
            let store = container.store
            _ = NodeTask.start { [weak self] in
                guard let self else { return }
                var answer = ComparisonAnswer()
                do {
                    let asked = try JSONDecoder().decode(ComparisonRequest.self, from: Data(request.body))
                    let zones = asked.zones?.compactMap(\.key)
                    answer = ComparisonAnswer(try await self.compare(with: asked.device, zones: zones, scope: zones == nil ? asked.scope.flatMap(DatabaseScope.init(name:)) : nil))
                } catch let error as LatticeError {
                    answer.error = error.message
                } catch {
                    answer.error = "\(error)"
                }
                if let bytes = try? JSONEncoder().encode(answer) { try? store.answerNodeRequest(request.id, with: [UInt8](bytes)) }
                self.state.withLockedValue { _ = $0.sessions.servedRequests.remove(request.id) } // answered: no longer pending
            }
        }
    }
}
