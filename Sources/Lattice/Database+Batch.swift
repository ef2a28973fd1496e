@_spi(Tools) import LatticeCore
import LatticeStore

/// One write of a batch, as CloudKit Web Services' `records/modify` names its operations.
public struct BatchWrite: Sendable {
    public enum Operation: String, Sendable, CaseIterable {
        /// A new record: fails (serverRecordChanged) if it exists.
        case create
        /// The fields given, onto the record as of its `recordChangeTag` (required): fails if it changed since.
        case update
        /// The fields given, whatever the record's tag.
        case forceUpdate
        /// The record's whole field set, as of its `recordChangeTag` (required).
        case replace
        /// The record's whole field set, whatever its tag.
        case forceReplace
        /// Deletes the record; with a `recordChangeTag`, only if it is still that.
        case delete
        /// Deletes the record whatever its tag.
        case forceDelete
    }

    public var operation: Operation
    /// The record to write, or for a delete the one to delete (its ID and tag).
    public var record: Record

    /// `tag`: the record's change tag as the writer fetched it (`update`, `replace`, `delete`).
    public init(_ operation: Operation, _ record: Record, tag: String? = nil) {
        self.operation = operation
        self.record = record
        if let tag { self.record.recordChangeTag = tag }
    }
}

extension Database {
    /// Applies `writes` in order in one transaction, so one durable commit:
    /// each write is checked before anything of it is written, and one that
    /// fails its checks is not applied while the others are (a record written
    /// twice sees its earlier write). With `atomically`, one failure applies
    /// none of them (the others fail with batchRequestFailed). Returns each
    /// write's outcome: the record saved, or nil for a delete.
    public func applyBatch(_ writes: [BatchWrite], atomically: Bool = false) throws(LatticeError) -> [Result<Record?, LatticeError>] {
        struct AtomicFailure: Error { var index: Int; var error: LatticeError }
        var results: [Result<Record?, LatticeError>] = []
        results.reserveCapacity(writes.count)
        var atomicFailure: AtomicFailure?
        try LatticeError.wrap {
            do {
                try store.write { transaction in
                    var writer = try RecordWriter(database: self, transaction: transaction, savePolicy: .changedKeys)
                    for (index, write) in writes.enumerated() {
                        // A failed check is that write's outcome; anything failing while writing rolls back the whole batch.
                        let outcome: Result<Record?, LatticeError>
                        do { outcome = .success(try apply(write, with: &writer, in: transaction)) } catch let error as LatticeError { outcome = .failure(error) }
                        if atomically, case .failure(let error) = outcome { throw AtomicFailure(index: index, error: error) }
                        results.append(outcome)
                    }
                }
            } catch let failure as AtomicFailure {
                atomicFailure = failure // the transaction rolled back: nothing was committed
            }
        }
        if let failure = atomicFailure {
            return writes.indices.map { index in
                index == failure.index ? .failure(failure.error) : .failure(LatticeError(.batchRequestFailed, "not applied: write \(failure.index + 1) of the atomic batch failed (\(failure.error.message))"))
            }
        }
        return results
    }

    /// Checks and applies one write: a failed check throws a `LatticeError`
    /// before anything is written; the writing itself throws the store's errors.
    private func apply(_ write: BatchWrite, with writer: inout RecordWriter, in transaction: StoreTransaction) throws -> Record? {
        let record = write.record
        let id = record.recordID
        func requireTag() throws(LatticeError) -> String {
            guard let tag = record.recordChangeTag else {
                throw LatticeError(.invalidArguments, "\(write.operation.rawValue) of record \(id) needs its recordChangeTag (as fetched); force\(write.operation.rawValue.prefix(1).uppercased())\(write.operation.rawValue.dropFirst()) writes whatever the tag")
            }
            return tag
        }
        func checkTag(_ tag: String, writer: inout RecordWriter) throws(LatticeError) {
            let zone = try writer.key(id.zoneID)
            let current = try LatticeError.wrap { try transaction.record(reaching: id.recordName, in: zone, writing: true).state }
            guard let current, current.isAlive else { throw LatticeError(.unknownItem, "record \(id) does not exist") }
            guard current.changeTag == tag else {
                throw LatticeError(.serverRecordChanged, "record \(id) changed since tag \(tag) (now \(current.changeTag)); fetch it and decide again",
                                   serverRecord: Record(state: current, zoneID: id.zoneID))
            }
        }
        switch write.operation {
        case .create, .update, .forceUpdate, .replace, .forceReplace:
            var saved = record
            switch write.operation {
            case .create:
                saved.recordChangeTag = nil
                writer.savePolicy = .ifServerRecordUnchanged
            case .update:
                _ = try requireTag()
                writer.savePolicy = .ifServerRecordUnchanged
            case .replace:
                try checkTag(try requireTag(), writer: &writer)
                writer.savePolicy = .allKeys
            case .forceReplace:
                writer.savePolicy = .allKeys
            default:
                writer.savePolicy = .changedKeys
            }
            let previous = try writer.check(saved)
            return try writer.write(saved, previous: previous)
        case .delete, .forceDelete:
            try writer.checkDelete(id)
            if write.operation == .delete, let tag = record.recordChangeTag { try checkTag(tag, writer: &writer) }
            try writer.delete(id)
            return nil
        }
    }
}
