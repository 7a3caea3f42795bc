import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire
import SwitchboardObservability

/// Behaviour the OpenAPI document states and `scripts/api-contract.sh` checks by machine, kept
/// here too so that a regression fails in seconds with a name: rules a JSON Schema can express
/// exactly (lengths in code points, a parameter that is always required, a field that is always
/// present) and refusals that are not 400s because no schema could predict them.
@Suite("API contract", .timeLimit(.minutes(2)))
struct APIContractTests {
    private static func register(_ app: TestApplication, _ username: String, password: String) async -> HTTPResponse {
        let body =
            #"{"username":"\#(username)","password":"\#(JSONText.escape(password))","displayName":"\#(username)"}"#
        return await app.request("POST", "/auth/register", body: body)
    }

    /// JSON Schema's `minLength`/`maxLength` count code points; so does the server, so a password
    /// the document accepts is never refused (and NIST SP 800-63B counts the same way).
    @Test(arguments: [
        (String(repeating: "e\u{301}", count: 4), 201),  // 8 code points, 4 user-perceived characters
        (String(repeating: "\r\n", count: 4), 201),  // 8 code points, 4 grapheme clusters
        (String(repeating: "x", count: 7), 400),
        (String(repeating: "🙂", count: 128), 201),
        (String(repeating: "x", count: 129), 400),
    ])
    func passwordLengthIsCountedInCodePoints(password: String, status: Int) async throws {
        let app = try TestApplication()
        defer { app.close() }
        let response = await Self.register(app, "alice", password: password)
        #expect(response.status == status, "\(response.text)")
        if status == 400 { #expect(response.apiErrorField == "password") }
    }

    /// A message `clientId` is 1 to 64 code points, whatever their UTF-8 length.
    @Test(arguments: [(String(repeating: "é", count: 64), 201), (String(repeating: "é", count: 65), 400), ("", 400)])
    func messageClientIDLengthIsCountedInCodePoints(clientID: String, status: Int) async throws {
        let api = SocialClient(try TestApplication())
        defer { api.app.close() }
        let olivia = try await api.register("olivia"), max = try await api.register("max")
        let conversation = try await api.befriend(olivia, max)
        let response = await api.send("hello", from: olivia, toConversation: conversation, clientId: clientID)
        #expect(response.status == status, "\(response.text)")
        if status == 400 { #expect(response.apiErrorField == "clientId") }
    }

    /// Trimming removes whitespace and nothing else, scalar by scalar: a skin-tone modifier or a
    /// combining accent right after a space is text, not whitespace (trimming whole characters
    /// dropped it, so text the document's pattern accepts was refused as blank). Found by
    /// schemathesis.
    @Test(arguments: [
        ("\u{2002}\u{A0} \u{1F3FB}\u{202F}\r\u{B}", "\u{1F3FB}"),
        ("  \u{301}", "\u{301}"),
        ("a \u{301}", "a \u{301}"),
        (" \r\nhi\r\n ", "hi"),
    ])
    func trimmingKeepsEverythingButWhitespace(text: String, stored: String) async throws {
        let api = SocialClient(try TestApplication())
        defer { api.app.close() }
        let olivia = try await api.register("olivia"), max = try await api.register("max")
        _ = try await api.befriend(olivia, max)
        let group = try await api.createGroup("g", owner: olivia, members: [max])
        let response = await api.send(text, from: olivia, toGroup: group)
        #expect(response.status == 201, "\(response.text)")
        #expect(try response.decoded(Message.self).text == stored)
        let renamed = await api.call(olivia, "PATCH", "/groups/\(group)", #"{"name":"\#(JSONText.escape(text))"}"#)
        #expect(renamed.status == 200, "\(renamed.text)")
        #expect(try renamed.decoded(Group.self).name == stored)
    }

    /// Befriending or blocking oneself is a 409 naming the reason: the body is valid input, the
    /// caller's identity is what makes it impossible, and no schema can say "not your own id".
    @Test func selfTargetsAreConflicts() async throws {
        let api = SocialClient(try TestApplication())
        defer { api.app.close() }
        let olivia = try await api.register("olivia")
        let byID = await api.call(olivia, "POST", "/friend-requests", #"{"userId":"\#(olivia.id)"}"#)
        #expect(byID.status == 409 && byID.apiErrorCode == "CANNOT_BEFRIEND_SELF", "\(byID.text)")
        let byName = await api.call(olivia, "POST", "/friend-requests", #"{"username":"OLIVIA"}"#)
        #expect(byName.status == 409 && byName.apiErrorCode == "CANNOT_BEFRIEND_SELF", "\(byName.text)")
        let block = await api.call(olivia, "PUT", "/blocks/\(olivia.id)")
        #expect(block.status == 409 && block.apiErrorCode == "CANNOT_BLOCK_SELF", "\(block.text)")
        try await api.expectEvents([], for: [olivia])
    }

    /// `after` is part of the stream's URL and always required; `Last-Event-ID` only moves the
    /// starting point, so it cannot stand in for a missing or malformed `after`.
    @Test(arguments: [
        ("", "0", "after"), ("?after=abc", "0", "after"), ("?after=9007199254740992", "5", "after"),
        ("?after=0", "abc", "Last-Event-ID"), ("?after=0", "-1", "Last-Event-ID"),
    ])
    func streamNeedsAValidAfterEvenWhenResuming(query: String, lastEventID: String, field: String) async throws {
        let api = SocialClient(try TestApplication())
        defer { api.app.close() }
        let olivia = try await api.register("olivia")
        var headers = SocialClient.headers(olivia.token)
        headers.add("Last-Event-ID", lastEventID)
        let response = await api.app.request("GET", "/events/stream\(query)", headers: headers)
        #expect(response.status == 400)
        #expect(response.apiErrorCode == "VALIDATION_FAILED")
        #expect(response.apiErrorField == field)
    }

    /// Every field of the push status is always present, `null` when it does not apply.
    @Test func pushStatusAlwaysCarriesEveryField() async throws {
        let key = "admin-key-0123456789"
        var configuration = ServerConfiguration()
        configuration.adminKey = key
        let app = try TestApplication(configuration: configuration)
        defer { app.close() }
        let response = await app.request(
            "GET", "/admin/push/status", headers: ["Host": "t", "Authorization": "Bearer \(key)"])
        #expect(response.status == 200)
        let object = try #require(response.json)
        #expect(Set(object.keys) == ["pending", "oldestPendingAgeSeconds", "outcomes", "newestFailures"])
        #expect(object["oldestPendingAgeSeconds"] is NSNull)

        let encoder = JSONBody.makeEncoder()
        let outcome =
            try JSONSerialization.jsonObject(
                with: encoder.encode(
                    AdminRoutes.Outcome(
                        provider: "apns", channel: "ios-voip", state: "delivered", reason: nil, count: 3)))
            as? [String: Any]
        #expect(outcome?["reason"] is NSNull)
        let failure =
            try JSONSerialization.jsonObject(
                with: encoder.encode(
                    AdminRoutes.Failure(
                        jobId: "j", callId: "c", userId: "u", provider: "apns", channel: "ios-voip",
                        tokenSuffix: "0011aabb", state: "expired", reason: nil,
                        lastError: nil, attempts: 1, finishedAt: nil))
            ) as? [String: Any]
        #expect(failure?["reason"] is NSNull && failure?["finishedAt"] is NSNull && failure?["lastError"] is NSNull)
    }

    /// Without an admin key the admin endpoints are off: a request without credentials is 401
    /// (as the contract says for every admin route), one with a key 403 `ADMIN_DISABLED`.
    @Test(arguments: [
        ([String: String](), 401, "UNAUTHORIZED"),
        (["Authorization": "Bearer admin-key-0123456789"], 403, "ADMIN_DISABLED"),
    ])
    func adminEndpointsAreDisabledWithoutAKey(extra: [String: String], status: Int, code: String) async throws {
        let app = try TestApplication()
        defer { app.close() }
        var headers: HTTPHeaders = ["Host": "t"]
        for (name, value) in extra { headers.add(name, value) }
        let response = await app.request("GET", "/admin/push/status", headers: headers)
        #expect(response.status == status)
        #expect(response.apiErrorCode == code)
    }
}
