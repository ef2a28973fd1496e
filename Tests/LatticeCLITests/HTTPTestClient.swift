import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain HTTP/1.1 client over a TCP socket: what a test needs to send
/// exactly the bytes it means (a half request, a lying header) and to read an event stream.
final class HTTPTestClient: @unchecked Sendable {
    let port: Int
    let fd: Int32
    private let lock = NSLock()
    private var received: [UInt8] = []
    private var ended = false

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        var text: String { String(decoding: body, as: UTF8.self) }
        var errorCode: String? { json["serverErrorCode"] as? String }
    }

    init(port: Int) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { break }
                lock.withLock { received += chunk[0..<count] }
            }
            lock.withLock { ended = true }
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Everything received so far, as text.
    var receivedText: String { lock.withLock { String(decoding: received, as: UTF8.self) } }
    var isClosedByServer: Bool { lock.withLock { ended } }

    /// Waits up to `seconds` for the server to answer one whole response (and to close, without keep-alive).
    func response(within seconds: Double = 20) -> Response? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let response = lock.withLock({ Self.parse(received, ended: ended) }) { return response }
            usleep(2_000)
        }
        return nil
    }

    static func parse(_ bytes: [UInt8], ended: Bool) -> Response? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let split = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[0..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = head[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = Array(bytes[(split + 4)...])
        if let length = headers["content-length"].flatMap(Int.init) {
            guard body.count >= length else { return nil }
            return Response(status: status, headers: headers, body: Array(body.prefix(length)))
        }
        return ended ? Response(status: status, headers: headers, body: body) : nil
    }

    /// One request on a new connection: `path` with the token as a bearer header (none when nil).
    static func request(port: Int, _ method: String = "POST", _ path: String, json: String? = nil, token: String?, headers: [String: String] = [:]) throws -> Response {
        let client = try HTTPTestClient(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\n" + (headers["Host"] == nil ? "Host: 127.0.0.1:\(port)\r\n" : "") + "Connection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let body = Array((json ?? "").utf8)
        if json != nil { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        client.send(Array((head + "\r\n").utf8) + body)
        guard let response = client.response() else { throw POSIXError(.ETIMEDOUT) }
        return response
    }
}
