import Foundation
@_spi(Tools) import LatticeCore
import LatticeStore
import NIOCore

extension SyncNode {
    func startStream(_ peer: String, _ zone: ZoneKey, _ direction: Direction, _ records: Int, _ bytes: Int) {
        _ = state.withLockedValue { state in
            updateZone(&state, peer, zone, direction) { progress in
                progress.state = "syncing"
                progress.recordsDone = 0
                progress.bytesDone = 0
                progress.recordsTotal = records
                progress.bytesTotal = bytes
            }
        }
        continuation.yield(.syncStarted(peer: peer, zone: zone, direction: direction, records: records, bytes: bytes))
    }

    func advance(_ peer: String, _ zone: ZoneKey, _ direction: Direction, _ records: Int, _ bytes: Int, _ final: Bool) {
        let progress = state.withLockedValue { state in
            updateZone(&state, peer, zone, direction) { progress in
                progress.recordsDone += records
                progress.bytesDone += bytes
                progress.recordsTotal = max(progress.recordsTotal, progress.recordsDone)
                progress.bytesTotal = max(progress.bytesTotal, progress.bytesDone)
                if final {
                    progress.recordsTotal = progress.recordsDone
                    progress.bytesTotal = progress.bytesDone
                    progress.state = "idle"
                    progress.lastSync = RecordStore.systemWallClock()
                }
            }
        }
        if let progress {
            continuation.yield(.progress(
                peer: peer, zone: zone, direction: direction, recordsDone: progress.recordsDone, recordsTotal: progress.recordsTotal,
                bytesDone: progress.bytesDone, bytesTotal: progress.bytesTotal))
        }
        if final { continuation.yield(.syncFinished(peer: peer, zone: zone, direction: direction)) }
    }

    func updatePeer(_ state: inout State, _ peer: String, _ body: (inout NodeStatus.PeerStatus) -> Void) {
        if let index = state.status.peers.firstIndex(where: { $0.deviceID == peer }) {
            body(&state.status.peers[index])
        } else {
            var status = NodeStatus.PeerStatus(deviceID: peer, address: "", connected: false, zones: [], lastError: nil)
            body(&status)
            state.status.peers.append(status)
        }
    }

    @discardableResult
    func updateZone(_ state: inout State, _ peer: String, _ zone: ZoneKey, _ direction: Direction, _ body: (inout NodeStatus.ZoneProgress) -> Void) -> NodeStatus.ZoneProgress? {
        var result: NodeStatus.ZoneProgress?
        updatePeer(&state, peer) { status in
            let name = zone.zoneID.zoneName
            if let index = status.zones.firstIndex(where: { $0.zone == name && $0.direction == direction.rawValue }) {
                body(&status.zones[index])
                result = status.zones[index]
            } else {
                var progress = NodeStatus.ZoneProgress(zone: name, direction: direction.rawValue, state: "syncing", recordsDone: 0, recordsTotal: 0, bytesDone: 0, bytesTotal: 0, lastSync: nil)
                body(&progress)
                status.zones.append(progress)
                result = progress
            }
        }
        return result
    }

    /// Writes the status file when `StatusDebounce` says.
    func publishStatus() {
        guard configuration.publishesStatus else { return }
        let delay = state.withLockedValue { state -> TimeAmount? in
            guard !state.runtime.stopped else { return nil }
            return state.publishing.debounce.changed(at: .now())
        }
        guard let delay else { return }
        let directory = container.directory
        group.next().scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            let status = self.state.withLockedValue { state -> NodeStatus? in
                state.publishing.debounce.writing(at: .now())
                guard !state.runtime.stopped else { return nil }
                self.countTraffic(&state)
                return state.status
            }
            status?.write(store: directory)
        }
    }
}
