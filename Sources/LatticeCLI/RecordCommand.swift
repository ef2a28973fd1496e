import ArgumentParser
import Foundation
import Lattice

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "record", abstract: "Save, get, delete and import records.",
        subcommands: [Save.self, Get.self, Delete.self, Import.self])

    static func print(_ record: Record, container: Container, json: Bool) {
        if json { Output.json(["records": [WebServicesJSON.record(record, container: container)]]) } else { Output.line(Output.text(record)) }
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(
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
            let target = try RecordPath(parsing: path)
            let arguments = try fields.map(FieldArgument.init(parsing:))
            let container = try options.openContainer()
            let database = container.database(with: options.scope)
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
                record[argument.name] = try argument.value(schemaType: defined, container: container)
            }
            let policy: SavePolicy = ifTag != nil ? .ifServerRecordUnchanged : (allKeys ? .allKeys : .changedKeys)
            let saved = try library { try database.save(record, savePolicy: policy) }
            RecordCommand.print(saved, container: container, json: options.json)
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a record.", discussion: "Example: lattice record get Movies/toy-story --json")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String

        func run() throws {
            let target = try RecordPath(parsing: path)
            let container = try options.openContainer()
            let record = try library { try container.database(with: options.scope).record(for: target.recordID) }
            RecordCommand.print(record, container: container, json: options.json)
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a record (and the records that reference it with ref-cascade).",
            discussion: "Example: lattice record delete Movies/toy-story --if-tag 3f9k2")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ZONE/NAME") var path: String
        @Option(name: .customLong("if-tag"), help: "Delete only if the record's change tag is still TAG.") var ifTag: String?

        func run() throws {
            let target = try RecordPath(parsing: path)
            let database = try options.openContainer().database(with: options.scope)
            if let ifTag {
                try library { try database.deleteRecord(withID: target.recordID, ifChangeTag: ifTag) }
            } else {
                try library { try database.deleteRecord(withID: target.recordID) }
            }
            if options.json {
                Output.json(["records": [["recordName": target.recordName, "zoneID": WebServicesJSON.zone(target.zoneID), "deleted": true]]])
            } else {
                Output.line("deleted \(path)")
            }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
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
            let container = try options.openContainer()
            let database = container.database(with: options.scope)
            let zoneID = Zone.ID(zoneName: zone)
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
            var batch: [Record] = []
            var lineNumber = 0
            var batchStartLine = 1
            func flush() throws {
                guard !batch.isEmpty else { return }
                do {
                    _ = try database.modifyRecords(saving: batch, deleting: [], savePolicy: .allKeys, atomically: true)
                } catch {
                    var cli = CLIError(error)
                    let culprit = error.partialErrors.first { $0.value.code != .batchRequestFailed }
                    cli.message = "lines \(batchStartLine)–\(lineNumber): \(culprit.map { "\($0.key): \($0.value.message)" } ?? error.message); \(Output.count(imported, "record")) imported before this batch"
                    throw cli
                }
                imported += batch.count
                batch.removeAll(keepingCapacity: true)
                batchStartLine = lineNumber + 1
                if progress { FileHandle.standardError.write(Data("\rimported \(Output.count(imported, "record"))".utf8)) }
            }
            for line in LineReader(input) {
                lineNumber += 1
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                if trimmed.isEmpty { continue }
                // A bad line fails its whole batch (batches are atomic); earlier batches stay.
                let kept = "\(Output.count(imported, "record")) imported in the batches before line \(batchStartLine); lines \(batchStartLine)–\(lineNumber) were not saved"
                guard let data = trimmed.data(using: .utf8), let object = try? JSONSerialization.jsonObject(with: data) else {
                    throw CLIError.corrupt("line \(lineNumber): not valid JSON; \(kept)")
                }
                do {
                    batch.append(try WebServicesJSON.record(from: object, zoneID: zoneID, container: container))
                } catch var error as CLIError {
                    error.message = "line \(lineNumber): \(error.message); \(kept)"
                    throw error
                }
                if batch.count >= batchSize { try flush() }
            }
            try flush()
            if progress { FileHandle.standardError.write(Data("\n".utf8)) }
            if options.json { Output.json(["imported": imported, "lines": lineNumber]) } else { Output.line("imported \(Output.count(imported, "record")) from \(Output.count(lineNumber, "line"))") }
        }
    }
}

/// Lines of a file handle, read in chunks (imports can be large).
struct LineReader: Sequence, IteratorProtocol {
    let handle: FileHandle
    var buffer = Data()
    var finished = false

    init(_ handle: FileHandle) { self.handle = handle }

    mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                return String(decoding: line, as: UTF8.self)
            }
            if finished {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            // The throwing read: readData(ofLength:) traps on an I/O error.
            let chunk = (try? handle.read(upToCount: 1 << 16)) ?? nil
            if let chunk, !chunk.isEmpty { buffer.append(chunk) } else { finished = true }
        }
    }
}
