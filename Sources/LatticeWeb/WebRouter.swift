import Foundation
import Lattice
import NIOConcurrencyHelpers
import NIOHTTP1

/// Which request is which: authentication, the browser's origin, then the
/// operation the path names. Runs on the server's thread pool (store calls block).
final class WebRouter: Sendable {
    let container: Container
    let api: WebServicesAPI
    let events: EventHub
    let metrics: NodeMetrics
    /// Origins besides the node's own whose pages may call it (CORS); none unless configured.
    let allowedOrigins: Set<String>
    let console: ConsoleAPI
    /// Event streams open now.
    let openStreams = StreamCount()
    /// Tokens as last read from the store, and when: revoking one takes effect within a second.
    private let tokenCache = NIOLockedValueBox<(read: Date, tokens: [HTTPToken])?>(nil)

    /// The names a request's Host may give when the server listens on loopback
    /// (nil: any, when it listens on another address): a page on another
    /// name that resolves to 127.0.0.1 (DNS rebinding) is refused.
    let loopbackHosts: Set<String>?

    init(container: Container, events: EventHub, metrics: NodeMetrics, allowedOrigins: Set<String>, loopbackHosts: Set<String>? = nil) {
        self.loopbackHosts = loopbackHosts
        self.container = container
        api = WebServicesAPI(container: container)
        self.events = events
        self.metrics = metrics
        self.allowedOrigins = allowedOrigins
        console = ConsoleAPI(container: container)
    }

    /// What a request's head alone decides, before its body is read: the
    /// origin and host checks, and the token where the path needs one. A
    /// refusal is the answer to give at once (and close): a client without a
    /// token so never gets a body held in memory. `authenticated`: the request showed a valid token.
    func precheck(_ head: HTTPRequestHead) -> (refusal: WebError?, authenticated: Bool) {
        let request = WebRequest(head: head, body: [])
        do {
            try checkHost(request)
            try checkOrigin(request)
            // A browser's CORS preflight carries no token; it is answered without one (and says nothing).
            guard needsToken(request.pathSegments), request.method != .OPTIONS else { return (nil, false) }
            try authenticate(request)
            return (nil, true)
        } catch {
            return (WebError.from(error), false)
        }
    }

    /// Whether the path's answer needs a token (all but the console's files, the OpenAPI document and the root).
    private func needsToken(_ segments: [String]) -> Bool {
        guard let first = segments.first else { return false }
        return !["console", "openapi.json"].contains(first)
    }

    /// The response to a request, and the operation's name for metrics.
    func respond(to request: WebRequest) -> (operation: String, response: WebResponse) {
        let operation = Self.operationName(request.pathSegments)
        do {
            let response = try route(request, operation: operation)
            return (operation, withCORS(response, request: request))
        } catch let error as WebError {
            return (operation, withCORS(.error(error), request: request))
        } catch let error as LatticeError {
            return (operation, withCORS(.error(WebError(error)), request: request))
        } catch {
            return (operation, .error(WebError(.internalError, "\(error)")))
        }
    }

    /// The path's operation with its variable parts left out (`records/query`, `metrics`), bounded for a metric's label.
    static func operationName(_ segments: [String]) -> String {
        if segments.count >= 6, segments[0] == "database" {
            let name = segments[5...].joined(separator: "/")
            return knownOperations.contains(name) ? name : "unknown"
        }
        let name = segments.joined(separator: "/")
        if segments.first == "console" { return "console" }
        if segments.first == "api", segments.count == 2, ["node", "schema", "record", "query"].contains(segments[1]) { return name }
        return ["", "metrics", "openapi.json"].contains(name) ? (name.isEmpty ? "root" : name) : "unknown"
    }

    /// Event streams at once: each may hold a page of records for a slow reader.
    static let maximumEventStreams = 128

    static let knownOperations: Set<String> = [
        "records/query", "records/lookup", "records/modify", "records/changes", "zones/list", "zones/lookup", "zones/modify",
        "zones/changes", "changes/database", "changes/zone", "users/caller", "events",
    ]

