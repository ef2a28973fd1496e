import ArgumentParser
import Foundation
import Lattice

/// `lattice batch`: one process for many operations, read as JSON lines from
/// standard input and answered one JSON line each, in order.
struct BatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "batch",
        abstract: "Run JSON lines of operations from standard input, one JSON result line each.",
        discussion: """
            Each line is one of CloudKit Web Services' requests:
              {"operationType":"create|update|forceUpdate|replace|forceReplace|delete|forceDelete","record":{…}}
              {"query":{"recordType":"Movie","filterBy":[…],"sortBy":[…]},"resultsLimit":50,"continuationMarker":"…"}
              {"records":[{"recordName":"m1"},…]}   (a lookup)
            with "zoneID":{"zoneName":"Movies"} on the line or in the record (else --zone, else _defaultZone).
            update, replace and delete take the record's recordChangeTag as fetched; the force forms do not.
            Each line's result carries "line", the records or the error (serverErrorCode, reason) and the
            exitCode the single command would give. A bad line gets its error and the next line still runs.
            Writes are committed in groups (up to 1,000 lines, or whatever is waiting): a result is printed only
            once its write is durable. With --atomic, all of a zone's writes apply or none do (read to the end first).
            The command exits 0 when every line succeeded, 1 when one failed.
            Example: lattice batch --zone Movies < operations.jsonl
            """)
    @OptionGroup var options: GlobalOptions
    @Option(help: "Zone for lines that name none.") var zone: String?
    @Flag(help: "Apply each zone's writes all or none (reads the whole input first).") var atomic = false

    func run() throws {
        let container = try options.openContainer(forOneCommand: true)
        var runner = BatchRunner(container: container, database: container.database(with: options.scope), defaultZone: zone)
        let input = LineInput(fileDescriptor: STDIN_FILENO)
        if atomic {
            var lines: [(number: Int, text: [UInt8]?)] = []
            reading: while true {
                switch input.next(waiting: true) {
                case .line(let text): lines.append((lines.count + 1, text))
                case .tooLong: lines.append((lines.count + 1, nil))
                case .wouldWait, .end: break reading
                }
            }
            runner.runAtomically(lines)
        } else {
            var number = 0
            while true {
                switch input.next(waiting: !runner.hasPendingWrites) {
                case .line(let text):
                    number += 1
                    runner.take(text, number: number)
                case .tooLong:
                    number += 1
                    runner.refuseTooLong(number: number)
                case .wouldWait:
                    runner.flush()
                case .end:
                    runner.flush()
                    if runner.failed { throw ExitCode(1) }
                    return
                }
            }
        }
        if runner.failed { throw ExitCode(1) }
    }
}

/// Standard input, line by line, telling when the next line is not there yet
/// (so waiting writes are committed before the process waits for more).
final class LineInput {
    enum Next { case line([UInt8]), tooLong, wouldWait, end }
    private let fileDescriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline resumes.
    private var scanned = 0
    private var ended = false
    /// Whether the rest of an overlong line is being skipped.
    private var skipping = false
    /// A longer line is answered as too long, not held in memory: a record is at most 1 MB.
    static let maximumLineLength = 16 << 20

    init(fileDescriptor: Int32) { self.fileDescriptor = fileDescriptor }

