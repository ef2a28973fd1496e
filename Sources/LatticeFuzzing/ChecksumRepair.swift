@_spi(Tools) import LatticeCore

/// Rewrites the frame checksums of a (mutated) change set so they match its
/// bytes. A lying peer can compute checksums too: this is what lets the
/// fuzzer past them, into the decoders and the merge.
package enum ChecksumRepair {
    package static func repaired(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        var start = 0
        // A bundle holds several change sets, each opening with "LTCS" and a version.
        while start + 5 <= bytes.count, Array(bytes[start..<start + 4]) == Array("LTCS".utf8) {
            var chain: UInt32 = bytes[start + 4] >= 2 ? bytes[start..<start + 5].withUnsafeBufferPointer { CRC32C.checksum(UnsafeBufferPointer(rebasing: $0[...]), seed: 0) } : 0
            var offset = start + 5
            while offset + 5 <= bytes.count {
                let length = Int(UInt32(bytes[offset + 1]) | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3]) << 16 | UInt32(bytes[offset + 4]) << 24)
                let end = offset + 5 + length
                guard end + 4 <= bytes.count else { return bytes }
                chain = bytes[offset..<end].withUnsafeBufferPointer { CRC32C.checksum(UnsafeBufferPointer(rebasing: $0[...]), seed: chain) }
                for index in 0..<4 { bytes[end + index] = UInt8(truncatingIfNeeded: chain >> UInt32(8 * index)) }
                let kind = bytes[offset]
                offset = end + 4
                if kind == 3 { break }
            }
            start = offset
        }
        return bytes
    }
}
