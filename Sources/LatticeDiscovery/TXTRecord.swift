/// A DNS-SD TXT record (RFC 6763 §6): `key=value` strings, each behind a length byte.
package enum TXTRecord {
    /// Encodes `entries`, keys sorted so the record is stable. An entry longer
    /// than 255 bytes cannot be carried and is refused.
    package static func encode(_ entries: [String: String]) throws(DiscoveryError) -> [UInt8] {
        var bytes: [UInt8] = []
        for key in entries.keys.sorted() {
            let entry = Array("\(key)=\(entries[key]!)".utf8)
            guard !key.isEmpty, !key.contains("="), entry.count <= 255 else {
                throw DiscoveryError(.badTXTRecord, "the TXT entry \(key) is empty, holds '=', or is longer than 255 bytes")
            }
            bytes.append(UInt8(entry.count))
            bytes += entry
        }
        return bytes.isEmpty ? [0] : bytes
    }

    /// Decodes a TXT record from the network. Keys are case-insensitive (lowercased
    /// here) and the first occurrence wins; malformed strings, and any holding a control
    /// character, are skipped, never trusted.
    package static func decode(_ bytes: some Collection<UInt8>) -> [String: String] {
        var entries: [String: String] = [:]
        var rest = bytes[...]
        while let length = rest.first {
            rest = rest.dropFirst()
            guard rest.count >= Int(length) else { break }
            let entry = rest.prefix(Int(length))
            rest = rest.dropFirst(Int(length))
            guard let equals = entry.firstIndex(of: UInt8(ascii: "=")), equals != entry.startIndex,
                  let key = String(validating: entry[..<equals], as: UTF8.self)?.lowercased(),
                  let value = String(validating: entry[entry.index(after: equals)...], as: UTF8.self),
                  entries[key] == nil,
                  // Text from the network ends up on terminals: no control characters.
                  !(key + value).unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { continue }
            entries[key] = value
        }
        return entries
    }
}
