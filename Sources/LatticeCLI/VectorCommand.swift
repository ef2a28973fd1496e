import ArgumentParser
import Foundation
import Lattice

struct VectorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "vector", abstract: "Print this store's version vectors (what to ask a bundle for).",
        discussion: "Example: lattice vector --json > have.json")
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let container = try options.openContainer()
        let keys = try library { try container.allZoneKeys() }
        let vectors = try keys.map { key in (key, try library { try container.vector(for: key) }) }
        Output.emit(VectorOutput(vectors: vectors), json: options.json)
    }
}

/// What `vector` prints: each zone's version vector. Its JSON is a vector
/// file, what `bundle create --since` reads.
struct VectorOutput: CommandOutput {
    var vectors: [(ZoneKey, VersionVector)]

    func encode(to encoder: Encoder) throws { try VersionVectorFile(vectors).encode(to: encoder) }

    /// A line per zone: each replica (its first 8 hex digits) and its time.
    var text: String {
        vectors.map { key, vector in "\(key): " + vector.entries.map { "\($0.replica.description.prefix(8))=\($0.time)" }.joined(separator: " ") }
            .joined(separator: "\n")
    }
}

/// A bundle file: `"LTBN"`, a version byte and (from version 2) the number
/// of change sets as 4 bytes little-endian, then one change set per zone. The
/// header tells a bundle (even one with no zones) from an empty or foreign
/// file, and the count a bundle cut between two change sets from a whole one.