    private func route(_ request: WebRequest, operation: String) throws -> WebResponse {
        try checkHost(request)
        try checkOrigin(request)
        if request.method == .OPTIONS { return .whole(status: .noContent, contentType: "text/plain", body: []) }
        let segments = request.pathSegments
        switch segments.first {
        case nil where (request.headers.first(name: "accept") ?? "").contains("text/html"):
            return .whole(status: .found, contentType: "text/plain", body: [], extraHeaders: [("Location", "/console/")])
        case nil:
            return .text("A Lattice node: CloudKit Web Services at /database/1/{container}/development/{private|shared|public}/… with a token; the API at /openapi.json; the console at /console/.\n", contentType: "text/plain; charset=utf-8")
        case "openapi.json":
            try requireMethod(request, [.GET])
            return .text(OpenAPIDocument.json, contentType: "application/json; charset=utf-8")
        case "metrics":
            try requireMethod(request, [.GET])
            try authenticate(request)
            return .text(metrics.exposition(openEventStreams: openStreams.value), contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "database":
            try authenticate(request)
            return try database(request, segments: segments)
        case "api":
            try authenticate(request)
            switch segments.dropFirst().joined(separator: "/") {
            case "node": try requireMethod(request, [.GET]); return try console.node()
            case "schema": try requireMethod(request, [.GET]); return try console.schema()
            case "record": try requireMethod(request, [.GET]); return try console.record(request)
            case "query": try requireMethod(request, [.POST]); return try console.query(request.body)
            default: throw WebError(.notFound, "no console operation /\(segments.joined(separator: "/"))")
            }
        case "console":
            try requireMethod(request, [.GET])
            guard let file = ConsoleFiles.file(named: segments.dropFirst().joined(separator: "/")) else {
                throw WebError(.notFound, "no console file /\(segments.joined(separator: "/"))")
            }
            return .whole(status: .ok, contentType: file.contentType, body: Array(file.content.utf8),
                          extraHeaders: [("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")])
        default:
            throw WebError(.notFound, "no such path: /\(segments.joined(separator: "/")) (see /openapi.json)")
        }
    }

    private func database(_ request: WebRequest, segments: [String]) throws -> WebResponse {
        guard segments.count >= 6, segments[1] == "1" else {
            throw WebError(.notFound, "paths are /database/1/{container}/{environment}/{database}/{operation}, as in CloudKit Web Services")
        }
        guard segments[2] == container.containerIdentifier else {
            throw WebError(.notFound, "this node serves container \(container.containerIdentifier), not \(segments[2])")
        }
        guard segments[3] == "development" || segments[3] == "production" else {
            throw WebError.badRequest("environment \"\(segments[3])\" is neither development nor production (both name this node's one store)")
        }
        let database = container.database(with: try DatabaseScope(webName: segments[4]))
        let operation = segments[5...].joined(separator: "/")
        let body = request.body
        switch operation {
        case "records/query": try requireMethod(request, [.POST]); return try api.query(body, in: database)
        case "records/lookup": try requireMethod(request, [.POST]); return try api.lookup(body, in: database)
        case "records/modify": try requireMethod(request, [.POST]); return try api.modify(body, in: database)
        case "records/changes": try requireMethod(request, [.POST]); return try api.recordChanges(body, in: database)
        case "changes/zone": try requireMethod(request, [.POST]); return try api.zonesChanges(body, in: database)
        case "changes/database", "zones/changes": try requireMethod(request, [.POST]); return try api.databaseChanges(body, in: database)
        case "zones/list": try requireMethod(request, [.GET, .POST]); return try api.listZones(in: database)
        case "zones/lookup": try requireMethod(request, [.POST]); return try api.lookupZones(body, in: database)
        case "zones/modify": try requireMethod(request, [.POST]); return try api.modifyZones(body, in: database)
        case "users/caller", "users/current": try requireMethod(request, [.GET, .POST]); return try api.caller()
        case "events":
            try requireMethod(request, [.GET])
            guard openStreams.value < Self.maximumEventStreams else {
                throw WebError(.tryAgainLater, "this node has \(Self.maximumEventStreams) event streams open, as many as it takes; try again later")
            }
            return .eventStream(try EventStreamSource(request: request, database: database, hub: events))
        case "subscriptions/list", "subscriptions/lookup", "subscriptions/modify", "tokens/create", "tokens/register", "assets/upload":
            throw WebError(.notFound, "\(operation) is not served yet (README, what is missing); live changes come from GET …/events")
        default:
            throw WebError(.notFound, "no operation \(operation) (see /openapi.json)")
        }
    }

    private func requireMethod(_ request: WebRequest, _ methods: [HTTPMethod]) throws {
        guard methods.contains(request.method) else {
            throw WebError.badRequest("\(request.method.rawValue) is not allowed here; use \(methods.map(\.rawValue).joined(separator: " or "))")
        }
    }

    /// CloudKit's `ckAPIToken` query parameter, or `Authorization: Bearer TOKEN`.
    func authenticate(_ request: WebRequest) throws {
        var presented = request.query["ckAPIToken"]
        if let header = request.headers.first(name: "authorization") {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw WebError(.authenticationFailed, "the Authorization header must be \"Bearer TOKEN\"")
            }
            presented = String(parts[1]).trimmingCharacters(in: .whitespaces)
        }
        guard let presented, !presented.isEmpty else {
            throw WebError(.authenticationRequired, "this node needs a token: ?ckAPIToken=TOKEN or Authorization: Bearer TOKEN (`lattice http token create NAME` makes one)")
        }
        guard try container.httpToken(matching: presented, among: tokens()) != nil else {
            throw WebError(.authenticationFailed, "the token is not one of this node's (`lattice http token list`)")
        }
    }

