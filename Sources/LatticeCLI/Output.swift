import Foundation
import Lattice

/// Everything the CLI prints goes through here: text for people, JSON for scripts.
enum Output {
    /// "1 record", "2 records".
    static func count(_ number: Int, _ noun: String, plural: String? = nil) -> String { "\(number) \(number == 1 ? noun : plural ?? noun + "s")" }

    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func standardError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// One JSON document (or JSON line) with sorted keys, so output is stable.
    static func json<Value: Encodable>(_ value: Value, pretty: Bool = false) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// Columns padded to their widest cell, two spaces apart; the last one is not padded.
    static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    static var standardErrorIsTerminal: Bool { isatty(2) == 1 }

    /// A record in one line per field, for people.
    static func text(_ record: Record) -> String {
        var lines = ["\(record.recordID.zoneID.zoneName)/\(record.recordID.recordName)  type=\(record.recordType)  tag=\(record.recordChangeTag ?? "-")"]
        for key in record.allKeys() {
            lines.append("  \(key): \(FieldDisplay.text(record[key]!))")
        }
        return lines.joined(separator: "\n")
    }
}

/// What a command prints, as one value: its JSON (`--json`) is the value
/// encoded, its text for people is `text`. A command that prints one such
/// value cannot say one thing to people and another to scripts.
protocol CommandOutput: Encodable {
    /// The lines for people, without the last newline; empty for none
    /// (`zone list` of a store without zones prints nothing).
    var text: String { get }
}

extension Output {
    /// Prints `value` as JSON or as its text.
    static func emit(_ value: some CommandOutput, json: Bool) {
        if json { return self.json(value) }
        let text = value.text
        if !text.isEmpty { line(text) }
    }
}