    func next(waiting: Bool) -> Next {
        while true {
            // Searched from where the last search stopped: a long line is read in many chunks.
            if let newline = buffer[max(start, scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                scanned = start
                if start > 1 << 16 { buffer.removeFirst(start); start = 0; scanned = 0 }
                if skipping {
                    skipping = false
                    return .tooLong
                }
                return .line(line)
            }
            scanned = buffer.count
            if buffer.count - start > Self.maximumLineLength {
                skipping = true
                buffer.removeAll(keepingCapacity: true)
                start = 0
                scanned = 0
            }
            if ended {
                if skipping {
                    skipping = false
                    start = buffer.count
                    return .tooLong
                }
                guard start < buffer.count else { return .end }
                let line = Array(buffer[start...])
                start = buffer.count
                return .line(line)
            }
            if !waiting {
                var request = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
                if poll(&request, 1, 0) == 0 { return .wouldWait }
            }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = read(fileDescriptor, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { ended = true; continue }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }
}

/// One line's result, as printed.
struct BatchResult: Encodable {
    var line: Int
    var records: [BatchRecordEntry]?
    var continuationMarker: String?
    var recordName: String?
    var serverErrorCode: String?
    var reason: String?
    var exitCode: Int
}

/// A record in a result: the record, a deleted one, or one a lookup did not find.
enum BatchRecordEntry: Encodable {
    case record(WebServicesRecord)
    case deleted(WebServicesDeletedRecord)
    case notFound(recordName: String, code: String, reason: String)

    private enum Keys: String, CodingKey { case recordName, serverErrorCode, reason }

    func encode(to encoder: Encoder) throws {
        switch self {
        case .record(let record): try record.encode(to: encoder)
        case .deleted(let deletion): try deletion.encode(to: encoder)
        case .notFound(let name, let code, let reason):
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(name, forKey: .recordName)
            try container.encode(code, forKey: .serverErrorCode)
            try container.encode(reason, forKey: .reason)
        }
    }
}

/// A line as read: which request it is.
private struct BatchLineShape: Decodable {
    struct RecordReference: Decodable {
        /// Absent in a create, which names the record itself.
        var recordName: String?
        var recordChangeTag: String?
        var zoneID: WebServicesZoneID?
    }
    struct QueryShape: Decodable {
        var recordType: String
        var filterBy: [WebServicesFilter]?
        var sortBy: [WebServicesSort]?
    }
    var operationType: String?
    var record: RecordReference?
    var zoneID: WebServicesZoneID?
    var query: QueryShape?
    var resultsLimit: Int?
    var continuationMarker: String?
    var records: [RecordReference]?
}

/// The record of a save line, whole.
private struct BatchSaveShape: Decodable {
    var record: WebServicesRecord
}

/// Runs the lines: writes wait in a group until the input pauses, a group
/// is full, or another kind of line comes; then one commit, then their results.
struct BatchRunner {
    let container: Container
    let database: Database
    let defaultZone: String?
    /// Whether a line failed (the command's exit status).
    private(set) var failed = false
    private var pending: [(number: Int, write: BatchWrite)] = []
    static let groupSize = 1_000

    init(container: Container, database: Database, defaultZone: String?) {
        self.container = container
        self.database = database
        self.defaultZone = defaultZone
    }

    var hasPendingWrites: Bool { !pending.isEmpty }

    private enum Parsed {
        case write(BatchWrite)
        case query(Query, Zone.ID, limit: Int, marker: String?)
        case lookup([Record.ID])
    }

    mutating func take(_ text: [UInt8], number: Int) {
        // Blank lines are no requests (JSON lines allow them): skipped, though counted.
        if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
        switch Result(catching: { try parse(text) }) {
        case .success(.write(let write)):
            pending.append((number, write))
            if pending.count >= Self.groupSize { flush() }
        case .success(let other):
            flush()
            emit(answer(other, number: number))
        case .failure(let error):
            flush()
            emit(failure(error, number: number))
        }
    }

    mutating func refuseTooLong(number: Int) {
        flush()
        emit(failure(Self.tooLong, number: number))
    }

    static let tooLong = CLIError.corrupt("the line is longer than \(LineInput.maximumLineLength >> 20) MiB")

    /// Commits the waiting writes and prints their results.
    mutating func flush() {
        guard !pending.isEmpty else { return }
        let group = pending
        pending = []
        let outcomes: [Result<Record?, LatticeError>]
        do {
            outcomes = try database.applyBatch(group.map(\.write))
        } catch {
            // The group's transaction failed as a whole: none of it was written.
            for (number, _) in group { emit(failure(error, number: number)) }
            return
        }
        for ((number, write), outcome) in zip(group, outcomes) { emit(result(of: write, outcome, number: number)) }
    }

    /// `--atomic`: every zone's writes in one transaction, all or none; then
    /// the other lines, and every result in the order of the lines.
    mutating func runAtomically(_ lines: [(number: Int, text: [UInt8]?)]) {
        var results: [Int: BatchResult] = [:]
        var writesByZone: [Zone.ID: [(number: Int, write: BatchWrite)]] = [:]
        var others: [(number: Int, parsed: Parsed)] = []
        for (number, text) in lines {
            guard let text else {
                results[number] = failure(Self.tooLong, number: number)
                continue
            }
            if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            switch Result(catching: { try parse(text) }) {
            case .success(.write(let write)): writesByZone[write.record.recordID.zoneID, default: []].append((number, write))
            case .success(let other): others.append((number, other))
            case .failure(let error): results[number] = failure(error, number: number)
            }
        }
        for (_, writes) in writesByZone.sorted(by: { $0.key.zoneName < $1.key.zoneName }) {
            do {
                let outcomes = try database.applyBatch(writes.map(\.write), atomically: true)
                for ((number, write), outcome) in zip(writes, outcomes) { results[number] = result(of: write, outcome, number: number) }
            } catch {
                for (number, _) in writes { results[number] = failure(error, number: number) }
            }
        }
        for (number, parsed) in others { results[number] = answer(parsed, number: number) }
        for number in results.keys.sorted() { emit(results[number]!) }
    }

    private func zone(_ shape: WebServicesZoneID?) throws -> Zone.ID {
        let named = shape?.zoneID
            ?? defaultZone.map { Zone.ID(zoneName: $0) } ?? .default
        return try library { try database.resolveZoneID(named) }
    }

    private func parse(_ text: [UInt8]) throws -> Parsed {
        let data = Data(text)
        let shape: BatchLineShape = try WebServicesInput.decode(data, what: "a batch line")
        if let type = shape.operationType {
            guard let operation = BatchWrite.Operation(rawValue: type) else {
                throw CLIError.corrupt("operationType \"\(type)\" is none of \(BatchWrite.Operation.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard let reference = shape.record else { throw CLIError.corrupt("an operation needs a \"record\"") }
            let zoneID = try zone(reference.zoneID ?? shape.zoneID)
            let tag = reference.recordChangeTag
            switch operation {
            case .delete, .forceDelete:
                guard let name = reference.recordName else { throw CLIError.corrupt("a \(type) needs the record's \"recordName\"") }
                return .write(BatchWrite(operation, Record(recordType: "_", recordName: name, zoneID: zoneID), tag: tag))
            default:
                let save: BatchSaveShape = try WebServicesInput.decode(data, what: "a record")
                let record = try library {
                    try save.record.record(in: zoneID) { path throws(LatticeError) in try container.importAsset(fileAt: URL(fileURLWithPath: path)) }
                }
                return .write(BatchWrite(operation, record, tag: tag))
            }
        }
        if let query = shape.query {
            let predicate = try library { try WebServicesFilter.predicate(query.filterBy ?? []) }
            let sorts = try library { try (query.sortBy ?? []).map { sort throws(LatticeError) in try sort.sort() } }
            let limit = shape.resultsLimit ?? Database.maximumResults
            guard limit > 0 else { throw CLIError.corrupt("resultsLimit must be at least 1") }
            return .query(Query(recordType: query.recordType, predicate: predicate, sortDescriptors: sorts), try zone(shape.zoneID), limit: limit, marker: shape.continuationMarker)
        }
        if let references = shape.records {
            guard !references.isEmpty else { throw CLIError.corrupt("a lookup needs at least one record") }
            return .lookup(try references.map { reference in
                guard let name = reference.recordName else { throw CLIError.corrupt("a lookup needs each record's \"recordName\"") }
                return Record.ID(recordName: name, zoneID: try zone(reference.zoneID ?? shape.zoneID))
            })
        }
        throw CLIError.corrupt("a batch line is an operation (\"operationType\"), a query (\"query\") or a lookup (\"records\")")
    }

    private func answer(_ parsed: Parsed, number: Int) -> BatchResult {
        do {
            switch parsed {
            case .write:
                preconditionFailure("writes are committed in groups")
            case .query(let query, let zoneID, let limit, let marker):
                let page = try library {
                    if let marker {
                        return try database.records(continuingMatchFrom: try Query.Cursor(stringValue: marker, query: query, zoneID: zoneID), resultsLimit: limit)
                    }
                    return try database.records(matching: query, inZoneWith: zoneID, resultsLimit: limit)
                }
                return BatchResult(line: number, records: page.matchResults.map { .record(WebServicesRecord($0, container: container)) },
                                   continuationMarker: page.queryCursor?.stringValue, exitCode: 0)
            case .lookup(let ids):
                var entries: [BatchRecordEntry] = []
                var missing = false
                for id in ids {
                    switch lookUp(id) {
                    case .success(let record):
                        entries.append(.record(WebServicesRecord(record, container: container)))
                    case .failure(let error) where error.code == .unknownItem:
                        missing = true
                        entries.append(.notFound(recordName: id.recordName, code: error.code.webServicesCode, reason: error.message))
                    case .failure(let error):
                        throw error
                    }
                }
                return BatchResult(line: number, records: entries, exitCode: Int(missing ? ExitStatus.notFound.rawValue : 0))
            }
        } catch {
            return failure(error, number: number)
        }
    }

    private func lookUp(_ id: Record.ID) -> Result<Record, LatticeError> {
        Result { () throws(LatticeError) -> Record in try database.record(for: id) }
    }

    private func result(of write: BatchWrite, _ outcome: Result<Record?, LatticeError>, number: Int) -> BatchResult {
        switch outcome {
        case .success(let record?):
            return BatchResult(line: number, records: [.record(WebServicesRecord(record, container: container))], exitCode: 0)
        case .success(nil):
            return BatchResult(line: number, records: [.deleted(WebServicesDeletedRecord(recordName: write.record.recordID.recordName, zoneID: write.record.recordID.zoneID))], exitCode: 0)
        case .failure(let error):
            var result = failure(error, number: number)
            result.recordName = write.record.recordID.recordName
            return result
        }
    }

    private func failure(_ error: Error, number: Int) -> BatchResult {
        let cliError = (error as? CLIError) ?? (error as? LatticeError).map(CLIError.init) ?? CLIError(.internalError, code: "INTERNAL_ERROR", "\(error)")
        return BatchResult(line: number, serverErrorCode: cliError.code, reason: cliError.message, exitCode: Int(cliError.status.rawValue))
    }

    private mutating func emit(_ result: BatchResult) {
        if result.exitCode != 0 { failed = true }
        Output.json(result)
    }
}
