extension RecordState {
    /// The records this one references with `deleteSelf`, each with the causal
    /// length of the target its writer saw.
    ///
    /// The cascade rule (DESIGN §2.9) reads this: a live record dies when a
    /// target's causal length is past the one its reference was written
    /// against, that is when the target incarnation it referenced was
    /// deleted. It depends only on merged state, so every replica reaches the
    /// same verdict whatever order the delete and the reference arrive in; a
    /// reference written after a target was re-created names the new
    /// incarnation and survives the old delete.
    public var cascadeReferences: [(target: String, incarnation: UInt64)] {
        var references: [(target: String, incarnation: UInt64)] = []
        for field in fields {
            let targets = field.value.cascadeTargets
            for (index, target) in targets.enumerated() {
                // Blobs written before incarnations were kept name the first one.
                let incarnation = index < field.targetIncarnations.count ? field.targetIncarnations[index] : 1
                references.append((target, incarnation))
            }
        }
        return references
    }

    /// Whether a field holds a `deleteSelf` reference: cheaper than `cascadeReferences`.
    public var hasCascadeReferences: Bool { fields.contains { $0.value.cascadeTargetCount > 0 } }

    /// The deleteSelf targets of a live state (none for a tombstone): what a cascade index holds for it.
    public var liveCascadeTargets: Set<String> {
        isAlive && hasCascadeReferences ? Set(cascadeReferences.map(\.target)) : []
    }
}

extension Optional where Wrapped == FieldValue {
    /// Names of the records a value references with `deleteSelf`, in order.
    package var cascadeTargets: [String] {
        switch self {
        case .reference(let reference)? where reference.action == .deleteSelf:
            return [reference.recordName]
        case .list(let items)?:
            return items.compactMap { item in
                if case .reference(let reference) = item, reference.action == .deleteSelf { return reference.recordName }
                return nil
            }
        default:
            return []
        }
    }

    var cascadeTargetCount: Int {
        switch self {
        case .reference(let reference)?: return reference.action == .deleteSelf ? 1 : 0
        case .list(let items)?:
            return items.reduce(0) { count, item in
                if case .reference(let reference) = item, reference.action == .deleteSelf { return count + 1 }
                return count
            }
        default: return 0
        }
    }
}
