import LatticeCore

extension StoreTransaction {
    /// Deletes live records by name and, transitively, every live record that
    /// references a deleted one with `deleteSelf` (CloudKit's cascade).
    /// Returns the names deleted, the requested ones first.
    @discardableResult
    public func deleteCascading(_ names: [String], in key: ZoneKey) throws -> [String] {
        var deleted: [String] = []
        var queue = names
        var seen = Set<String>()
        while !queue.isEmpty {
            let name = queue.removeFirst()
            guard seen.insert(name).inserted else { continue }
            guard let previous = try record(name, in: key), previous.isAlive else { continue }
            let stamp = nextStamp()
            try commitLocal(LocalWrite.delete(previous: previous, stamp: stamp), previous: previous, stamp: stamp, in: key)
            deleted.append(name)
            queue.append(contentsOf: try cascadeSources(of: name, in: key))
        }
        return deleted
    }

    /// After a merge: cascades for records that just died, and for live records
    /// whose deleteSelf target is already deleted here (the delete raced them).
    func cascadeAfterMerge(died: [String], references: [(source: String, targets: [String])], in key: ZoneKey) throws -> Int {
        var victims: [String] = []
        for name in died { victims.append(contentsOf: try cascadeSources(of: name, in: key)) }
        for (source, targets) in references {
            for target in targets {
                if let state = try record(target, in: key), !state.isAlive { victims.append(source) }
            }
        }
        return try deleteCascading(victims, in: key).count
    }
}
