import Foundation
import Testing
import SwitchboardTesting
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardPushCore
import SwitchboardWire

private func voip(_ byte: String) -> String { String(repeating: byte, count: 32) }

/// `GET`/`PUT /me/push-preferences` and `POST /calls`'s `ring`: whose phones ring, whose get
/// a quiet notice, and that a call not rung is still a call.
@Suite("Push preferences and ring lists", .serialized, .timeLimit(.minutes(3)))
struct PushPreferenceTests {
    private static func world() throws -> CallWorld {
        var configuration = ServerConfiguration()
        configuration.push.apns.bundleID = "com.example.phone"
        return try CallWorld(configuration: configuration, apnsTransport: ScriptedPushProvider())
    }

    /// An iPhone with a VoIP token (what rings) and an alert token (what a quiet notice uses).
    private static func iPhone(_ world: CallWorld, _ person: CallWorld.Person, _ byte: String) async {
        let alert = String(repeating: byte == "ab" ? "cd" : "ef", count: 32)
        let response = await world.app.request(
            "POST", "/push/devices", headers: person.headers,
            body:
                #"{"deviceId":"\#(UUID().uuidString)","platform":"ios","locale":"de","tokens":{"ios-voip":{"token":"\#(voip(byte))","environment":"production"},"ios-alert":{"token":"\#(alert)","environment":"production"}}}"#
        )
        #expect(response.status == 200, "\(response.text)")
    }

    /// (kind, channel, payload) of the jobs written for a user's call.
    private static func jobs(_ world: CallWorld, call: String, user: String) async throws -> [(String, String, String)]
    {
        try await world.app.application.store.read {
            try $0.query(
                "SELECT kind, channel, payload FROM push_jobs WHERE call_id = ? AND user_id = ? ORDER BY kind",
                [.text(call), .text(user)]
            ).map { (try $0.string("kind"), try $0.string("channel"), try $0.string("payload")) }
        }
    }

    private static func put(_ world: CallWorld, _ person: CallWorld.Person, _ body: String) async -> HTTPResponse {
        await world.app.request("PUT", "/me/push-preferences", headers: person.headers, body: body)
    }

