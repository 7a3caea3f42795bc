import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// What the social endpoints accept and how they refuse the rest (errors that name the field the
/// request used, codes of their own, nothing revealed to a stranger), and a message retry that
/// still gets its stored answer: each test names what a user would notice.
@Suite("Social API: input rules, precise errors, idempotent retries", .timeLimit(.minutes(3)))
struct SocialInputRulesTests {
    private struct Fixture {
        let app: TestApplication
        let alice: (token: String, id: String)
        let bob: (token: String, id: String)
        let conversation: String

        static func make() async throws -> Fixture {
            let app = try TestApplication()
            let alice = try await Self.signUp(app, "alice"), bob = try await Self.signUp(app, "bob")
            let request = await app.request(
                "POST", "/friend-requests", headers: headers(alice.token), body: #"{"userId":"\#(bob.id)"}"#)
            let requestID = try #require(request.json?["id"] as? String)
            let accepted = await app.request(
                "POST", "/friend-requests/\(requestID)/accept", headers: headers(bob.token))
            return Fixture(
                app: app, alice: alice, bob: bob,
                conversation: try #require(accepted.json?["conversationId"] as? String))
        }

        static func signUp(_ app: TestApplication, _ name: String) async throws -> (token: String, id: String) {
            let response = await app.request(
                "POST", "/auth/register",
                body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
            let session = try JSONDecoder().decode(AuthSession.self, from: Data(response.bodyBytes))
            return (session.token, session.user.id)
        }
    }

    private static func headers(_ token: String) -> HTTPHeaders { ["Host": "t", "Authorization": "Bearer \(token)"] }
    private func headers(_ token: String) -> HTTPHeaders { Self.headers(token) }

    @Test func aUsernameThatOnlyLowercasesToASCIIIsRefused() async throws {
        let app = try TestApplication()
        defer { app.close() }
        // U+212A KELVIN SIGN lowercases to "k": "\u{212A}arl" must not become "karl".
        let response = await app.request(
            "POST", "/auth/register",
            body: "{\"username\":\"\u{212A}arl\",\"password\":\"long enough\",\"displayName\":\"K\"}")
        #expect(response.status == 400)
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == "username")
    }

    @Test func multiLineMessagesAreAccepted() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let sent = await fixture.app.request(
            "POST", "/conversations/\(fixture.conversation)/messages", headers: headers(fixture.alice.token),
            body: #"{"text":"line one\nline two\twith a tab"}"#)
        #expect(sent.status == 201)
        #expect(sent.json?["text"] as? String == "line one\nline two\twith a tab")
        let bell = await fixture.app.request(
            "POST", "/conversations/\(fixture.conversation)/messages", headers: headers(fixture.alice.token),
            body: #"{"text":"ding\u0007"}"#)
        #expect(bell.status == 400)
    }

    @Test func aRetryAfterUnfriendingStillGetsTheStoredMessage() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let body = #"{"text":"sent before","clientId":"c-1"}"#
        let path = "/conversations/\(fixture.conversation)/messages"
        let first = await fixture.app.request("POST", path, headers: headers(fixture.alice.token), body: body)
        #expect(first.status == 201)
        #expect(
            await fixture.app.request("DELETE", "/friends/\(fixture.bob.id)", headers: headers(fixture.alice.token))
                .status == 204)
        let retry = await fixture.app.request("POST", path, headers: headers(fixture.alice.token), body: body)
        #expect(retry.status == 200)
        #expect(retry.json?["id"] as? String == first.json?["id"] as? String)
        // A new message is refused.
        let fresh = await fixture.app.request(
            "POST", path, headers: headers(fixture.alice.token), body: #"{"text":"new","clientId":"c-2"}"#)
        #expect(fresh.status == 403)
        #expect((fresh.json?["error"] as? [String: Any])?["code"] as? String == "NOT_FRIENDS")
    }

    @Test func addMembersErrorsNameTheFieldTheRequestUsed() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let carol = try await Fixture.signUp(fixture.app, "carol")
        let group = await fixture.app.request(
            "POST", "/groups", headers: headers(fixture.alice.token),
            body: #"{"name":"g","memberIds":["\#(fixture.bob.id)"]}"#)
        let groupID = try #require(group.json?["id"] as? String)
        let added = await fixture.app.request(
            "POST", "/groups/\(groupID)/members", headers: headers(fixture.alice.token),
            body: #"{"userIds":["\#(carol.id)"]}"#)
        #expect(added.status == 403)
        #expect((added.json?["error"] as? [String: Any])?["field"] as? String == "userIds")
        let created = await fixture.app.request(
            "POST", "/groups", headers: headers(fixture.alice.token),
            body: #"{"name":"g2","memberIds":["\#(carol.id)"]}"#)
        #expect((created.json?["error"] as? [String: Any])?["field"] as? String == "memberIds")
    }

    @Test func removingTheOwnerHasItsOwnCode() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let group = await fixture.app.request(
            "POST", "/groups", headers: headers(fixture.alice.token),
            body: #"{"name":"g","memberIds":["\#(fixture.bob.id)"]}"#)
        let groupID = try #require(group.json?["id"] as? String)
        let removed = await fixture.app.request(
            "DELETE", "/groups/\(groupID)/members/\(fixture.alice.id)", headers: headers(fixture.alice.token))
        #expect(removed.status == 409)
        #expect((removed.json?["error"] as? [String: Any])?["code"] as? String == "CANNOT_REMOVE_OWNER")
    }

    /// A stranger learns nothing from input errors: an invisible group is 404 whatever the input.
    @Test func invisibleResourcesAre404EvenWithBadInput() async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let stranger = try await Fixture.signUp(fixture.app, "mallory")
        let group = await fixture.app.request(
            "POST", "/groups", headers: headers(fixture.alice.token), body: #"{"name":"g","memberIds":[]}"#)
        let groupID = try #require(group.json?["id"] as? String)
        #expect(
            await fixture.app.request(
                "PATCH", "/groups/\(groupID)", headers: headers(stranger.token), body: #"{"name":""}"#
            ).status == 404)
        #expect(
            await fixture.app.request("GET", "/groups/\(groupID)/messages?limit=0", headers: headers(stranger.token))
                .status == 404)
        #expect(
            await fixture.app.request(
                "GET", "/conversations/\(fixture.conversation)/messages?limit=999", headers: headers(stranger.token)
            ).status == 404)
    }

    @Test(arguments: ["+5", "0", "101", "5.0", "", "abc"])
    func limitIsDigitsOneToHundred(limit: String) async throws {
        let fixture = try await Fixture.make()
        defer { fixture.app.close() }
        let response = await fixture.app.request(
            "GET",
            "/conversations/\(fixture.conversation)/messages?limit=\(limit.replacingOccurrences(of: "+", with: "%2B"))",
            headers: headers(fixture.alice.token))
        #expect(response.status == 400)
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == "limit")
    }
}
