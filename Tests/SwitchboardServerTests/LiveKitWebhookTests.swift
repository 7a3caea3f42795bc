import Foundation
import Testing
@testable import SwitchboardCrypto
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// LiveKit's webhooks: verified as LiveKit signs them, and turned into the call's media presence.
@Suite("LiveKit webhooks", .serialized, .timeLimit(.minutes(3)))
struct LiveKitWebhookTests {
    /// A delivery as LiveKit makes it: the JWT in Authorization (no Bearer), `sha256` of the body.
    static func signed(
        _ body: String, secret: String, key: String = "fake-key", now: Date, expiresIn: TimeInterval = 300,
        sha256: String? = nil
    ) -> HTTPHeaders {
        let issued = Int64(now.timeIntervalSince1970)
        let hash = sha256 ?? Data(SHA256.hash(Array(body.utf8))).base64EncodedString()
        let claims = #"{"iss":"\#(key)","nbf":\#(issued),"exp":\#(issued + Int64(expiresIn)),"sha256":"\#(hash)"}"#
        return [
            "Host": "t", "Content-Type": "application/webhook+json",
            "Authorization": JWT.signHS256(claimsJSON: Array(claims.utf8), secret: Array(secret.utf8)),
        ]
    }

    static func event(_ kind: String, room: String) -> String {
        #"{"event":"\#(kind)","room":{"sid":"RM_x","name":"\#(room)","numParticipants":0},"participant":{"identity":"someone"},"id":"EV_1","createdAt":"1800000000"}"#
    }

    private func activeCall(_ world: CallWorld) async throws -> (CallWorld.Person, CallInfo) {
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(await world.act("accept", call.id, by: bob).status == 200)
        return (alice, call)
    }

    private func post(_ world: CallWorld, _ body: String, headers: HTTPHeaders) async -> HTTPResponse {
        await world.app.application.handle(
            HTTPRequest(method: "POST", target: "/livekit/webhook", headers: headers, body: Array(body.utf8)))
    }

    @Test func aFinishedRoomEndsItsCallAtOnce() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let (alice, call) = try await activeCall(world)
        let body = Self.event("room_finished", room: "call_\(call.id)")
        let answer = await post(world, body, headers: Self.signed(body, secret: livekit.secret, now: world.clock.now))
        #expect(answer.status == 200)
        let ended = try await world.get(call.id, by: alice)
        #expect(ended.state == .ended && ended.endReason == .connectionLost)
        // Delivered again (LiveKit retries): nothing more happens.
        #expect(
            await post(world, body, headers: Self.signed(body, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        #expect(try await world.events(of: alice).filter { $0.kind == .callChanged }.count == 3)
        await livekit.stop()
    }

    @Test func theLastParticipantLeavingEndsTheCallAtOnce() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let (alice, call) = try await activeCall(world)
        let room = "call_\(call.id)"
        // One of two left: the other is still there, and the call goes on.
        livekit.setParticipants(1, in: room)
        let left = Self.event("participant_left", room: room)
        #expect(
            await post(world, left, headers: Self.signed(left, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        #expect(try await world.get(call.id, by: alice).state == .active)
        // The last one left: no grace, the call ends now.
        livekit.setParticipants(0, in: room)
        #expect(
            await post(world, left, headers: Self.signed(left, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        let ended = try await world.get(call.id, by: alice)
        #expect(ended.state == .ended && ended.endReason == .connectionLost)
        #expect(
            livekit.requests.map(\.method).prefix(2) == ["ListParticipants", "ListParticipants"], "counted each time")
        await livekit.stop()
    }

    @Test func aBrokenConnectionStartsTheGraceAtOnceAndAJoinEndsTheEmptiness() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let (alice, call) = try await activeCall(world)
        let room = "call_\(call.id)", calls = world.app.application.calls
        livekit.setParticipants(0, in: room)
        let left = Self.event("participant_connection_aborted", room: room)
        #expect(
            await post(world, left, headers: Self.signed(left, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        #expect(livekit.requests.map(\.method) == ["ListParticipants"], "counted when the webhook came")
        #expect(try await world.get(call.id, by: alice).state == .active, "it may come back: the grace holds")
        world.clock.advance(seconds: 60)
        let joined = Self.event("participant_joined", room: room)
        #expect(
            await post(world, joined, headers: Self.signed(joined, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        // 100 s after the leave, but empty only since the watchdog's count now.
        world.clock.advance(seconds: 40)
        try await calls.checkEmptyRooms()
        #expect(try await world.get(call.id, by: alice).state == .active)
        let again = Self.event("participant_connection_aborted", room: room)
        #expect(
            await post(world, again, headers: Self.signed(again, secret: livekit.secret, now: world.clock.now)).status
                == 200)
        world.clock.advance(seconds: 90)
        try await calls.checkEmptyRooms()
        #expect(try await world.get(call.id, by: alice).endReason == .connectionLost)
        await livekit.stop()
    }

    @Test func onlyLiveKitsSignatureOverThisExactBodyIsAccepted() async throws {
        let livekit = try FakeLiveKit()
        let world = try CallWorld(configuration: livekit.configuration())
        defer { world.close() }
        let (alice, call) = try await activeCall(world)
        let body = Self.event("room_finished", room: "call_\(call.id)")
        let now = world.clock.now
        func code(_ headers: HTTPHeaders, _ sent: String = body) async -> (Int, String?) {
            let answer = await post(world, sent, headers: headers)
            return (answer.status, answer.errorCode)
        }
        #expect(await code(["Host": "t"]) == (401, "UNAUTHORIZED"))
        #expect(
            await code(Self.signed(body, secret: "not-the-secret-at-all", now: now)) == (
                401, "WEBHOOK_SIGNATURE_INVALID"
            ))
        #expect(
            await code(Self.signed(body, secret: livekit.secret, key: "other-key", now: now)) == (
                401, "WEBHOOK_SIGNATURE_INVALID"
            ))
        #expect(
            await code(Self.signed(body, secret: livekit.secret, now: now.addingTimeInterval(-600))) == (
                401, "WEBHOOK_SIGNATURE_INVALID"
            ))
        // Signed for another body (one byte changed), or with no hash at all.
        #expect(
            await code(
                Self.signed(body, secret: livekit.secret, now: now), body.replacingOccurrences(of: "EV_1", with: "EV_2")
            ) == (401, "WEBHOOK_SIGNATURE_INVALID"))
        #expect(
            await code(Self.signed(body, secret: livekit.secret, now: now, sha256: "")) == (
                401, "WEBHOOK_SIGNATURE_INVALID"
            ))
        #expect(try await world.get(call.id, by: alice).state == .active, "nothing refused changed the call")
        // A signed body that is not an event is a 400; someone else's room is ignored.
        #expect(await code(Self.signed("[1]", secret: livekit.secret, now: now), "[1]") == (400, "VALIDATION_FAILED"))
        let other = Self.event("room_finished", room: "their-room")
        #expect(await code(Self.signed(other, secret: livekit.secret, now: now), other).0 == 200)
        // With a Bearer prefix too.
        var bearer = Self.signed(body, secret: livekit.secret, now: now)
        bearer.set("Authorization", "Bearer " + (bearer["Authorization"] ?? ""))
        #expect(await code(bearer).0 == 200)
        #expect(try await world.get(call.id, by: alice).state == .ended)
        await livekit.stop()
    }

    @Test func withoutLiveKitThereIsNoWebhook() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let body = Self.event("room_finished", room: "call_x")
        let answer = await post(
            world, body, headers: Self.signed(body, secret: "secret", key: "devkey", now: world.clock.now))
        #expect(answer.status == 404)
    }
}
