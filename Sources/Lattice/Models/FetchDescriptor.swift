import Foundation
@_spi(Tools) import LatticeCore

/// What to fetch, as SwiftData's `FetchDescriptor`: Foundation's `#Predicate`
/// and `SortDescriptor` over the model's properties, a limit and an offset.
/// The predicate is compiled to a Lattice `Query`, so the store's indexes serve it.
///
/// ```swift
/// let recent = FetchDescriptor<Movie>(predicate: #Predicate { $0.year >= 1995 }, sortBy: [SortDescriptor(\.year, order: .reverse)])
/// ```
public struct FetchDescriptor<T: PersistentModel> {
    public var predicate: Predicate<T>?
    public var sortBy: [SortDescriptor<T>]
    /// At most this many objects.
    public var fetchLimit: Int?
    /// Skip this many matching objects first.
    public var fetchOffset: Int?

    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }

    /// The Lattice query this descriptor runs.
    public func query() throws(LatticeError) -> Query {
        let schema = ModelSchema.of(T.self)
        try schema.check()
        var compiled = QueryPredicate.all
        if let predicate {
            compiled = try PredicateCompiler(schema: schema).predicate(predicate.expression)
        }
        var sorts: [QuerySort] = []
        for sort in sortBy {
            guard let keyPath = sort.keyPath else {
                throw LatticeError(.invalidArguments, "a sort of \(schema.recordType) must name a property by key path")
            }
            let property = try schema.property(for: keyPath)
            guard let access = property.attribute else { throw LatticeError(.invalidArguments, "\(schema.recordType).\(property.name) is a relationship: sort by one of its attributes") }
            guard access.isOrdered else { throw LatticeError(.invalidArguments, "\(schema.recordType).\(property.name) is stored as JSON text, whose order is not its values' order: it cannot be sorted by") }
            sorts.append(QuerySort(.field(property.name), ascending: sort.order == .forward))
        }
        return Query(recordType: schema.recordType, predicate: compiled, sortDescriptors: sorts)
    }
}

extension ModelContext {
    /// The objects a descriptor matches, in its order: saved records, less the
    /// objects this context deleted (save first to see this context's inserts).
    public func fetch<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(LatticeError) -> [T] {
        let query = try descriptor.query()
        let offset = max(0, descriptor.fetchOffset ?? 0)
        let limit = descriptor.fetchLimit.map { max(0, $0) } ?? .max
        guard limit > 0 else { return [] }
        // Objects deleted in this context and not saved yet are left out, as SwiftData leaves them out.
        let pendingDeletes = deleted.count
        let records = try allRecords(matching: query, limit: limit == .max ? .max : limit + offset + pendingDeletes)
        let objects = records.map { materialize($0, as: T.self) }.filter { !$0._$backing.isDeleted }
        return Array(objects.dropFirst(offset).prefix(limit))
    }

    /// How many objects a descriptor matches (ignoring its limit and offset).
    public func fetchCount<T: PersistentModel>(_ descriptor: FetchDescriptor<T>) throws(LatticeError) -> Int {
        try allRecords(matching: descriptor.query()).count
    }

    /// Every object of a type.
    public func fetch<T: PersistentModel>(_ type: T.Type) throws(LatticeError) -> [T] {
        try fetch(FetchDescriptor<T>())
    }
}
