/// What every write carries: the writer's clock reading and its replica ID.
/// The larger stamp wins; the replica ID breaks ties, so the order is total.
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The writer's clock reading when it wrote: the larger one wins.
    public var time: HLCTimestamp
    /// The writer; breaks ties between equal times.
    public var replica: ReplicaID

    /// The stamp of a write made at `time` by `replica`.
    public init(time: HLCTimestamp, replica: ReplicaID) {
        self.time = time
        self.replica = replica
    }

    public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.replica < rhs.replica
    }

    public var description: String { "\(time)@\(replica.description.prefix(8))" }
}
