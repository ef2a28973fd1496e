import Foundation
import NIOHTTP1

/// A request as the HTTP surface reads it: whole, its body bounded.
struct WebRequest: Sendable {
    var method: HTTPMethod
    /// The path without its query, percent-decoded segment by segment.
    var pathSegments: [String]
    var query: [String: String]
    var headers: HTTPHeaders
    var body: [UInt8]

    init(head: HTTPRequestHead, body: [UInt8]) {
        method = head.method
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        pathSegments = parts[0].split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        var query: [String: String] = [:]
        if parts.count > 1 {
            for pair in parts[1].split(separator: "&") {
                let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(item[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(item[0])
                let value = item.count > 1 ? (String(item[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(item[1])) : ""
                query[name] = value
            }
        }
        self.query = query
        headers = head.headers
        self.body = body
    }
}

/// What a request gets: a whole body, or an event stream that stays open.
enum WebResponse: Sendable {
    case whole(status: HTTPResponseStatus, contentType: String, body: [UInt8], extraHeaders: [(String, String)] = [])
    case eventStream(EventStreamSource, extraHeaders: [(String, String)] = [])

    static func json(_ value: some Encodable, status: HTTPResponseStatus = .ok) -> WebResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else {
            return .error(WebError(.internalError, "the response could not be written as JSON"))
        }
        return .whole(status: status, contentType: "application/json; charset=utf-8", body: Array(data))
    }

    static func error(_ error: WebError) -> WebResponse {
        var response = json(error.body, status: error.status)
        if error.status == .unauthorized, case .whole(let status, let type, let body, _) = response {
            response = .whole(status: status, contentType: type, body: body, extraHeaders: [("WWW-Authenticate", "Bearer realm=\"lattice\"")])
        }
        return response
    }

    static func text(_ text: String, contentType: String, status: HTTPResponseStatus = .ok) -> WebResponse {
        .whole(status: status, contentType: contentType, body: Array(text.utf8))
    }
}
