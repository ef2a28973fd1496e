/// Which of a zone's tombstones may go, and who holds the others back.
///
/// A tombstone may go once every device that holds its zone acknowledged a
/// vector covering it (`ReplicaStorage.collectTombstones`); the vector that
/// stands for all of them is the meet of what each acknowledged.
package struct TombstoneHolds: Sendable, Equatable {
    /// What every device acknowledged: the tombstones it covers may go.
    package var acknowledged: VersionVector
    /// Tombstones that must stay for now.
    package var held: Int
    /// For each device holding some back, how many (a device never heard
    /// from holds every tombstone back).
    package var waitingFor: [String: Int]

    /// `own`: this replica's vector of the zone; `devices`: the other devices
    /// that hold it; `acknowledgements`: what each of them acknowledged, where known.
    package init(tombstones: [VersionVector], own: VersionVector, devices: Set<String>, acknowledgements: [String: VersionVector]) {
        var acknowledged = own
        for device in devices { acknowledged = acknowledged.met(with: acknowledgements[device] ?? VersionVector()) }
        self.acknowledged = acknowledged
        var held = 0
        var waitingFor: [String: Int] = [:]
        for vector in tombstones where !acknowledged.dominates(vector) {
            held += 1
            for device in devices where !(acknowledgements[device]?.dominates(vector) ?? false) { waitingFor[device, default: 0] += 1 }
        }
        self.held = held
        self.waitingFor = waitingFor
    }
}
