import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer

@Suite("Application pipeline", .timeLimit(.minutes(3)))
struct ApplicationTests {
    @Test func healthReportsTheDatabase() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("GET", "/healthz")
        #expect(response.status == 200)
        #expect(response.text == #"{"database":"ok","status":"ok"}"#)
    }

    @Test func healthIs503WhenTheDatabaseIsGone() async throws {
        let app = try TestApplication()
        defer { app.close() }
        app.application.database.close()
        let response = await app.request("GET", "/healthz")
        #expect(response.status == 503)
        #expect(response.text.contains("unavailable"))
        #expect(app.sink.recorded.contains { $0.contains("health check: database unavailable") })
    }

    @Test func unknownRouteIsA404Envelope() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("GET", "/no/such/thing")
        #expect(response.status == 404)
        let error = response.json?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "NOT_FOUND")
        #expect(error?["message"] as? String == "no route for GET /no/such/thing")
    }

    @Test func wrongMethodIsA405WithAllow() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("DELETE", "/healthz")
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD")
        #expect((response.json?["error"] as? [String: Any])?["code"] as? String == "METHOD_NOT_ALLOWED")
    }

    @Test func malformedPercentEscapeIs400() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("GET", "/healthz%G1")
        #expect(response.status == 400)
    }

    @Test func requestIDIsEchoedOrGeneratedAndLogged() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let given = await app.request("GET", "/healthz", headers: ["Host": "t", "X-Request-Id": "client-id-42"])
        #expect(given.headers["X-Request-Id"] == "client-id-42")
        let hostile = await app.request("GET", "/healthz", headers: ["Host": "t", "X-Request-Id": "bad id\"{}"])
        let generated = try #require(hostile.headers["X-Request-Id"])
        #expect(generated != "bad id\"{}")
        #expect(generated.count == 16)
        let lines = app.sink.recorded
        #expect(lines.contains { $0.contains(#""request.id":"client-id-42""#) && $0.contains(#""msg":"request""#) })
        #expect(lines.contains { $0.contains(#""request.id":"\#(generated)""#) })
        // Every line is one JSON object.
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any])
        }
    }

    @Test func metricsCountRequestsByRouteAndStatus() async throws {
        let app = try TestApplication()
        defer { app.close() }
        _ = await app.request("GET", "/healthz")
        _ = await app.request("GET", "/healthz")
        _ = await app.request("GET", "/missing")
        let metrics = await app.request("GET", "/metrics")
        #expect(metrics.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = metrics.text
        #expect(text.contains(#"switchboard_http_requests_total{route="/healthz",method="GET",status="200"} 2"#))
        #expect(text.contains(#"switchboard_http_requests_total{route="unmatched",method="GET",status="404"} 1"#))
        #expect(text.contains(#"switchboard_http_request_duration_seconds_count{route="/healthz"} 2"#))
        #expect(text.contains(#"switchboard_http_request_duration_seconds_bucket{route="/healthz",le="+Inf"} 2"#))
    }

    @Test func gaugesAreReadAtScrapeTime() {
        let metrics = Metrics()
        let value = Mutex(3.0)
        metrics.addGauge("switchboard_test_gauge", help: "A test gauge.") { value.withLock { $0 } }
        #expect(metrics.render().contains("switchboard_test_gauge 3\n"))
        value.withLock { $0 = 7 }
        #expect(metrics.render().contains("switchboard_test_gauge 7\n"))
    }
}

@Suite("OpenAPI document", .timeLimit(.minutes(3)))
struct OpenAPIDocumentTests {
    private func document() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(openAPIDocumentJSON.utf8)) as? [String: Any])
    }

    @Test func isServedVerbatim() async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await app.request("GET", "/openapi.json")
        #expect(response.status == 200)
        #expect(response.text == openAPIDocumentJSON)
        let onDisk = try String(contentsOfFile: #filePath.replacingOccurrences(of: "Tests/SwitchboardServerTests/ApplicationTests.swift", with: "openapi.json"), encoding: .utf8)
        #expect(onDisk == openAPIDocumentJSON)
    }

    @Test func isOpenAPI31() throws {
        #expect(try document()["openapi"] as? String == "3.1.0")
    }

    /// Every route the server answers is documented, and every documented operation exists.
    @Test func matchesTheRouter() throws {
        let app = try TestApplication()
        defer { app.close() }
        let served = Set(app.application.router.routes.map { "\($0.method.lowercased()) \($0.pattern)" })
        let paths = try #require(try document()["paths"] as? [String: [String: Any]])
        let methods: Set<String> = ["get", "post", "put", "patch", "delete"]
        let documented = Set(paths.flatMap { path, operations in operations.keys.filter(methods.contains).map { "\($0) \(path)" } })
        #expect(served == documented, "undocumented: \(served.subtracting(documented).sorted()), unserved: \(documented.subtracting(served).sorted())")
    }

    /// Every `$ref` points at something that exists.
    @Test func referencesResolve() throws {
        let doc = try document()
        var refs: [String] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if let ref = object["$ref"] as? String { refs.append(ref) }
                object.values.forEach(walk)
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(doc)
        #expect(!refs.isEmpty)
        for ref in refs {
            var node: Any? = doc
            for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
            #expect(node != nil, "dangling \(ref)")
        }
    }
}
