import Foundation
import Testing
import SwitchboardKit

/// The scheduled-call routes as the server is to receive them.
@Suite("Scheduled call client", .timeLimit(.minutes(2)))
struct ScheduledCallClientTests {
    static let scheduled =
        #"{"id":"s/1","groupId":"g 1","title":"Stand-up","mode":"audio","startsAt":"2026-12-04T09:00:00.000Z","createdBy":"u1","createdAt":"2026-12-03T09:00:00.000Z","callId":null}"#
    static let list = #"{"scheduledCalls":[\#(scheduled)]}"#

    @Test(arguments: [(nil, nil), (5, "5"), (0, "1"), (51, "50")] as [(Int?, String?)])
    func upcomingAsksForALimitWithinOneToFifty(limit: Int?, sent: String?) async throws {
        let transport = ScriptedTransport(body: Self.list)
        let calls = try await ScheduledCallClient(client: makeClient(transport)).upcoming(limit: limit)
        #expect(calls.map(\.id) == ["s/1"])
        #expect(calls.first?.callId == nil)
        let request = try #require(transport.requests.first)
        #expect(request.method == "GET" && request.path == "/scheduled-calls")
        #expect(request.queryValue("limit") == sent)
    }

    @Test func aGroupsScheduledCallsAreListedScheduledAndCancelledUnderItsPath() async throws {
        let transport = ScriptedTransport { request in
            switch request.method {
            case "GET": (200, Self.list)
            case "POST": (201, Self.scheduled)
            default: (204, "")
            }
        }
        let client = ScheduledCallClient(client: makeClient(transport))
        _ = try await client.scheduledCalls(inGroup: "g 1")
        let made = try await client.schedule(
            ScheduleCall(startsAt: "2026-12-04T09:00:00Z", mode: .audio, title: "Stand-up"), inGroup: "g 1")
        #expect(made.title == "Stand-up")
        try await client.cancel("s/1", inGroup: "g 1")
        #expect(
            transport.requests.map(\.line) == [
                "GET /groups/g%201/scheduled-calls", "POST /groups/g%201/scheduled-calls",
                "DELETE /groups/g%201/scheduled-calls/s%2F1",
            ])
        let body = try #require(transport.requests[1].jsonBody())
        #expect(body["startsAt"] as? String == "2026-12-04T09:00:00Z" && body["mode"] as? String == "audio")
        #expect(transport.requests[1].repeatable == false, "a copy would schedule a second meeting")
    }

    @Test func aPreauthorizationIsAskedForWithoutABody() async throws {
        let transport = ScriptedTransport(
            status: 201, body: #"{"token":"pa","scheduledCallId":"s/1","expiresAt":"2026-12-04T08:58:00.000Z"}"#)
        let preauthorization = try await ScheduledCallClient(client: makeClient(transport)).preauthorize("s/1")
        #expect(
            preauthorization
                == CallPreauthorization(token: "pa", scheduledCallId: "s/1", expiresAt: "2026-12-04T08:58:00.000Z"))
        #expect(transport.requests.map(\.line) == ["POST /scheduled-calls/s%2F1/preauthorization"])
        #expect(transport.requests.first?.body == nil)
    }

    @Test func anEndedMeetingsCodeReachesTheCaller() async throws {
        let transport = ScriptedTransport(status: 409, body: errorBody("SCHEDULED_CALL_ENDED"))
        await #expect(throws: SwitchboardAPIError(status: 409, code: .scheduledCallEnded, message: "refused")) {
            _ = try await ScheduledCallClient(client: makeClient(transport)).preauthorize("s1")
        }
    }

    static let call =
        #""id":"c1","scopeKind":"group","scopeId":"g1","mode":"audio","state":"active","endReason":null,"createdBy":"u2","createdAt":"2026-12-04T09:00:00.000Z","answeredAt":"2026-12-04T09:00:01.000Z","endedAt":null,"invitations":[],"participants":[]"#

    @Test(arguments: [true, false])
    func joiningWithAPreauthorizationSendsItAndReadsTheMediaTokenWhenThere(accepted: Bool) async throws {
        let media =
            accepted ? #","media":{"url":"wss://media.test","token":"jwt","expiresAt":"2026-12-04T09:00:31.000Z"}"# : ""
        let transport = ScriptedTransport(body: "{" + Self.call + media + "}")
        let answer = try await makeClient(transport).join("c1", preauthorization: "pa")
        #expect(answer.call.id == "c1")
        #expect(answer.media?.token == (accepted ? "jwt" : nil))
        let request = try #require(transport.requests.first)
        #expect(request.line == "POST /calls/c1/join")
        #expect(request.jsonBody()?["preauthorization"] as? String == "pa")
    }
}
