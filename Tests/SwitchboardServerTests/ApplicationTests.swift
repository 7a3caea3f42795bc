import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardObservability
import SwitchboardCore
import SwitchboardWire

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
        let onDisk = try String(
            contentsOfFile: #filePath.replacingOccurrences(
                of: "Tests/SwitchboardServerTests/ApplicationTests.swift", with: "openapi.json"), encoding: .utf8)
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
        let documented = Set(
            paths.flatMap { path, operations in operations.keys.filter(methods.contains).map { "\($0) \(path)" } })
        #expect(
            served == documented,
            "undocumented: \(served.subtracting(documented).sorted()), unserved: \(documented.subtracting(served).sorted())"
        )
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

    private static let methods: Set<String> = ["get", "post", "put", "patch", "delete"]

    /// The object a local `$ref` points at, or `object` itself when it is no reference.
    private func resolve(_ object: [String: Any], in doc: [String: Any]) -> [String: Any] {
        guard let ref = object["$ref"] as? String else { return object }
        var node: Any? = doc
        for part in ref.dropFirst(2).split(separator: "/") { node = (node as? [String: Any])?[String(part)] }
        return node as? [String: Any] ?? [:]
    }

    /// The error codes the document lists in the `Error` schema: each written `CODE (`.
    private func listedCodes(in doc: [String: Any]) throws -> Set<String> {
        let schemas = try #require((doc["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let error = try #require(
            ((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any])
        let code = try #require((error["properties"] as? [String: Any])?["code"] as? [String: Any])
        let text = try #require(code["description"] as? String)
        let names = try Regex(#"([A-Z][A-Z0-9_]+) (?:and [A-Z][A-Z0-9_]+ )?\("#)
        var codes = Set<String>()
        for match in text.matches(of: names) { codes.insert(String(text[match.range].split(separator: " ")[0])) }
        // "SERVER_BUSY and SHUTTING_DOWN (503)": the second name of a pair.
        for match in text.matches(of: try Regex(#"and ([A-Z][A-Z0-9_]+) \("#)) {
            codes.insert(String(text[match.range].split(separator: " ")[1]))
        }
        return codes
    }

    /// Every operation that needs a credential documents 401 and every one with a body 400; every
    /// error answer is the error envelope, and its description starts with its own status and
    /// names only codes the document lists.
    @Test func errorAnswersAreDocumentedConsistently() throws {
        let doc = try document()
        let codes = try listedCodes(in: doc)
        let paths = try #require(doc["paths"] as? [String: [String: Any]])
        for (path, operations) in paths {
            for (method, value) in operations where Self.methods.contains(method) {
                let operation = try #require(value as? [String: Any])
                let name = "\(method.uppercased()) \(path)"
                let responses = try #require(operation["responses"] as? [String: [String: Any]])
                let security = operation["security"] as? [[String: Any]] ?? []
                if !security.allSatisfy(\.isEmpty) {
                    #expect(responses["401"] != nil, "\(name) needs a credential but documents no 401")
                }
                if operation["requestBody"] != nil {
                    #expect(responses["400"] != nil, "\(name) takes a body but documents no 400")
                }
                // 1xx (the audio socket's 101), 2xx and 3xx (the pages' 304 and 308) are not errors.
                for (status, response) in responses
                where !status.hasPrefix("2") && !status.hasPrefix("1") && !status.hasPrefix("3") && path != "/healthz"
                    && path != "/readyz"
                {
                    let envelope =
                        ((resolve(response, in: doc)["content"] as? [String: Any])?["application/json"]
                        as? [String: Any])?["schema"]
                    #expect(
                        (envelope as? [String: Any])?["$ref"] as? String == "#/components/schemas/Error",
                        "\(name) \(status)")
                    let description = response["description"] as? String ?? ""
                    #expect(description.hasPrefix("\(status) "), "\(name) \(status): \(description)")
                    let named = description.prefix { $0 != ":" }.split(whereSeparator: {
                        !$0.isUppercase && !$0.isNumber && $0 != "_"
                    })
                    .map(String.init).filter { $0.count > 2 && $0.first!.isLetter }
                    #expect(!named.isEmpty, "\(name) \(status) names no code: \(description)")
                    for code in named {
                        #expect(codes.contains(code), "\(name) \(status): \(code) is not in the Error schema's list")
                    }
                }
            }
        }
    }

    /// The error catalogue (`ErrorCode`) and the document's list are the same codes with the
    /// same statuses, and no source outside the catalogue spells a code: every code the server
    /// answers is a catalogue member (the HTTP core, which sits below the wire layer, answers
    /// with its own table, checked to be in the catalogue too).
    @Test func theErrorCatalogueIsTheDocumentsList() throws {
        let doc = try document()
        let listed = try listedCodes(in: doc)
        let catalogue = ErrorCode.catalogue.map(\.rawValue)
        #expect(Set(catalogue).count == catalogue.count, "a code is in the catalogue twice")
        #expect(Set(catalogue).subtracting(listed).sorted() == [], "in the catalogue but not in the document")
        #expect(listed.subtracting(catalogue).sorted() == [], "in the document but not in the catalogue")
        let schemas = try #require((doc["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let error = try #require(
            ((schemas["Error"] as? [String: Any])?["properties"] as? [String: Any])?["error"] as? [String: Any])
        let text = try #require(
            ((error["properties"] as? [String: Any])?["code"] as? [String: Any])?["description"] as? String)
        for code in ErrorCode.catalogue {
            // "CODE (503" or, for a pair, "CODE and OTHER (503".
            let documented = try Regex("\\b\(code.rawValue)(?: and [A-Z_]+)? \\(\(code.status)\\b")
            #expect(text.contains(documented), "\(code.rawValue) is documented with another status than \(code.status)")
            #expect(ErrorCode(rawValue: code.rawValue).status == code.status)
        }
        #expect(ErrorCode(rawValue: "SOMETHING_NEW").status == 0)

        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let literal = try Regex(#"(?:code: |case [^:\n]+: |default: )"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)""#)
        for folder in ["Sources/SwitchboardServer", "Sources/SwitchboardCore", "Sources/SwitchboardHTTP"] {
            let directory = root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap {
                $0 as? String
            }
            // HTTPResponse.swift's `case 200: "OK"` table holds reason phrases, not codes.
            for file in files where file.hasSuffix(".swift") && !file.hasSuffix("HTTPResponse.swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for match in text.matches(of: literal) {
                    let code = String(text[match.range].split(separator: "\"")[1])
                    if folder.hasSuffix("HTTP") {
                        #expect(catalogue.contains(code), "\(file): \(code) is not in the catalogue")
                    } else {
                        Issue.record("\(folder)/\(file) spells the code \(code): use its ErrorCode member")
                    }
                }
            }
        }
    }

    /// Each refused call transition answers with its catalogue code and that code's status.
    @Test func callRefusalsAnswerWithTheirCodes() {
        let expected: [(CallTransitionError, Int, String)] = [
            (.notInvolved, 404, "NOT_FOUND"), (.notCaller, 403, "NOT_CALLER"), (.notMember, 403, "NOT_MEMBER"),
            (.invitationNotRinging, 409, "INVITATION_NOT_RINGING"), (.callEnded, 409, "CALL_ENDED"),
            (.callNotRinging, 409, "CALL_NOT_RINGING"), (.callNotActive, 409, "CALL_NOT_ACTIVE"),
            (.notJoinable, 409, "CALL_NOT_JOINABLE"),
            (.notParticipant, 409, "NOT_PARTICIPANT"), (.alreadyParticipant, 409, "ALREADY_PARTICIPANT"),
            (.busy, 409, "CALL_BUSY"),
        ]
        for (error, status, code) in expected {
            #expect(error.apiError.status == status && error.apiError.code.rawValue == code, "\(error)")
            #expect(error.apiError.message == error.message)
        }
    }

    /// Every `{parameter}` in a path is declared as a path parameter, and nothing else is.
    @Test func pathParametersAreDeclared() throws {
        let doc = try document()
        let paths = try #require(doc["paths"] as? [String: [String: Any]])
        for (path, operations) in paths {
            let inPath = Set(
                path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) })
            let shared = (operations["parameters"] as? [[String: Any]] ?? []).map { resolve($0, in: doc) }
            for (method, value) in operations where Self.methods.contains(method) {
                let own = ((value as? [String: Any])?["parameters"] as? [[String: Any]] ?? []).map {
                    resolve($0, in: doc)
                }
                let declared = Set(
                    (shared + own).filter { $0["in"] as? String == "path" }.compactMap { $0["name"] as? String })
                #expect(declared == inPath, "\(method.uppercased()) \(path): declared \(declared.sorted())")
            }
        }
    }
}
