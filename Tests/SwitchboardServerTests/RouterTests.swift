import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer

@Suite("Router", .timeLimit(.minutes(3)))
struct RouterTests {
    private func router() -> Router {
        var router = Router()
        router.add("GET", "/calls/{id}") { _ in HTTPResponse(status: 200) }
        router.add("POST", "/calls/{id}/accept") { _ in HTTPResponse(status: 200) }
        router.add("GET", "/calls/active") { _ in HTTPResponse(status: 200) }
        router.add("DELETE", "/voip/devices/{deviceId}") { _ in HTTPResponse(status: 204) }
        return router
    }

    @Test func matchesLiteralsAndParameters() {
        guard case .found(let route, let parameters, _) = router().match(method: "POST", path: "/calls/abc/accept")
        else {
            Issue.record("no match")
            return
        }
        #expect(route.pattern == "/calls/{id}/accept")
        #expect(parameters == ["id": "abc"])
    }

    @Test func parametersArePercentDecoded() {
        guard case .found(_, let parameters, _) = router().match(method: "DELETE", path: "/voip/devices/a%20b%2Fc")
        else {
            Issue.record("no match")
            return
        }
        #expect(parameters["deviceId"] == "a b/c")
    }

    @Test func literalBeatsParameterWhateverTheOrder() {
        // "/calls/active" is registered after "/calls/{id}" and still wins for its own path.
        guard case .found(let route, _, _) = router().match(method: "GET", path: "/calls/active") else {
            Issue.record("no match")
            return
        }
        #expect(route.pattern == "/calls/active")
        guard case .found(let other, let parameters, _) = router().match(method: "GET", path: "/calls/c1") else {
            Issue.record("no match")
            return
        }
        #expect(other.pattern == "/calls/{id}")
        #expect(parameters == ["id": "c1"])
    }

    @Test func unknownPathIsNotFoundAndWrongMethodIs405() {
        if case .notFound = router().match(method: "GET", path: "/nope") {} else { Issue.record("expected notFound") }
        if case .notFound = router().match(method: "GET", path: "/calls/abc/") {
        } else {
            Issue.record("trailing slash must not match")
        }
        if case .notFound = router().match(method: "GET", path: "/calls//accept") {
        } else {
            Issue.record("empty parameter must not match")
        }
        guard case .methodNotAllowed(let allowed) = router().match(method: "PUT", path: "/calls/x") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "HEAD"])
    }

    @Test func headFallsBackToGet() {
        if case .found(let route, _, _) = router().match(method: "HEAD", path: "/calls/x") {
            #expect(route.method == "GET")
        } else {
            Issue.record("HEAD should use the GET route")
        }
    }

    @Test func malformedEscapeIsBadPath() {
        if case .badPath = router().match(method: "GET", path: "/calls/%zz") {
        } else {
            Issue.record("expected badPath")
        }
        if case .badPath = router().match(method: "GET", path: "/calls/%ff") {
        } else {
            Issue.record("non-UTF-8 must be badPath")
        }
    }
}
