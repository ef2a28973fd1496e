/// Gathers one page of a query from candidates read in a plan's order, and
/// says when reading may stop. The page is the same whatever the plan: the
/// predicate and cursor are checked on each candidate and the page is sorted
/// by the engine's order, so an index only decides how much is read.
package struct QueryPageCollector {
    package let engine: QueryEngine
    package let cursor: QueryPosition?
    package let limit: Int
    private let order: Ordering
    private var matches: [(position: QueryPosition, record: RecordState)] = []
    /// The first sort key of the match that filled the page, in grouped order.
    private var boundary: FieldValue??
    package private(set) var candidatesRead = 0

    /// How candidates arrive.
    package enum Ordering: Sendable {
        /// Exactly in the query's order.
        case complete
        /// Ordered by the first sort key only.
        case byFirstKey
        case unordered
    }

    package init(engine: QueryEngine, cursor: QueryPosition?, limit: Int, order: Ordering) {
        self.engine = engine
        self.cursor = cursor
        self.limit = limit
        self.order = order
    }

    package init(engine: QueryEngine, plan: QueryPlan, cursor: QueryPosition?, limit: Int) {
        let ordering: Ordering = plan.order == .none ? .unordered : (plan.orderIsComplete ? .complete : .byFirstKey)
        self.init(engine: engine, cursor: cursor, limit: limit, order: ordering)
    }

    /// Takes one candidate; returns false once no later candidate can be on the page.
    package mutating func offer(_ record: RecordState) -> Bool {
        candidatesRead += 1
        guard record.isAlive, record.recordType == engine.recordType, engine.predicate.matches(record) else { return true }
        let position = engine.position(of: record)
        if let cursor, engine.compare(position, cursor) <= 0 { return true }
        defer { if matches.count > 2 * (limit + 1) + 64 { keepBest() } }
        switch order {
        case .unordered:
            matches.append((position, record))
            return true
        case .complete:
            matches.append((position, record))
            return matches.count <= limit
        case .byFirstKey:
            let first = position.values.first ?? nil
            if let boundary {
                guard engine.compareKey(0, first, boundary) == 0 else { return false }
            } else if matches.count == limit {
                boundary = .some(first)
            }
            matches.append((position, record))
            return true
        }
    }

    /// Only the first `limit + 1` matches in the query's order can be on the
    /// page or mark its end: memory stays bounded by the page, not the type.
    private mutating func keepBest() {
        matches.sort { engine.compare($0.position, $1.position) < 0 }
        matches.removeLast(matches.count - (limit + 1))
    }

    /// The page and, when more may follow, where it ended.
    package func finish() -> (records: [RecordState], next: QueryPosition?) {
        let sorted = matches.sorted { engine.compare($0.position, $1.position) < 0 }
        guard sorted.count > limit else { return (sorted.map(\.record), nil) }
        let page = sorted.prefix(limit)
        return (page.map(\.record), page.last?.position)
    }
}
