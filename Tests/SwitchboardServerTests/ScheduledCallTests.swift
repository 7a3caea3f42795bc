import Foundation
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardTesting
import SwitchboardWire
import Testing

@testable import SwitchboardServer

/// Scheduled group calls and their pre-authorisations over the in-process application on the
/// manual clock (SQLite or PostgreSQL, as the run names): scheduling and listing with events,
/// the group call that starts one, and a join that redeems a pre-authorisation for the media
/// token exactly once, falling back to a plain join for every token that does not fit.
@Suite("Scheduled calls", .timeLimit(.minutes(3)))
struct ScheduledCallTests {
    struct Fixture {
        let world: CallWorld
        let alice: CallWorld.Person, bob: CallWorld.Person, carol: CallWorld.Person, dave: CallWorld.Person
        let group: String

        init() async throws {
            world = try CallWorld()
            alice = try await world.person("alice")
            bob = try await world.person("bob")
            carol = try await world.person("carol")
            dave = try await world.person("dave")
            group = try await world.group(alice, [bob, carol])
        }

        func request(
            _ person: CallWorld.Person, _ method: String, _ path: String, _ body: String = ""
        ) async -> HTTPResponse {
            await world.app.request(method, path, headers: person.headers, body: body)
        }

        /// `startsAt` seconds from the clock's now.
        func schedule(
            _ person: CallWorld.Person, in seconds: Double, title: String? = nil
        ) async throws -> ScheduledCall {
            let startsAt = Timestamp.iso8601(world.clock.now.addingTimeInterval(seconds))
            let title = title.map { #","title":"\#($0)""# } ?? ""
            let response = await request(
                person, "POST", "/groups/\(group)/scheduled-calls",
                #"{"startsAt":"\#(startsAt)","mode":"audio"\#(title)}"#)
            try #require(response.status == 201, "schedule: \(response.status) \(response.text)")
            return try JSONDecoder().decode(ScheduledCall.self, from: Data(response.bodyBytes))
        }

        func upcoming(_ person: CallWorld.Person, _ path: String = "/scheduled-calls") async throws -> [ScheduledCall] {
            let response = await request(person, "GET", path)
            try #require(response.status == 200, "list: \(response.status) \(response.text)")
            return try JSONDecoder().decode(ScheduledCallList.self, from: Data(response.bodyBytes)).scheduledCalls
        }

        func preauthorize(_ person: CallWorld.Person, _ id: String) async throws -> CallPreauthorization {
            let response = await request(person, "POST", "/scheduled-calls/\(id)/preauthorization")
            try #require(response.status == 201, "preauthorize: \(response.status) \(response.text)")
            return try JSONDecoder().decode(CallPreauthorization.self, from: Data(response.bodyBytes))
        }

        /// Alice starts the group call and Carol answers it, so it is active; Bob declines, so
        /// he may join it.
        func activeCall() async throws -> String {
            let created = await world.call(alice, "group", group)
            let callID = try #require(created.json?["id"] as? String, "call: \(created.text)")
            #expect(await world.act("accept", callID, by: carol).status == 200)
            #expect(await world.act("decline", callID, by: bob).status == 200)
            return callID
        }

        func join(_ person: CallWorld.Person, _ callID: String, preauthorization: String?) async -> HTTPResponse {
            await world.act(
                "join", callID, by: person, body: preauthorization.map { #"{"preauthorization":"\#($0)"}"# } ?? "")
        }

        func close() { world.close() }
    }

    @Test func aMemberSchedulesTheGroupSeesItAndIsTold() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let before = try await fixture.world.events(of: fixture.bob).last?.id ?? 0
        let later = try await fixture.schedule(fixture.bob, in: 7200, title: "  Retro ")
        let sooner = try await fixture.schedule(fixture.alice, in: 600)
        #expect(
            later.title == "Retro" && later.createdBy == fixture.bob.id && later.callId == nil && later.mode == .audio)
        #expect(later.startsAt == Timestamp.iso8601(fixture.world.clock.now.addingTimeInterval(7200)))
        for person in [fixture.alice, fixture.bob, fixture.carol] {
            #expect(try await fixture.upcoming(person).map(\.id) == [sooner.id, later.id], "ascending by start")
            #expect(try await fixture.upcoming(person, "/groups/\(fixture.group)/scheduled-calls").count == 2)
        }
        #expect(try await fixture.upcoming(fixture.dave).isEmpty, "not a member")
        #expect(await fixture.request(fixture.dave, "GET", "/groups/\(fixture.group)/scheduled-calls").status == 404)
        #expect(try await fixture.upcoming(fixture.alice, "/scheduled-calls?limit=1").map(\.id) == [sooner.id])
        let told = try await fixture.world.events(of: fixture.carol).filter {
            $0.kind == EventKind.scheduledCallChanged && $0.groupId == fixture.group
        }
        #expect(told.count == 2)
        _ = before

        // Cancelling: its creator or the owner; others 403; idempotent; everyone is told.
        #expect(
            await fixture.request(fixture.carol, "DELETE", "/groups/\(fixture.group)/scheduled-calls/\(later.id)")
                .status == 403)
        #expect(
            await fixture.request(fixture.alice, "DELETE", "/groups/\(fixture.group)/scheduled-calls/\(later.id)")
                .status == 204)
        #expect(
            await fixture.request(fixture.bob, "DELETE", "/groups/\(fixture.group)/scheduled-calls/\(later.id)").status
                == 204)
        #expect(try await fixture.upcoming(fixture.bob).map(\.id) == [sooner.id])
        #expect(
            await fixture.request(fixture.bob, "POST", "/scheduled-calls/\(later.id)/preauthorization").errorCode
                == "SCHEDULED_CALL_ENDED")

        // Listed until an hour after its start, then gone.
        fixture.world.clock.advance(seconds: 600 + 3599)
        #expect(try await fixture.upcoming(fixture.bob).count == 1)
        fixture.world.clock.advance(seconds: 2)
        #expect(try await fixture.upcoming(fixture.bob).isEmpty)
        #expect(
            await fixture.request(fixture.bob, "POST", "/scheduled-calls/\(sooner.id)/preauthorization").errorCode
                == "SCHEDULED_CALL_ENDED")
    }

    @Test func badSchedulesAreA400NamingTheField() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let now = fixture.world.clock.now
        let path = "/groups/\(fixture.group)/scheduled-calls"
        let cases: [(String, String)] = [
            (#"{"startsAt":"tomorrow","mode":"audio"}"#, "startsAt"),
            (#"{"startsAt":"\#(Timestamp.iso8601(now.addingTimeInterval(-1)))","mode":"audio"}"#, "startsAt"),
            (#"{"startsAt":"\#(Timestamp.iso8601(now.addingTimeInterval(367 * 86_400)))","mode":"audio"}"#, "startsAt"),
            (#"{"startsAt":"2027-01-15T10:00:00","mode":"audio"}"#, "startsAt"),
            (#"{"startsAt":"\#(Timestamp.iso8601(now.addingTimeInterval(60)))","mode":"hologram"}"#, "mode"),
            (#"{"startsAt":"\#(Timestamp.iso8601(now.addingTimeInterval(60)))","mode":"audio","title":"  "}"#, "title"),
            (#"{"mode":"audio"}"#, "startsAt"),
        ]
        for (body, field) in cases {
            let response = await fixture.request(fixture.alice, "POST", path, body)
            #expect(response.status == 400 && E2EEQueueTests.field(response) == field, "\(body): \(response.text)")
        }
        let offset = await fixture.request(
            fixture.alice, "POST", path, #"{"startsAt":"2027-01-15T12:00:00+02:00","mode":"video"}"#)
        #expect(offset.status == 201, "a time zone offset is fine: \(offset.text)")
        for limit in ["0", "51", "x"] {
            #expect(await fixture.request(fixture.alice, "GET", "/scheduled-calls?limit=\(limit)").status == 400)
        }
        #expect(
            await fixture.request(fixture.dave, "POST", path, #"{"startsAt":"2027-01-15T10:00:00Z","mode":"audio"}"#)
                .status == 404)
        #expect(await fixture.request(fixture.dave, "POST", "/scheduled-calls/nope/preauthorization").status == 404)
        let meeting = try await fixture.schedule(fixture.bob, in: 600)
        #expect(
            await fixture.request(fixture.dave, "DELETE", "\(path)/\(meeting.id)").status == 404,
            "a stranger does not see the group")
        #expect(
            await fixture.request(fixture.dave, "POST", "/scheduled-calls/\(meeting.id)/preauthorization").status == 404
        )
        for (method, target) in [
            ("POST", path), ("GET", path), ("DELETE", "\(path)/\(meeting.id)"), ("GET", "/scheduled-calls"),
            ("POST", "/scheduled-calls/\(meeting.id)/preauthorization"),
        ] {
            #expect(
                await fixture.world.app.request(method, target, body: "{}").status == 401,
                "\(method) \(target) without a token")
        }
    }

    @Test func theGroupCallNearItsStartStartsItAndAPreauthorisedJoinCarriesTheMediaTokenOnce() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let meeting = try await fixture.schedule(fixture.alice, in: 40 * 60)
        // 40 minutes early: an ordinary group call, not the meeting.
        let early = try await fixture.activeCall()
        #expect(try await fixture.upcoming(fixture.bob).first?.callId == nil)
        for person in [fixture.alice, fixture.carol] {
            #expect(await fixture.world.act("leave", early, by: person).status == 200)
        }

        fixture.world.clock.advance(seconds: 35 * 60)  // 5 minutes before the start
        let bobs = try await fixture.preauthorize(fixture.bob, meeting.id)
        #expect(
            bobs.scheduledCallId == meeting.id
                && bobs.expiresAt == Timestamp.iso8601(fixture.world.clock.now.addingTimeInterval(600)))
        let carols = try await fixture.preauthorize(fixture.carol, meeting.id)
        #expect(
            await fixture.request(fixture.dave, "POST", "/scheduled-calls/\(meeting.id)/preauthorization").status == 404
        )

        let callID = try await fixture.activeCall()
        #expect(try await fixture.upcoming(fixture.bob).first?.callId == callID, "the call started the meeting")

        // Carol's token is hers: Bob's join with it goes on without media.
        let wrongUser = await fixture.join(fixture.bob, callID, preauthorization: carols.token)
        #expect(wrongUser.status == 200 && wrongUser.json?["media"] == nil, "\(wrongUser.text)")
        #expect(await fixture.world.act("leave", callID, by: fixture.bob).status == 200)
        // Bob's own: the answer carries the media token, once.
        let joined = await fixture.join(fixture.bob, callID, preauthorization: bobs.token)
        #expect(joined.status == 200, "\(joined.text)")
        let media = try #require(joined.json?["media"] as? [String: Any], "media in the join answer: \(joined.text)")
        #expect(media["token"] is String)
        #expect(await fixture.world.act("leave", callID, by: fixture.bob).status == 200)
        let again = await fixture.join(fixture.bob, callID, preauthorization: bobs.token)
        #expect(again.status == 200 && again.json?["media"] == nil, "single use: \(again.text)")
        #expect(await fixture.world.act("leave", callID, by: fixture.bob).status == 200)
        // Garbage is no token: the join goes on.
        let garbage = await fixture.join(fixture.bob, callID, preauthorization: "not-a-token")
        #expect(garbage.status == 200 && garbage.json?["media"] == nil)
        #expect(await fixture.world.act("leave", callID, by: fixture.bob).status == 200)
        let mistyped = await fixture.world.act("join", callID, by: fixture.bob, body: #"{"preauthorization":5}"#)
        #expect(mistyped.status == 400)

        // Expired: ten minutes after it was issued.
        let late = try await fixture.preauthorize(fixture.bob, meeting.id)
        fixture.world.clock.advance(seconds: 601)
        let expired = await fixture.join(fixture.bob, callID, preauthorization: late.token)
        #expect(expired.status == 200 && expired.json?["media"] == nil, "expired: \(expired.text)")
        _ = carols
    }

    @Test func aTokenForAnotherMeetingDoesNotOpenThisCall() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let first = try await fixture.schedule(fixture.alice, in: 5 * 60)
        let second = try await fixture.schedule(fixture.alice, in: 3 * 3600)
        let forSecond = try await fixture.preauthorize(fixture.bob, second.id)
        let callID = try await fixture.activeCall()
        #expect(try await fixture.upcoming(fixture.bob).map(\.callId) == [callID, nil], "the nearer one was started")
        let response = await fixture.join(fixture.bob, callID, preauthorization: forSecond.token)
        #expect(response.status == 200 && response.json?["media"] == nil)
        _ = first
    }
}
