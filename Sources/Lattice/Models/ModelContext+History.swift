import Foundation
@_spi(Tools) import LatticeCore

/// A transaction type `fetchHistory` returns, as SwiftData's `HistoryTransaction`.
/// `DefaultHistoryTransaction` is the one there is.
public protocol HistoryTransaction: Sendable {}

/// A point in a store's history, as SwiftData's `DefaultHistoryToken`: ordered as the device stored changes.
public struct DefaultHistoryToken: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public let token: HistoryToken
    public init(_ token: HistoryToken) { self.token = token }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.token < rhs.token }
    public var description: String { token.description }
}

/// An object inserted by a transaction, as SwiftData's `DefaultHistoryInsert`.
public struct DefaultHistoryInsert: Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
}

/// An object changed by a transaction, as SwiftData's `DefaultHistoryUpdate`.
public struct DefaultHistoryUpdate: Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The stored names of the attributes the transaction changed.
    public let updatedAttributeNames: [String]
    /// Attributes written concurrently that lost to the value held: conflicts to look at (`ModelContext.conflicts`).
    public let conflictedAttributeNames: [String]
    let schemas: [String: ModelSchema]

    /// The changed attributes as key paths of the model type, as SwiftData's `updatedAttributes`.
    public func updatedAttributes<T: PersistentModel>(of type: T.Type) -> Set<PartialKeyPath<T>> {
        guard let schema = schemas[changedPersistentIdentifier.recordType], schema.recordType == T.recordType else { return [] }
        return Set(schema.properties.filter { updatedAttributeNames.contains($0.name) }.compactMap { $0.keyPath as? PartialKeyPath<T> })
    }
}

/// An object deleted by a transaction, as SwiftData's `DefaultHistoryDelete`.
public struct DefaultHistoryDelete: Sendable {
    public let changedPersistentIdentifier: PersistentIdentifier
    /// The values of the attributes marked `@Attribute(.preserveValueOnDeletion)`.
    public let tombstone: HistoryTombstone
}

/// What a delete kept of an object: its `@Attribute(.preserveValueOnDeletion)` values, as SwiftData's `HistoryTombstone`.
public struct HistoryTombstone: Sendable {
    /// The preserved values by stored field name.
    public let values: [String: FieldValue]
    let schema: ModelSchema?
    let valueStore: ModelValueStore

    /// The preserved value of a property, or nil when it was not preserved (or held none).
    public subscript<T: PersistentModel, V>(keyPath: KeyPath<T, V>) -> V? {
        guard let schema, schema.recordType == T.recordType, let property = try? schema.property(for: keyPath),
              let access = property.attribute, let value = values[property.name] else { return nil }
        let scratch = T(_$backing: ModelBacking())
        scratch._$backing.isLoading = true
        access.write(scratch, value, schema.prototype, valueStore)
        return scratch[keyPath: keyPath]
    }
}

/// One change of a transaction, as SwiftData's `HistoryChange`.
public enum HistoryChange: Sendable {
    case insert(DefaultHistoryInsert)
    case update(DefaultHistoryUpdate)
    case delete(DefaultHistoryDelete)

    /// The object changed.
    public var changedPersistentIdentifier: PersistentIdentifier {
        switch self {
        case .insert(let insert): return insert.changedPersistentIdentifier
        case .update(let update): return update.changedPersistentIdentifier
        case .delete(let delete): return delete.changedPersistentIdentifier
        }
    }
}

/// One writer commit, as SwiftData's `DefaultHistoryTransaction`.
public struct DefaultHistoryTransaction: HistoryTransaction, Identifiable {
    /// The writer commit's identity, the same on every device (`DatabaseTransaction.transactionIdentifier`).
    public let transactionIdentifier: String
    /// The context's `author` for a save made on this device with one; otherwise the writing device's ID.
    public let author: String?
    /// The device that made the commit (checked against its signature when the writes arrived).
    public let deviceID: String
    /// When the writer made it.
    public let timestamp: Date
    public let token: DefaultHistoryToken
    /// The changes to objects of the container's model types (records of other types are left out).
    public let changes: [HistoryChange]
    public let storeIdentifier: String
    /// The store's entries it is made of (`deleteHistory` deletes them).
    let entryIDs: [Int64]

    public var id: String { "\(token)" }