    @Test func preferencesAreStoredCheckedAndAnsweredAsStored() async throws {
        let world = try Self.world()
        defer { world.close() }
        let bob = try await world.person("bob")
        let fresh = await world.app.request("GET", "/me/push-preferences", headers: bob.headers)
        #expect(fresh.status == 200)
        #expect(fresh.json?["calls"] as? String == "ring" && (fresh.json?["alwaysRing"] as? [String])?.isEmpty == true)
        let set = await Self.put(
            world, bob,
            #"{"calls":"notify","until":"2030-01-01T08:00:00Z","quietHours":{"timeZone":"Asia/Shanghai","rules":[{"days":["sat","sun"],"start":"23:00","end":"08:00"}]},"alwaysRing":["0D6C1F0E-9A51-4B7E-8D7E-2F6F2D0C1A11"]}"#
        )
        #expect(set.status == 200, "\(set.text)")
        #expect(set.json?["until"] as? String == "2030-01-01T08:00:00.000Z")
        #expect(set.json?["alwaysRing"] as? [String] == ["0d6c1f0e-9a51-4b7e-8d7e-2f6f2d0c1a11"])
        let read = await world.app.request("GET", "/me/push-preferences", headers: bob.headers)
        #expect(read.text == set.text)
        for (body, field) in [
            (#"{"calls":"loud","alwaysRing":[]}"#, "calls"),
            (#"{"calls":"ring","until":"soon","alwaysRing":[]}"#, "until"),
            (
                #"{"calls":"ring","quietHours":{"timeZone":"Nowhere/Land","rules":[]},"alwaysRing":[]}"#,
                "quietHours.timeZone"
            ),
            (
                #"{"calls":"ring","quietHours":{"timeZone":"UTC","rules":[{"days":["mon"],"start":"9:00","end":"10:00"}]},"alwaysRing":[]}"#,
                "quietHours.rules[0].start"
            ),
        ] {
            let refused = await Self.put(world, bob, body)
            #expect(refused.status == 400, "\(body)")
            #expect((refused.json?["error"] as? [String: Any])?["field"] as? String == field, "\(refused.text)")
        }
        #expect(await world.app.request("GET", "/me/push-preferences").status == 401)
    }

    /// Off: no push at all, yet the call rings the invitation, shows on the event stream and
    /// ends missed; notify: a quiet alert in the phone's language instead of the VoIP ring; a
    /// favourite rings through both.
    @Test func doNotDisturbQuietensPushesButTheCallIsACall() async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        await Self.iPhone(world, bob, "ab")

        #expect(await Self.put(world, bob, #"{"calls":"off","alwaysRing":[]}"#).status == 200)
        let silent = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(try await Self.jobs(world, call: silent.id, user: bob.id).isEmpty, "off: nothing is pushed")
        #expect(try await world.get(silent.id, by: bob).invitations.first?.state == .ringing)
        #expect(try await world.events(of: bob).contains { $0.kind == .callChanged && $0.callId == silent.id })
        world.clock.advance(seconds: 46)
        #expect(
            try await eventuallyTrying { try await world.get(silent.id, by: alice).endReason == .missed },
            "the ring times out as ever")

        #expect(await Self.put(world, bob, #"{"calls":"notify","alwaysRing":[]}"#).status == 200)
        let quiet = try #require(await world.call(alice, "conversation", conversation).call)
        let quietJobs = try await Self.jobs(world, call: quiet.id, user: bob.id)
        #expect(quietJobs.map(\.0) == ["ring"] && quietJobs.map(\.1) == ["ios-alert"], "the ring's quiet form")
        let payload = try #require(
            try JSONSerialization.jsonObject(with: Data((quietJobs.first?.2 ?? "").utf8)) as? [String: Any])
        #expect(payload["type"] as? String == "call_incoming" && payload["reason"] as? String == "not_rung")
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["interruption-level"] as? String == "passive" && aps["sound"] == nil)
        #expect((aps["alert"] as? [String: Any])?["body"] as? String == "Eingehender Anruf", "in the phone's language")
        // Once it went out, the ending is told like any ring's.
        #expect(
            try await eventuallyTrying {
                try await world.app.application.store.read {
                    try $0.query(
                        "SELECT state FROM push_jobs WHERE call_id = ? AND kind = 'ring'", [.text(quiet.id)]
                    ).first?.string("state")
                } == "delivered"
            })
        #expect(await world.act("cancel", quiet.id, by: alice).status == 200)
        let told = try await Self.jobs(world, call: quiet.id, user: bob.id)
        #expect(told.map(\.0) == ["notice", "ring"], "the cancel is told to the quietly told phone")
        #expect(told.first?.2.contains("\"reason\":\"cancelled\"") == true)

        #expect(await Self.put(world, bob, #"{"calls":"off","alwaysRing":["\#(alice.id)"]}"#).status == 200)
        let favourite = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(try await Self.jobs(world, call: favourite.id, user: bob.id).map(\.1) == ["ios-voip"])
    }

    /// A group call rings only the listed members; the others get a quiet notice and can
    /// still answer. A list naming someone who is not another member is refused.
    @Test func aRingListRingsOnlyThoseListed() async throws {
        let world = try Self.world()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let carol = try await world.person("carol"), dave = try await world.person("dave")
        let group = try await world.group(alice, [bob, carol, dave])
        await Self.iPhone(world, bob, "ab")
        await Self.iPhone(world, carol, "12")
        func create(_ ring: String) async -> HTTPResponse {
            await world.app.request(
                "POST", "/calls", headers: alice.headers,
                body:
                    #"{"scopeKind":"group","scopeId":"\#(group)","mode":"video","clientId":"\#(UUID().uuidString)","ring":\#(ring)}"#
            )
        }
        for bad in [
            #"["\#(alice.id)"]"#, #"["\#(UUID().uuidString)"]"#, #"["\#(bob.id)","\#(bob.id)"]"#, #""some""#, "7",
        ] {
            let refused = await create(bad)
            #expect(refused.status == 400, "\(bad): \(refused.text)")
        }
        let refused = await create(#"["\#(alice.id)"]"#)
        #expect((refused.json?["error"] as? [String: Any])?["field"] as? String == "ring")

        let created = await create(#"["\#(bob.id)"]"#)
        #expect(created.status == 201, "\(created.text)")
        let callID = try #require(created.json?["id"] as? String)
        #expect(try await Self.jobs(world, call: callID, user: bob.id).map(\.1) == ["ios-voip"])
        let carols = try await Self.jobs(world, call: callID, user: carol.id)
        #expect(carols.map(\.0) == ["ring"] && carols.map(\.1) == ["ios-alert"])
        let payload = try JSONSerialization.jsonObject(with: Data((carols.first?.2 ?? "").utf8)) as? [String: Any]
        #expect(payload?["groupName"] as? String == "team" && payload?["mode"] as? String == "video")
        // Carol was not rung, but is invited all the same: she answers and is in.
        #expect(await world.act("accept", callID, by: carol).status == 200)
        #expect(try await world.get(callID, by: alice).participants.contains { $0.userId == carol.id })
        #expect(await world.act("leave", callID, by: carol).status == 200)
        #expect(await world.act("leave", callID, by: alice).status == 200, "the last one out ends it")

        let none = await create(#""none""#)
        let noneID = try #require(none.json?["id"] as? String, "\(none.text)")
        let quietOnly = try await Self.jobs(world, call: noneID, user: bob.id)
        #expect(quietOnly.count == 1 && quietOnly.first?.2.contains("call_incoming") == true)
    }
}
