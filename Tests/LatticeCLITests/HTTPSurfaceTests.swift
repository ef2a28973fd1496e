import Foundation
import LatticeTestSupport
import Testing

/// `lattice serve --http`: CloudKit Web Services, the event stream and
/// /metrics of real nodes, through sockets, checked against the CLI's view of the same stores.
@Suite(.serialized) struct HTTPSurfaceTests {
    let cli = CLI()

    /// A store with zone Movies, a token, and a node serving HTTP on it.
    func node(_ store: String, peers: [Int] = [], extra: [String] = []) throws -> (node: NodeProcess, port: Int, token: String) {
        let token = try cli.ok(["http", "token", "create", "tests"], store: store).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let node = try NodeProcess(cli: cli, store: store, peers: peers, extra: ["--http", "0"] + extra)
        var port = 0
        #expect(eventuallyBlocking(10) { port = node.httpPort ?? 0; return port > 0 }, "the node did not say where HTTP listens")
        return (node, port, token)
    }

    func initStore(_ name: String) throws -> String {
        try cli.ok(["init"], store: name)
        return try cli.ok(["id"], store: name).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let base = "/database/1/default/development"

    func post(_ port: Int, _ operation: String, _ json: String, token: String?, database: String = "private") throws -> HTTPTestClient.Response {
        try HTTPTestClient.request(port: port, "POST", "\(Self.base)/\(database)/\(operation)", json: json, token: token)
    }

    func records(_ response: HTTPTestClient.Response) -> [[String: Any]] { response.json["records"] as? [[String: Any]] ?? [] }

    @Test func webServicesAnswerAsTheCLISeesTheStore() throws {
        defer { cli.cleanup() }
        _ = try initStore("a")
        let (node, port, token) = try node("a")
        defer { node.stop() }

        let zone = try post(port, "zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Movies"}}}]}"#, token: token)
        #expect(zone.status == 200)
        #expect(try cli.ok(["zone", "list", "--json"]).stdout.contains("Movies"))

        let created = try post(port, "records/modify", #"""
            {"zoneID":{"zoneName":"Movies"},"operations":[
              {"operationType":"create","record":{"recordName":"toy","recordType":"Movie","fields":{"title":{"value":"Toy Story"},"rating":{"value":5,"type":"INT64"},"score":{"value":8.3,"type":"DOUBLE"},"released":{"value":816998400000,"type":"TIMESTAMP"},"tags":{"value":["pixar","cgi"],"type":"STRING_LIST"},"place":{"value":{"latitude":37.8,"longitude":-122.2},"type":"LOCATION"}}}},
              {"operationType":"create","record":{"recordName":"up","recordType":"Movie","fields":{"title":{"value":"Up"},"rating":{"value":4}}}},
              {"operationType":"create","record":{"recordName":"cars","recordType":"Movie","fields":{"title":{"value":"Cars"},"rating":{"value":3}}}}]}
            """#, token: token)
        #expect(created.status == 200)
        #expect(records(created).map { $0["recordName"] as? String } == ["toy", "up", "cars"])

        // The same query through HTTP and through the CLI: the same dictionaries.
        let query = try post(port, "records/query", #"{"zoneID":{"zoneName":"Movies"},"query":{"recordType":"Movie","filterBy":[{"fieldName":"rating","comparator":"GREATER_THAN_OR_EQUALS","fieldValue":{"value":4}}],"sortBy":[{"fieldName":"rating","ascending":false}]}}"#, token: token)
        let viaCLI = try cli.ok(["query", "Movie", "--zone", "Movies", "--where", "rating >= 4", "--sort", "-rating", "--json"]).json["records"] as? [[String: Any]] ?? []
        #expect(query.status == 200)
        #expect(records(query).map { $0["recordName"] as? String } == ["toy", "up"])
        #expect(NSArray(array: records(query)).isEqual(to: viaCLI), "HTTP and the CLI disagree on the query's records")

        // Pages: resultsLimit and continuationMarker.
        let first = try post(port, "records/query", #"{"zoneID":{"zoneName":"Movies"},"resultsLimit":2,"query":{"recordType":"Movie","sortBy":[{"fieldName":"title"}]}}"#, token: token)
        let marker = try #require(first.json["continuationMarker"] as? String)
        let second = try post(port, "records/query", #"{"zoneID":{"zoneName":"Movies"},"resultsLimit":2,"continuationMarker":"\#(marker)","query":{"recordType":"Movie","sortBy":[{"fieldName":"title"}]}}"#, token: token)
        #expect(records(first).map { $0["recordName"] as? String } == ["cars", "toy"])
        #expect(records(second).map { $0["recordName"] as? String } == ["up"] && second.json["continuationMarker"] == nil)

        // desiredKeys and numbersAsStrings.
        let shaped = try post(port, "records/lookup", #"{"zoneID":{"zoneName":"Movies"},"records":[{"recordName":"toy"},{"recordName":"missing"}],"desiredKeys":["rating","score"],"numbersAsStrings":true}"#, token: token)
        let toy = records(shaped)[0]["fields"] as? [String: [String: Any]] ?? [:]
        #expect(Set(toy.keys) == ["rating", "score"])
        #expect(toy["rating"]?["value"] as? String == "5" && toy["score"]?["value"] as? String == "8.3")
        #expect(records(shaped)[1]["serverErrorCode"] as? String == "NOT_FOUND")

        // Change lists: the same records and the same token as `lattice changes`.
        let changes = try post(port, "records/changes", #"{"zoneID":{"zoneName":"Movies"}}"#, token: token)
        let cliChanges = try cli.ok(["changes", "Movies", "--json"]).json
        #expect(changes.json["syncToken"] as? String == cliChanges["syncToken"] as? String)
        #expect(Set(records(changes).compactMap { $0["recordName"] as? String }) == ["toy", "up", "cars"])
        let zones = try post(port, "changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Movies"},"syncToken":"\#(cliChanges["syncToken"] as? String ?? "")"},{"zoneID":{"zoneName":"Nope"}}]}"#, token: token)
        let zoneEntries = zones.json["zones"] as? [[String: Any]] ?? []
        #expect((zoneEntries.first?["records"] as? [Any])?.isEmpty == true)
        #expect(zoneEntries.last?["serverErrorCode"] as? String == "ZONE_NOT_FOUND")

        // A stale tag is a CONFLICT carrying the stored record; atomic zones apply all or nothing.
        let tag = try #require(records(query)[0]["recordChangeTag"] as? String)
        try cli.ok(["record", "save", "Movies/toy", "--type", "Movie", "title=Toy Story (1995)"])
        let stale = try post(port, "records/modify", #"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"coco","recordType":"Movie","fields":{"title":{"value":"Coco"}}}},{"operationType":"update","record":{"recordName":"toy","recordType":"Movie","recordChangeTag":"\#(tag)","fields":{"title":{"value":"Mine"}}}}]}"#, token: token)
        #expect(records(stale).map { $0["serverErrorCode"] as? String } == ["ATOMIC_ERROR", "CONFLICT"])
        #expect(((records(stale)[1]["serverRecord"] as? [String: Any])?["fields"] as? [String: [String: Any]])?["title"]?["value"] as? String == "Toy Story (1995)")
        #expect(try cli.run(["record", "get", "Movies/coco"]).status != 0, "an atomic batch with a failed write applied another")
        let partial = try post(port, "records/modify", #"{"zoneID":{"zoneName":"Movies"},"atomic":false,"operations":[{"operationType":"create","record":{"recordName":"coco","recordType":"Movie","fields":{"title":{"value":"Coco"}}}},{"operationType":"update","record":{"recordName":"toy","recordType":"Movie","recordChangeTag":"\#(tag)","fields":{"title":{"value":"Mine"}}}}]}"#, token: token)
        #expect(records(partial)[0]["recordName"] as? String == "coco" && records(partial)[0]["serverErrorCode"] == nil)
        #expect(try cli.ok(["record", "get", "Movies/coco", "--json"]).stdout.contains("Coco"))

        // A delete, seen by the CLI; database changes list the zone.
        let before = try post(port, "changes/database", "{}", token: token).json["syncToken"] as? String ?? ""
        #expect(try post(port, "records/modify", #"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"forceDelete","record":{"recordName":"cars"}}]}"#, token: token).status == 200)
        #expect(try cli.run(["record", "get", "Movies/cars"]).status != 0)
        let changed = try post(port, "changes/database", #"{"syncToken":"\#(before)"}"#, token: token).json["zones"] as? [[String: Any]] ?? []
        #expect(changed.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String } == ["Movies"])

        // Zones, the caller, the other databases.
        let listed = try HTTPTestClient.request(port: port, "GET", "\(Self.base)/private/zones/list", token: token).json["zones"] as? [[String: Any]] ?? []
        #expect(listed.compactMap { ($0["zoneID"] as? [String: Any])?["zoneName"] as? String } == ["_defaultZone", "Movies"])
        let lookedUp = try post(port, "zones/lookup", #"{"zones":[{"zoneName":"Movies"},{"zoneName":"Nope"}]}"#, token: token).json["zones"] as? [[String: Any]] ?? []
        #expect(lookedUp.map { $0["serverErrorCode"] as? String } == [nil, "ZONE_NOT_FOUND"])
        let caller = try HTTPTestClient.request(port: port, "GET", "\(Self.base)/private/users/caller", token: token).json
        #expect(caller["userRecordName"] as? String == (try cli.ok(["id", "--json"]).json["accountID"] as? String))
        #expect(try post(port, "records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"notice","recordType":"Notice","fields":{"text":{"value":"hello"}}}}]}"#, token: token, database: "public").status == 200)
        #expect(try cli.ok(["query", "Notice", "--database", "public", "--json"]).stdout.contains("hello"))
        #expect(try HTTPTestClient.request(port: port, "GET", "\(Self.base)/shared/zones/list", token: token).status == 200)

        // The OpenAPI document the node publishes is the one checked in (scripts/web-assets.py writes both).
        let published = try HTTPTestClient.request(port: port, "GET", "/openapi.json", token: nil)
        let checkedIn = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/openapi.json")
        let document = Array(try Data(contentsOf: checkedIn))
        #expect(published.status == 200 && published.body == document, "docs/openapi.json differs from what the node serves: run scripts/web-assets.py")
        // So is the console; its data comes from /api/…, which needs the token.
        let root = checkedIn.deletingLastPathComponent().deletingLastPathComponent()
        for (path, file) in [("/console/", "console/index.html"), ("/console/console.js", "console/console.js"), ("/console/console.css", "console/console.css")] {
            let served = try HTTPTestClient.request(port: port, "GET", path, token: nil)
            let content = Array(try Data(contentsOf: root.appendingPathComponent(file)))
            #expect(served.status == 200 && served.body == content, "\(path) is not \(file): run scripts/web-assets.py")
            #expect(served.headers["content-security-policy"]?.contains("default-src 'self'") == true)
        }
        #expect(try HTTPTestClient.request(port: port, "GET", "/api/node", token: nil).status == 401)
        let detail = try HTTPTestClient.request(port: port, "GET", "/api/record?zone=Movies&name=toy", token: token).json
        #expect((detail["fieldWrites"] as? [[String: Any]])?.contains { $0["field"] as? String == "title" } == true)
    }

    @Test func refusedRequestsGetCloudKitErrorsAndChangeNothing() throws {
        defer { cli.cleanup() }
        _ = try initStore("a")
        try cli.ok(["zone", "create", "Movies"])
        try cli.ok(["record", "save", "Movies/up", "--type", "Movie", "title=Up", "rating:int=4"])
        let (node, port, token) = try node("a", extra: ["--http-request-timeout", "1", "--http-allow-origin", "https://app.example", "--http-max-connections", "6"])
        defer { node.stop() }
        let before = try cli.snapshot()
        let path = "\(Self.base)/private/records/modify"

        let anonymous = try HTTPTestClient.request(port: port, "POST", path, json: "{}", token: nil)
        #expect(anonymous.status == 401 && anonymous.errorCode == "AUTHENTICATION_REQUIRED" && anonymous.json["uuid"] is String && anonymous.json["reason"] is String)
        #expect(anonymous.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        #expect(try HTTPTestClient.request(port: port, "POST", path, json: "{}", token: "lattice_wrong").errorCode == "AUTHENTICATION_FAILED")
        #expect(try HTTPTestClient.request(port: port, "GET", "/metrics", token: nil).status == 401)
        #expect(try HTTPTestClient.request(port: port, "GET", "\(Self.base)/private/zones/list?ckAPIToken=\(token)", token: nil).status == 200)

        let refused: [(String, String)] = [
            ("{\"operations\":", "BAD_REQUEST"),
            ("[]", "BAD_REQUEST"),
            (#"{"operations":[],"extra":1}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"title":{"value":"X"}},"colour":"red"}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"title":{"value":"X","kind":"y"}}}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":7}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"rating":{"value":"five","type":"INT64"}}}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"upsert","record":{"recordName":"x","recordType":"Movie"}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x"}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"file":{"value":"/etc/passwd","type":"ASSETID"}}}}]}"#, "BAD_REQUEST"),
            (#"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie"}},{"operationType":"launch","record":{"recordName":"y"}}]}"#, "BAD_REQUEST"),
            (#"{"operations":[],"operations":[]}"#, "BAD_REQUEST"),
            (#"{"zoneID":{"zoneName":"Movies"},"zoneID":{"zoneName":"Nope"},"operations":[{"operationType":"forceDelete","record":{"recordName":"up"}}]}"#, "BAD_REQUEST"),
            (#"{"zoneID":{"zoneName":"Movies\u0000x"},"operations":[{"operationType":"forceDelete","record":{"recordName":"up"}}]}"#, "BAD_REQUEST"),
            (#"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"r":{"value":{"recordName":"up","zoneID":{"zoneName":"Other"}},"type":"REFERENCE"}}}}]}"#, "BAD_REQUEST"),
            (#"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"x","recordType":"Movie","fields":{"r":{"value":{"recordName":"up","action":"BOGUS"},"type":"REFERENCE"}}}}]}"#, "BAD_REQUEST"),
            ("{\"operations\":[" + Array(repeating: #"{"operationType":"forceDelete","record":{"recordName":"up"}}"#, count: 401).joined(separator: ",") + "]}", "LIMIT_EXCEEDED"),
        ]
        for (body, code) in refused {
            let response = try HTTPTestClient.request(port: port, "POST", path, json: body, token: token)
            #expect(response.errorCode == code && response.status >= 400, "\(body.prefix(120)) got \(response.status) \(response.text.prefix(200))")
        }
        #expect(try post(port, "records/query", #"{"query":{"recordType":"Movie"},"resultsLimit":0}"#, token: token).errorCode == "BAD_REQUEST")
        #expect(try post(port, "records/changes", #"{"zoneID":{"zoneName":"Movies"},"syncToken":"not-a-token"}"#, token: token).errorCode == "BAD_REQUEST")
        #expect(try HTTPTestClient.request(port: port, "GET", path, token: token).errorCode == "BAD_REQUEST")
        #expect(try HTTPTestClient.request(port: port, "POST", "/database/1/other/development/private/records/query", json: "{}", token: token).status == 404)
        #expect(try HTTPTestClient.request(port: port, "POST", "/database/1/default/staging/private/records/query", json: "{}", token: token).errorCode == "BAD_REQUEST")
        #expect(try HTTPTestClient.request(port: port, "POST", "/database/1/default/development/secret/records/query", json: "{}", token: token).errorCode == "BAD_REQUEST")
        #expect(try HTTPTestClient.request(port: port, "POST", "\(Self.base)/private/records/explode", json: "{}", token: token).status == 404)

        // Browsers: another origin is refused unless allowed, and then told so (CORS).
        let evil = try HTTPTestClient.request(port: port, "POST", "\(Self.base)/private/zones/list", json: "{}", token: token, headers: ["Origin": "http://evil.example"])
        #expect(evil.status == 403 && evil.errorCode == "ACCESS_DENIED" && evil.headers["access-control-allow-origin"] == nil)
        let allowed = try HTTPTestClient.request(port: port, "POST", "\(Self.base)/private/zones/list", json: "{}", token: token, headers: ["Origin": "https://app.example"])
        #expect(allowed.status == 200 && allowed.headers["access-control-allow-origin"] == "https://app.example")

        // A body larger than the node takes is refused from its header, unread.
        let large = try HTTPTestClient(port: port)
        large.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(64 << 20)\r\n\r\n{\"operations\":[")
        let tooLarge = try #require(large.response(within: 10))
        #expect(tooLarge.status == 413 && tooLarge.json["serverErrorCode"] as? String == "LIMIT_EXCEEDED")
        // Sent in a stream without a length, it is cut off once over the bound.
        let streamed = try HTTPTestClient(port: port)
        streamed.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = String(repeating: " ", count: 1 << 20)
        for _ in 0..<20 where !streamed.isClosedByServer { streamed.send(String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n") }
        #expect(streamed.response(within: 10)?.status == 413)

        // A client that stops halfway through its request is answered and let go.
        let slow = try HTTPTestClient(port: port)
        slow.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Length: 100\r\n\r\n{\"operations\"")
        let timedOut = try #require(slow.response(within: 10))
        #expect(timedOut.status == 408 && timedOut.json["serverErrorCode"] as? String == "REQUEST_TIMEOUT")
        #expect(eventuallyBlocking(5) { slow.isClosedByServer })

        // A connection that sends nothing, or its head a byte at a time, is closed within the request timeout.
        let silent = try HTTPTestClient(port: port)
        let dribbling = try HTTPTestClient(port: port)
        for byte in "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8.prefix(12) where !dribbling.isClosedByServer {
            dribbling.send([byte])
            usleep(200_000)
        }
        #expect(eventuallyBlocking(5) { silent.isClosedByServer && dribbling.isClosedByServer }, "a silent or dribbling client kept its connection")
        // A client without a token is answered from the head, its body unread, and let go.
        let unread = try HTTPTestClient(port: port)
        unread.send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(8 << 20)\r\n\r\n")
        let early = try #require(unread.response(within: 5))
        #expect(early.status == 401 && early.errorCode == "AUTHENTICATION_REQUIRED")
        #expect(eventuallyBlocking(5) { unread.isClosedByServer })
        // Listening on loopback, a request for another host name (a page that rebinds its name to 127.0.0.1) is refused.
        let rebound = try HTTPTestClient.request(port: port, "POST", "\(Self.base)/private/zones/list", json: "{}", token: token, headers: ["Host": "evil.example"])
        #expect(rebound.status == 403 && rebound.errorCode == "ACCESS_DENIED")
        // At the cap, a newcomer takes the place of the oldest connection that never showed a token…
        let idle = try (0..<6).map { _ in try HTTPTestClient(port: port) }
        usleep(100_000)
        #expect(try post(port, "zones/list", "{}", token: token).status == 200, "clients without a token kept one with a token out")
        #expect(eventuallyBlocking(5) { idle.contains { $0.isClosedByServer } })
        // …and when every connection has shown one, it is answered TRY_AGAIN_LATER at once.
        let holders = try (0..<6).map { _ in try HTTPTestClient(port: port) }
        for holder in holders {
            holder.send("GET \(Self.base)/private/zones/list HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n")
            _ = holder.response(within: 5)
        }
        let over = try HTTPTestClient(port: port)
        let busy = try #require(over.response(within: 5))
        #expect(busy.status == 503 && busy.errorCode == "TRY_AGAIN_LATER")
        _ = (idle, holders)

        #expect(try cli.snapshot() == before, "a refused request changed the store")

        // A revoked token stops working within a second or two.
        try cli.ok(["http", "token", "revoke", "tests"])
        #expect(eventuallyBlocking(5) { (try? post(port, "zones/list", "{}", token: token))?.status == 401 })
    }

    @Test func aSaveOverHTTPReachesAnotherNodesStreamAndMetrics() throws {
        defer { cli.cleanup() }
        let a = try initStore("a"), b = try initStore("b")
        try cli.ok(["trust", b], store: "a")
        try cli.ok(["trust", a], store: "b")
        try cli.ok(["zone", "create", "Movies"], store: "a")
        let nodeA = try node("a")
        let nodeB = try node("b", peers: [nodeA.node.port])
        defer { nodeA.node.stop(); nodeB.node.stop() }
        #expect(eventuallyBlocking(20) { nodeB.node.count("caughtUp") >= 1 })

        // A stream says where it starts at once: a client that reconnects before any change misses nothing.
        let first = try HTTPTestClient(port: nodeB.port)
        first.send("GET \(Self.base)/private/events?zone=Movies HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(nodeB.token)\r\n\r\n")
        #expect(eventuallyBlocking(10) { first.receivedText.contains("id: ") })
        let startID = try #require(first.receivedText.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("id: ") })).dropFirst(4)
        try cli.ok(["record", "save", "Movies/gap", "--type", "Movie", "title=In the gap"], store: "b")
        let reconnected = try HTTPTestClient(port: nodeB.port)
        reconnected.send("GET \(Self.base)/private/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(nodeB.token)\r\nLast-Event-ID: \(startID)\r\n\r\n")
        #expect(eventuallyBlocking(10) { reconnected.receivedText.contains("\"recordName\":\"gap\"") }, "a change between two connections was lost")

        let stream = try HTTPTestClient(port: nodeB.port)
        stream.send("GET \(Self.base)/private/events?zone=Movies HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(nodeB.token)\r\nAccept: text/event-stream\r\n\r\n")
        #expect(eventuallyBlocking(10) { stream.receivedText.contains("text/event-stream") && stream.receivedText.contains("id: ") })
        let saved = try post(nodeA.port, "records/modify", #"{"zoneID":{"zoneName":"Movies"},"operations":[{"operationType":"create","record":{"recordName":"live","recordType":"Movie","fields":{"title":{"value":"Live"}}}}]}"#, token: nodeA.token)
        let tag = try #require(records(saved).first?["recordChangeTag"] as? String)
        #expect(eventuallyBlocking(20) { stream.receivedText.contains("\"recordName\":\"live\"") }, "the save did not reach the other node's event stream")
        #expect(stream.receivedText.contains("event: record") && stream.receivedText.contains("event: token"))
        let there = try post(nodeB.port, "records/lookup", #"{"zoneID":{"zoneName":"Movies"},"records":[{"recordName":"live"}]}"#, token: nodeB.token)
        #expect(records(there).first?["recordChangeTag"] as? String == tag)

        // The stream carries sync events too: a peer going away.
        nodeA.node.stop()
        #expect(eventuallyBlocking(20) { stream.receivedText.contains("\"event\":\"disconnected\"") }, "the stream did not tell of the peer's disconnection")

        // Resuming from the last token sends what came after it, and not what came before.
        let streamed = stream.receivedText
        let lastID = try #require(streamed.split(whereSeparator: \.isNewline).last(where: { $0.hasPrefix("id: ") }), "no id in \(streamed)").dropFirst(4)
        try cli.ok(["record", "save", "Movies/later", "--type", "Movie", "title=Later"], store: "b")
        let resumed = try HTTPTestClient(port: nodeB.port)
        resumed.send("GET \(Self.base)/private/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(nodeB.token)\r\nLast-Event-ID: \(lastID)\r\n\r\n")
        #expect(eventuallyBlocking(10) { resumed.receivedText.contains("\"recordName\":\"later\"") })
        #expect(!resumed.receivedText.contains("\"recordName\":\"live\""))

        // Metrics moved: the merge, its propagation, the batches and the connection.
        let metrics = try HTTPTestClient.request(port: nodeB.port, "GET", "/metrics", token: nodeB.token).text
        func value(_ prefix: String) -> Double {
            metrics.split(separator: "\n").filter { $0.hasPrefix(prefix) }.compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
        }
        #expect(value("lattice_records_merged_total") >= 1)
        #expect(value("lattice_propagation_seconds_count") >= 1)
        #expect(value("lattice_sync_records_total{") >= 1)
        #expect(value("lattice_connections_total") >= 1)
        #expect(value("lattice_disconnections_total") >= 1)
        #expect(value("lattice_commits_total") >= 2)
        #expect(value("lattice_store_bytes{part=\"database\"}") > 0)
    }
}