    private func tokens() throws -> [HTTPToken] {
        if let cached = tokenCache.withLockedValue({ $0 }), Date().timeIntervalSince(cached.read) < 1 { return cached.tokens }
        let tokens = try container.httpTokens()
        tokenCache.withLockedValue { $0 = (Date(), tokens) }
        return tokens
    }

    /// Listening on loopback, the Host must be a loopback name: what a browser
    /// sends for a page that rebinds its own name to 127.0.0.1 is refused.
    private func checkHost(_ request: WebRequest) throws {
        guard request.headers[canonicalForm: "host"].count <= 1 else { throw WebError.badRequest("a request names one Host") }
        guard let allowed = loopbackHosts else { return }
        let host = (request.headers.first(name: "host") ?? "").lowercased()
        let name: Substring
        if host.hasPrefix("[") {
            name = host.prefix { $0 != "]" }.dropFirst()
        } else {
            name = host.split(separator: ":", maxSplits: 1).first ?? ""
        }
        guard allowed.contains(String(name)) else {
            throw WebError(.accessDenied, "this node listens on loopback and answers requests for localhost, 127.0.0.1 or [::1] only, not \"\(host)\"")
        }
    }

    /// A page on another origin may not use the node (its requests carry the
    /// user's token only if that page has it, but no page should be able to
    /// try), unless the node was told to allow it.
    private func checkOrigin(_ request: WebRequest) throws {
        guard let origin = request.headers.first(name: "origin") else { return }
        if let host = request.headers.first(name: "host"), origin == "http://\(host)" { return }
        guard allowedOrigins.contains(origin) else {
            throw WebError(.accessDenied, "requests from pages on \(origin) are not allowed (`lattice serve --http-allow-origin \(origin)` allows them)")
        }
    }

    private func withCORS(_ response: WebResponse, request: WebRequest) -> WebResponse {
        guard let origin = request.headers.first(name: "origin"), allowedOrigins.contains(origin) else { return response }
        let cors = [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                    ("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID"), ("Access-Control-Allow-Methods", "GET, POST, OPTIONS")]
        switch response {
        case .whole(let status, let type, let body, let headers): return .whole(status: status, contentType: type, body: body, extraHeaders: headers + cors)
        case .eventStream(let source, let headers): return .eventStream(source, extraHeaders: headers + cors)
        }
    }
}
