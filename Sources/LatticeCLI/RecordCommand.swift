import ArgumentParser
import Foundation
import Lattice

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "record", abstract: "Save, get, delete and import records.",
        subcommands: [Save.self, Get.self, Delete.self, Import.self, History.self, Restore.self])

    static func print(_ record: Record, container: Container, json: Bool) {
        Output.emit(RecordOutput(record: record, container: container), json: json)
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "save",
            abstract: "Save a record: FIELD[:TYPE]=VALUE sets a field.",
            discussion: """
                TYPE: string (default, or the schema's type), int, double, bool, date (ISO 8601), bytes (base64),
                ref, ref-cascade (deleteSelf), location (lat,lon[,alt]), asset (file path), null (remove the field),
                and TYPE-list (comma-separated or a JSON array).
                Without --if-tag the changed fields are written over whatever is stored (changedKeys);
                with --if-tag the save fails (exit 75) unless the record's tag is still TAG.
                Example: lattice record save Movies/toy-story --type Movie title="Toy Story" rating:int=5 tags:string-list=pixar,toys
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Option(name: .customLong("type"), help: "Record type.") var recordType: String
        @Argument(help: "FIELD[:TYPE]=VALUE") var fields: [String] = []
        @Option(name: .customLong("if-tag"), help: "Save only if the record's change tag is still TAG.") var ifTag: String?
        @Flag(name: .customLong("all-keys"), help: "Make these fields the record's whole field set.") var allKeys = false

        func validate() throws {
            if ifTag != nil && allKeys { throw ValidationError("--if-tag and --all-keys cannot be combined") }
            if ifTag?.isEmpty == true { throw ValidationError("--if-tag needs the record's change tag (see `lattice record get`)") }
        }

        func run() throws {
            try Self.save(options.values, path: path, recordType: recordType, fields: fields, ifTag: ifTag, allKeys: allKeys)
        }

        static func save(_ options: StoreOptions, path: String, recordType: String, fields: [String], ifTag: String?, allKeys: Bool) throws {
            let arguments = try fields.map(FieldArgument.init(parsing:))
            let container = try options.openContainer(forOneCommand: true)
            let database = container.database(with: options.scope)
            let target = try RecordPath(parsing: path).resolved(in: database)
            let schema = try library { try container.schema() }
            var record: Record
            if let ifTag {
                record = try library { try database.record(for: target.recordID) }
                guard record.recordChangeTag == ifTag else {
                    throw CLIError(.conflict, code: "CONFLICT", "record \(path) changed: its tag is \(record.recordChangeTag ?? "-"), not \(ifTag); get it again and retry")
                }
                guard record.recordType == recordType else { throw CLIError.corrupt("record \(path) is a \(record.recordType), not a \(recordType)") }
            } else {
                record = Record(recordType: recordType, recordID: target.recordID)
            }
            for argument in arguments {
                let defined = schema.field(argument.name, of: recordType)?.type
                record[argument.name] = try argument.value(schemaType: defined, container: container, zoneName: target.recordID.zoneID.zoneName)
            }
            let policy: SavePolicy = ifTag != nil ? .ifServerRecordUnchanged : (allKeys ? .allKeys : .changedKeys)
            let saved = try library { try database.save(record, savePolicy: policy) }
            RecordCommand.print(saved, container: container, json: options.json)
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a record.", discussion: "Example: lattice record get Movies/toy-story --json")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Flag(name: .customLong("fetch-assets"), help: "Fetch the record's asset content first (see `lattice asset fetch`).") var fetchAssets = false
        @Option(help: "With --fetch-assets: a device to fetch from when no node runs on this store, HOST:PORT.") var peer: [String] = []
        @Option(help: "With --fetch-assets: give up after this many seconds.") var timeout: Double = 600
        @Option(help: "Public database: the record of this creator (the replica `created.deviceID` shows in --json), where several devices created the name.")
        var creator: String?

        @Option(help: "The record as this device held it then: a history token (h42) or a time (ISO 8601, or 10m, 2h, 7d ago).") var at: String?

        func validate() throws {
            if let at { _ = try HistoryPointArgument(parsing: at) }
            if at != nil, fetchAssets || creator != nil { throw ValidationError("--at cannot be combined with --fetch-assets or --creator") }
            if creator != nil, options.scope != .public { throw ValidationError("--creator names a record of the public database (add --database public)") }
            if let creator, Self.replica(creator) == nil { throw ValidationError("--creator \(creator) is not a replica (32 hex digits, as created.deviceID shows in --json)") }
        }

        /// The replica a `--creator` names, by its 32 hex digits.
        static func replica(_ text: String) -> ReplicaID? { ReplicaID(hex: text.lowercased()) }

        func run() throws {
            if let at {
                let container = try options.values.openContainer(forOneCommand: true)
                let database = container.database(with: options.scope)
                let target = try RecordPath(parsing: path).resolved(in: database)
                guard let record = try library({ try database.record(target.recordID, asOf: try HistoryPointArgument(parsing: at).point) }) else {
                    throw CLIError(.notFound, code: "NOT_FOUND", "record \(path) did not exist at \(at)")
                }
                return RecordCommand.print(record, container: container, json: options.json)
            }
            guard fetchAssets else { return try Self.get(options.values, path: path, creator: creator.flatMap(Self.replica)) }
            let container = try options.openContainer()
            let record = try Self.read(path, creator: creator.flatMap(Self.replica), in: container.database(with: options.scope))
            if let assets = try? AssetCommand.assets(of: record, field: nil, path: path) {
                try AssetCommand.fetch(assets.map(\.asset), container: container, options: options, peers: try parsePeers(peer), timeout: timeout)
            }
            RecordCommand.print(record, container: container, json: options.json)
        }

        static func get(_ options: StoreOptions, path: String, creator: ReplicaID? = nil) throws {
            let container = try options.openContainer(forOneCommand: true)
            RecordCommand.print(try read(path, creator: creator, in: container.database(with: options.scope)), container: container, json: options.json)
        }

        private static func read(_ path: String, creator: ReplicaID? = nil, in database: Database) throws -> Record {
            let target = try RecordPath(parsing: path).resolved(in: database)
            let id = creator.map { Record.ID(recordName: target.recordName, createdBy: $0, zoneID: target.zoneID) } ?? target.recordID
            return try library { try database.record(for: id) }
        }
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "history",
            abstract: "List a record's versions: each field's old and new value, its writer, when, and conflicts.",
            discussion: "Example: lattice record history Movies/toy-story")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String

        func run() throws {
            let database = try options.values.openContainer(forOneCommand: true).database(with: options.scope)
            let target = try RecordPath(parsing: path).resolved(in: database)
            let versions = try library { try database.recordHistory(target.recordID) }
            Output.emit(RecordHistoryOutput(versions: versions), json: options.json)
        }
    }

    struct Restore: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "restore",
            abstract: "Write a record's values as of an earlier time as a new write (the past is not rewritten).",
            discussion: """
                The values the record had then are saved as its whole field set, a write that syncs like any
                other and wins as the latest; a record that did not exist then is deleted.
                Example: lattice record restore Movies/toy-story --to 2h
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Option(help: "A history token (h42) or a time (ISO 8601, or 10m, 2h, 7d ago).") var to: String

        func validate() throws { _ = try HistoryPointArgument(parsing: to) }

        func run() throws {
            let container = try options.values.openContainer(forOneCommand: true)
            let database = container.database(with: options.scope)
            let target = try RecordPath(parsing: path).resolved(in: database)
            if let record = try library({ try database.restore(target.recordID, to: try HistoryPointArgument(parsing: to).point) }) {
                RecordCommand.print(record, container: container, json: options.json)
            } else {
                Output.emit(RecordDeleted(deleted: WebServicesDeletedRecord(recordName: target.recordName, zoneID: target.zoneID), pathAsNamed: path), json: options.json)
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a record (and the records that reference it with ref-cascade).",
            discussion: "Example: lattice record delete Movies/toy-story --if-tag 3f9k2")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Option(name: .customLong("if-tag"), help: "Delete only if the record's change tag is still TAG.") var ifTag: String?

        func run() throws {
            let database = try options.openContainer(forOneCommand: true).database(with: options.scope)
            let target = try RecordPath(parsing: path).resolved(in: database)
            if let ifTag {
                try library { try database.deleteRecord(withID: target.recordID, ifChangeTag: ifTag) }
            } else {
                try library { try database.deleteRecord(withID: target.recordID) }
            }
            Output.emit(RecordDeleted(deleted: WebServicesDeletedRecord(recordName: target.recordName, zoneID: target.zoneID), pathAsNamed: path), json: options.json)
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "import",
            abstract: "Import JSON lines of record dictionaries (atomic per batch).",
            discussion: """
                Each line is a CloudKit Web Services record: {"recordName":"m1","recordType":"Movie","fields":{"title":{"value":"Up","type":"STRING"}}}.
                Lines are saved in atomic batches; on a bad line the batches before it stay and the error names the line.
                Example: lattice record import Movies movies.jsonl
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Zone to import into.") var zone: String
        @Argument(help: "File of JSON lines, or - for standard input.") var file: String = "-"
        @Option(help: "Records per atomic batch.") var batchSize: Int = 1000

        func validate() throws {
            guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1") }
        }

        func run() throws {
            let container = try options.openContainer(forOneCommand: true)
            let database = container.database(with: options.scope)
            let zoneID = try library { try database.resolveZoneID(Zone.ID(zoneName: zone)) }
            let input: FileHandle
            if file == "-" {
                input = FileHandle.standardInput
            } else {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                      let handle = FileHandle(forReadingAtPath: file) else {
                    throw CLIError(.notFound, code: "NOT_FOUND", "cannot read \(file): no such file")
                }
                input = handle
            }
            guard try library({ try database.allRecordZones() }).contains(where: { $0.zoneID == zoneID }) else {
                throw CLIError(.notFound, code: "ZONE_NOT_FOUND", "zone \(zone) does not exist; create it with `lattice zone create \(zone)`")
            }
            let progress = Output.standardErrorIsTerminal && !options.json
            var imported = 0
            // Lines are parsed on a second thread while batches are written:
            // JSON decoding and SQLite each take about half the time.
            let batches = ImportBatches(input: input, zoneID: zoneID, container: container, batchSize: batchSize)
            let kept = { (first: Int, last: Int) in
                "\(Output.count(imported, "record")) imported in the batches before line \(first); lines \(first)–\(last) were not saved"
            }
            var lineCount = 0
            loop: while true {
                switch batches.next() {
                case .batch(let batch, let firstLine, let lastLine):
                    do {
                        _ = try database.modifyRecords(saving: batch, deleting: [], savePolicy: .allKeys, atomically: true)
                    } catch {
                        batches.cancel()
                        var cli = CLIError(error)
                        let culprit = error.partialErrors.first { $0.value.code != .batchRequestFailed }
                        cli.message = "lines \(firstLine)–\(lastLine): \(culprit.map { "\($0.key): \($0.value.message)" } ?? error.message); \(Output.count(imported, "record")) imported before this batch"
                        throw cli
                    }
                    imported += batch.count
                    if progress { FileHandle.standardError.write(Data("\rimported \(Output.count(imported, "record"))".utf8)) }
                case .badLine(var error, let batchStartLine, let line):
                    error.message = "line \(line): \(error.message); \(kept(batchStartLine, line))"
                    throw error
                case .end(let lines):
                    lineCount = lines
                    break loop
                }
            }
            if progress { FileHandle.standardError.write(Data("\n".utf8)) }
            Output.emit(ImportOutput(imported: imported, lines: lineCount), json: options.json)
        }
    }
}

/// What `record get` and `record save` print: the record, and where its
/// assets' content is. Its JSON is `{"records": [record]}`, as CloudKit's.
struct RecordOutput: CommandOutput {
    var record: Record
    /// Where the record's asset content is (`downloadURL`).
    var container: Container

    func encode(to encoder: Encoder) throws {
        try RecordsOutput(records: [WebServicesRecord(record, container: container)]).encode(to: encoder)
    }

    /// The record's fields, then where each asset's content stands: here, or still to come from a peer.
    var text: String {
        var lines = [Output.text(record)]
        for field in record.allKeys() {
            var assets: [AssetReference] = []
            if case .asset(let asset)? = record[field] { assets = [asset] }
            if case .list(let items)? = record[field] { for case .asset(let asset) in items { assets.append(asset) } }
            for asset in assets {
                if let url = container.fileURL(for: asset) {
                    lines.append("  \(field): content at \(url.path)")
                } else {
                    lines.append("  \(field): content not here yet (`lattice asset fetch \(record.recordID.zoneID.zoneName)/\(record.recordID.recordName) \(field)`)")
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// What `record delete` prints. Its JSON is `{"records": [deletion]}`, as CloudKit's.
struct RecordDeleted: CommandOutput {
    var deleted: WebServicesDeletedRecord
    /// The record as the command line named it, which people are shown.
    var pathAsNamed: String

    func encode(to encoder: Encoder) throws { try RecordsOutput(records: [deleted]).encode(to: encoder) }

    var text: String { "deleted \(pathAsNamed)" }
}

/// Batches of records parsed from JSON lines on a thread of their own, at
/// most two ahead of the writer, so memory stays bounded whatever the input.
final class ImportBatches: @unchecked Sendable {
    enum Item {
        case batch([Record], firstLine: Int, lastLine: Int)
        /// A line that is not a record: the batch it was in is dropped.
        case badLine(CLIError, batchStartLine: Int, line: Int)
        case end(lines: Int)
    }

    private let condition = NSCondition()
    private var items: [Item] = []
    private var cancelled = false
    private static let ahead = 2

    init(input: FileHandle, zoneID: Zone.ID, container: Container, batchSize: Int) {
        let thread = Thread { [self] in
            var batch: [Record] = []
            var lineNumber = 0
            var batchStartLine = 1
            for line in LineReader(input) {
                lineNumber += 1
                let trimmed = line.trimmingJSONWhitespace
                if trimmed.isEmpty { continue }
                do {
                    // A bad line fails its whole batch (batches are atomic); earlier batches stay.
                    batch.append(try WebServicesInput.record(Data(trimmed), zoneID: zoneID, container: container))
                } catch let error as CLIError {
                    put(.badLine(error, batchStartLine: batchStartLine, line: lineNumber))
                    return
                } catch {
                    put(.badLine(CLIError.corrupt("\(error)"), batchStartLine: batchStartLine, line: lineNumber))
                    return
                }
                if batch.count >= batchSize {
                    guard put(.batch(batch, firstLine: batchStartLine, lastLine: lineNumber)) else { return }
                    batch.removeAll(keepingCapacity: true)
                    batchStartLine = lineNumber + 1
                }
            }
            if !batch.isEmpty { guard put(.batch(batch, firstLine: batchStartLine, lastLine: lineNumber)) else { return } }
            put(.end(lines: lineNumber))
        }
        thread.start()
    }

    /// Waits while the writer is `ahead` batches behind; false once cancelled.
    @discardableResult
    private func put(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= Self.ahead && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    func next() -> Item {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty { condition.wait() }
        condition.broadcast()
        return items.removeFirst()
    }

    /// The writer stopped: the reader stops at its next batch.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }
}

/// The lines of a file as bytes, read in 64 KiB chunks.
struct LineReader: Sequence, IteratorProtocol {
    let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var finished = false

    init(_ handle: FileHandle) { self.handle = handle }

    mutating func next() -> ArraySlice<UInt8>? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                defer { start = newline + 1 }
                return buffer[start..<newline]
            }
            if finished {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return buffer[start...]
            }
            // The throwing read: readData(ofLength:) traps on an I/O error.
            let chunk = (try? handle.read(upToCount: 1 << 16)) ?? nil
            buffer.removeSubrange(0..<start)
            start = 0
            if let chunk, !chunk.isEmpty { buffer.append(contentsOf: chunk) } else { finished = true }
        }
    }
}

extension ArraySlice<UInt8> {
    /// Without leading and trailing ASCII whitespace (JSON's: space, tab, CR, LF).
    var trimmingJSONWhitespace: ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        return self[first...last]
    }
}

/// What `record import` prints.
struct ImportOutput: CommandOutput {
    var imported: Int
    var lines: Int

    var text: String { "imported \(Output.count(imported, "record")) from \(Output.count(lines, "line"))" }
}

/// What `record history` prints: one line per field version, oldest first.
struct RecordHistoryOutput: CommandOutput {
    struct Version: Encodable {
        var token: String
        var transactionIdentifier: String
        var author: String
        var storedAt: String
        /// The writer's clock when it wrote: ISO 8601 and the counter (`MILLISECONDS.COUNTER` in the text).
        var stamp: String
        var kind: String
        var field: String?
        var oldValue: WebServicesField?
        var newValue: WebServicesField?
        var lost: Bool
        var conflicted: Bool
    }
    var versions: [Version]

    init(versions list: [RecordVersion]) {
        versions = list.map { version in
            Version(token: version.token.description, transactionIdentifier: version.transactionIdentifier, author: version.author,
                    storedAt: ISO8601Milliseconds.format(Int64(version.storedAt.timeIntervalSince1970 * 1000)),
                    stamp: "\(ISO8601Milliseconds.format(version.stampMilliseconds)) #\(version.stampCounter)", kind: version.kind.rawValue,
                    field: version.field, oldValue: version.oldValue.map { WebServicesField($0) }, newValue: version.newValue.map { WebServicesField($0) },
                    lost: version.lost, conflicted: version.conflicted)
        }
    }

    var text: String {
        versions.map { version in
            func shown(_ field: WebServicesField?) -> String {
                guard let field, let data = try? JSONEncoder().encode(field.value) else { return "-" }
                return String(decoding: data, as: UTF8.self)
            }
            let change = version.field.map { "\($0): \(shown(version.oldValue)) -> \(shown(version.newValue))" } ?? ""
            let notes = version.lost ? " (lost, conflict)" : version.conflicted ? " (conflict)" : ""
            return "\(version.token)  \(version.storedAt)  \(version.kind)  \(change)\(notes)  by \(version.author.prefix(12)) at \(version.stamp)"
        }.joined(separator: "\n")
    }
}