    init(_ transaction: DatabaseTransaction, schemas: [String: ModelSchema], valueStore: ModelValueStore) {
        transactionIdentifier = transaction.transactionIdentifier
        author = transaction.contextAuthor ?? transaction.author
        deviceID = transaction.author
        timestamp = transaction.timestamp
        token = DefaultHistoryToken(transaction.token)
        storeIdentifier = valueStore.container?.containerIdentifier ?? ""
        entryIDs = transaction.entryIDs
        changes = transaction.changes.compactMap { change in
            guard let schema = schemas[change.recordType] else { return nil }
            let id = PersistentIdentifier(recordType: change.recordType, recordID: change.recordID)
            switch change.kind {
            case .insert:
                return .insert(DefaultHistoryInsert(changedPersistentIdentifier: id))
            case .update, .replace:
                let attributes = schema.fieldNames
                return .update(DefaultHistoryUpdate(
                    changedPersistentIdentifier: id, updatedAttributeNames: change.changedFields.filter(attributes.contains),
                    conflictedAttributeNames: change.fields.filter { $0.conflicted && attributes.contains($0.field) }.map(\.field), schemas: schemas))
            case .delete:
                let preserved = schema.preservedNames
                var values: [String: FieldValue] = [:]
                for field in change.fields where preserved.contains(field.field) { values[field.field] = field.oldValue }
                return .delete(DefaultHistoryDelete(
                    changedPersistentIdentifier: id, tombstone: HistoryTombstone(values: values, schema: schema, valueStore: valueStore)))
            }
        }
    }
}

/// Which transactions `fetchHistory` returns and in what order, as SwiftData's `HistoryDescriptor`.
public struct HistoryDescriptor<T: HistoryTransaction> {
    /// Evaluated on each transaction.
    public var predicate: Predicate<T>?
    /// By default, the order this device stored them (token order).
    public var sortBy: [SortDescriptor<T>]
    /// At most this many transactions.
    public var fetchLimit: Int?

    public init(predicate: Predicate<T>? = nil, sortBy: [SortDescriptor<T>] = []) {
        self.predicate = predicate
        self.sortBy = sortBy
    }
}

extension ModelContext {
    /// The container's history: transactions of its zone that touched its
    /// model types, as SwiftData's `fetchHistory`. Transactions are read in
    /// token order, or newest first when the first sort is by token or
    /// timestamp in reverse (so "the last N" reads about N); the predicate
    /// and the sorts are then applied.
    public func fetchHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws(LatticeError) -> [T] {
        let first = descriptor.sortBy.first?.keyPath.map { $0 as AnyKeyPath }
        let byTime = first == \DefaultHistoryTransaction.token as AnyKeyPath || first == \DefaultHistoryTransaction.timestamp as AnyKeyPath
        let newestFirst = byTime && descriptor.sortBy.first?.order == .reverse
        // Without a predicate, in the order read, a limit stops the reading early.
        let stopsEarly = descriptor.predicate == nil && (descriptor.sortBy.isEmpty || (descriptor.sortBy.count == 1 && byTime))
        let limit = stopsEarly ? descriptor.fetchLimit.map { max(0, $0) } : nil
        if limit == 0 { return [] }
        guard T.self == DefaultHistoryTransaction.self else {
            throw LatticeError(.invalidArguments, "fetchHistory returns DefaultHistoryTransaction: use HistoryDescriptor<DefaultHistoryTransaction>")
        }
        let pageSize = limit ?? 1024
        var matched: [T] = []
        var cursor: HistoryToken?
        let store = valueStore
        while true {
            let page = try database.history(
                since: newestFirst ? nil : cursor, in: zoneID, newestFirst: newestFirst, limit: pageSize,
                through: newestFirst ? cursor.map { HistoryToken(entry: $0.entry - 1) } : nil)
            for transaction in page {
                let defaultTransaction = DefaultHistoryTransaction(transaction, schemas: container.schemas, valueStore: store)
                // A transaction that touched no model type of this container is not its history.
                if defaultTransaction.changes.isEmpty { continue }
                let converted = defaultTransaction as! T
                if let predicate = descriptor.predicate {
                    let keep: Bool
                    do { keep = try predicate.evaluate(converted) } catch { throw LatticeError(.invalidArguments, "the history predicate failed: \(error)") }
                    guard keep else { continue }
                }
                matched.append(converted)
                if let limit, matched.count >= limit { return matched }
            }
            guard page.count == pageSize else { break }
            // Newest first, a page ends at its oldest entry; oldest first, at its newest.
            cursor = newestFirst ? HistoryToken(entry: page.map(\.firstEntry).min()!) : page.last!.token
        }
        if !descriptor.sortBy.isEmpty { matched.sort(using: descriptor.sortBy) }
        return descriptor.fetchLimit.map { Array(matched.prefix(max(0, $0))) } ?? matched
    }

    /// Deletes the transactions the descriptor matches, as SwiftData's
    /// `deleteHistory`: their entries go, and reads as of a point before the
    /// last of them fail from then on.
    public func deleteHistory<T: HistoryTransaction>(_ descriptor: HistoryDescriptor<T>) throws(LatticeError) {
        let entries = try fetchHistory(descriptor).flatMap { ($0 as? DefaultHistoryTransaction)?.entryIDs ?? [] }
        guard !entries.isEmpty else { return }
        try container.store.deleteHistory(entries: entries)
    }
}
