#if canImport(Glibc)
import Glibc
private let systemSend = Glibc.send
#elseif canImport(Darwin)
import Darwin
private let systemSend = Darwin.send
#endif

/// A plain blocking TCP client that speaks Lattice's framing (a 4-byte
/// big-endian length, then that many bytes) and nothing more, for hostile-peer
/// tests and the flood tool: what it sends is up to its caller.
package final class RawConnection {
    package let fd: Int32

    /// Connects to `host:port` (IPv4), from `source` if given (on loopback,
    /// 127.0.0.2 stands for another host), with a small receive buffer if
    /// asked; sends and receives time out after `timeoutSeconds`.
    package init?(host: String = "127.0.0.1", port: Int, source: String? = nil, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 15) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        let fd = fd
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if let source, Self.withAddress(source, port: 0, { bind(fd, $0, $1) }) != 0 {
            close(fd)
            return nil
        }
        guard Self.withAddress(host, port: port, { connect(fd, $0, $1) }) == 0 else {
            close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// `payload` with its length in front.
    package static func framed(_ payload: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + payload }

    /// Sends all of `bytes`; returns how many went before an error or the send timeout.
    @discardableResult
    package func send(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { systemSend(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    /// Sends one frame; returns how many of its bytes (length included) went.
    @discardableResult
    package func frame(_ payload: [UInt8]) -> Int { send(Self.framed(payload)) }

    /// Reads one frame (nil at end of stream, on timeout, or past `maximum` bytes).
    package func readFrame(maximum: Int = 1 << 21) -> [UInt8]? {
        guard let header = read(4) else { return nil }
        let length = Int(header.reduce(0) { $0 << 8 | UInt32($1) })
        guard length <= maximum else { return nil }
        return read(length)
    }

    package func read(_ count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n <= 0 { return nil }
            got += n
        }
        return out
    }

    /// Whether the server closed the connection within the receive timeout (reads and discards until then).
    package func closedByServer() -> Bool {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &scratch, scratch.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET || errno == EPIPE }
        }
    }

    /// Calls `body` with an IPv4 socket address.
    static func withAddress(_ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}
