@_spi(Tools) import LatticeCore

/// The wire form of reconciliation messages. Bounds and keys are written as
/// the bytes they share with the one before and the rest: neighbouring record
/// names share most of theirs.
extension SyncMessage {
    /// A key or bound: at most a record name's 255 bytes, and one more for a separator.
    static let maximumKeyLength = 256

    static func write(_ message: ReconcileMessage, into writer: inout BinaryWriter) {
        writer.varint(message.zones.count)
        for zone in message.zones {
            write(zone.zone, into: &writer)
            writer.varint(zone.ranges.count)
            var previous: [UInt8] = []
            for range in zone.ranges {
                let kind: UInt8
                switch range.content {
                case .skip: kind = 0
                case .fingerprint: kind = 1
                case .items: kind = 2
                case .answer: kind = 3
                }
                writer.byte(kind | (range.upper == nil ? 0x80 : 0))
                if let upper = range.upper {
                    writeKey(upper, after: previous, into: &writer)
                    previous = upper
                }
                switch range.content {
                case .skip: break
                case .fingerprint(let print, let count):
                    writer.raw(print.bytes)
                    writer.varint(count)
                case .items(let items): write(items, into: &writer)
                case .answer(let items, let held):
                    write(items, into: &writer)
                    writer.varint(held.count)
                    var byte: UInt8 = 0
                    for (index, bit) in held.enumerated() {
                        if bit { byte |= 1 << (index % 8) }
                        if index % 8 == 7 { writer.byte(byte); byte = 0 }
                    }
                    if held.count % 8 != 0 { writer.byte(byte) }
                }
            }
        }
    }

    static func readReconcile(from reader: inout BinaryReader) throws -> ReconcileMessage {
        let zoneCount = try reader.count(below: SyncWire.maximumZones + 1, "zones in a reconciliation")
        var zones: [ReconcileZone] = []
        for _ in 0..<zoneCount {
            let zone = try readZone(from: &reader)
            let rangeCount = try reader.count(below: Reconciler.maximumRanges + 1, "ranges of a zone")
            guard rangeCount > 0 else { throw ProtocolError.malformed("a zone with no range in a reconciliation") }
            var ranges: [ReconcileRange] = []
            var previous: [UInt8] = []
            for index in 0..<rangeCount {
                let flag = try reader.byte()
                guard flag & 0x7c == 0 else { throw ProtocolError.malformed("unknown reconciliation range flags \(flag)") }
                var upper: [UInt8]?
                if flag & 0x80 == 0 {
                    let key = try readKey(after: previous, from: &reader)
                    guard digestKeyPrecedes(previous, key) || (index == 0 && !key.isEmpty) else {
                        throw ProtocolError.malformed("reconciliation ranges out of order")
                    }
                    upper = key
                    previous = key
                } else if index != rangeCount - 1 {
                    throw ProtocolError.malformed("a reconciliation range after the end of the key space")
                }
                let content: ReconcileRange.Content
                switch flag & 0x03 {
                case 0: content = .skip
                case 1:
                    let print = DigestFingerprint(bytes: Array(try reader.raw(DigestFingerprint.length)))
                    let count = try reader.varint()
                    guard count < 1 << 48 else { throw ProtocolError.malformed("a range count out of range") }
                    content = .fingerprint(print, count: Int(count))
                case 2: content = .items(try readItems(from: &reader))
                default:
                    let items = try readItems(from: &reader)
                    let count = try reader.count(below: Reconciler.maximumListed + 1, "items answered")
                    let bytes = Array(try reader.raw((count + 7) / 8))
                    content = .answer(items: items, held: (0..<count).map { bytes[$0 / 8] & (1 << ($0 % 8)) != 0 })
                }
                ranges.append(ReconcileRange(upper: upper, content: content))
            }
            zones.append(ReconcileZone(zone: zone, ranges: ranges))
        }
        return ReconcileMessage(zones: zones)
    }

    private static func write(_ items: [ShortDigestItem], into writer: inout BinaryWriter) {
        writer.varint(items.count)
        var previous: [UInt8] = []
        for item in items {
            writeKey(item.key, after: previous, into: &writer)
            writer.raw(item.hash)
            previous = item.key
        }
    }

    private static func readItems(from reader: inout BinaryReader) throws -> [ShortDigestItem] {
        let count = try reader.count(below: Reconciler.maximumListed + 1, "items of a range")
        var items: [ShortDigestItem] = []
        var previous: [UInt8] = []
        for _ in 0..<count {
            let key = try readKey(after: previous, from: &reader)
            items.append(ShortDigestItem(key: key, hash: Array(try reader.raw(DigestFingerprint.shortLength))))
            previous = key
        }
        return items
    }

    private static func writeKey(_ key: [UInt8], after previous: [UInt8], into writer: inout BinaryWriter) {
        var shared = 0
        while shared < key.count, shared < previous.count, key[shared] == previous[shared] { shared += 1 }
        writer.varint(shared)
        writer.varint(key.count - shared)
        writer.raw(key[shared...])
    }

    private static func readKey(after previous: [UInt8], from reader: inout BinaryReader) throws -> [UInt8] {
        let shared = try reader.count(below: previous.count + 1, "shared key length")
        let rest = try reader.count(below: maximumKeyLength - shared + 1, "key length")
        return Array(previous.prefix(shared)) + Array(try reader.raw(rest))
    }
}
