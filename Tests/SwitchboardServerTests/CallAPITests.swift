import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire
import SwitchboardTesting

@Suite("Calls API contract (SPEC §2)", .timeLimit(.minutes(3)))
struct CallAPITests {
    @Test func aConversationCallRingsTheFriendAndWritesEventsForBoth() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let aliceCursor = try await world.events(of: alice).last?.id ?? 0
        let bobCursor = try await world.events(of: bob).last?.id ?? 0
        let created = await world.call(alice, "conversation", conversation, mode: "video")
        #expect(created.status == 201)
        let call = try #require(created.call)
        #expect(call.state == .ringing && call.mode == .video && call.createdBy == alice.id)
        #expect(call.invitations.map(\.userId) == [bob.id] && call.invitations.first?.state == .ringing)
        #expect(call.participants.isEmpty && call.endReason == nil && call.answeredAt == nil)
        // Never the room name or the clientId.
        #expect(
            !created.text.contains("call_\(call.id)") && !created.text.contains("clientId")
                && !created.text.contains("room"))
        #expect(try await world.events(of: alice, after: aliceCursor).map(\.kind.rawValue) == ["call_changed"])
        let bobEvents = try await world.events(of: bob, after: bobCursor)
        #expect(bobEvents.map(\.kind.rawValue) == ["call_changed"] && bobEvents.first?.callId == call.id)
    }

    @Test func theSameClientIDReturnsTheSameCallAndOtherContentIs409() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let clientID = UUID().uuidString
        let first = await world.call(alice, "conversation", conversation, clientID: clientID)
        let replay = await world.call(alice, "conversation", conversation, clientID: clientID)
        #expect(first.status == 201 && replay.status == 200)
        #expect(first.call?.id == replay.call?.id)
        let different = await world.call(alice, "conversation", conversation, mode: "video", clientID: clientID)
        #expect(different.status == 409 && different.errorCode == "CALL_BUSY")
        // The replay still answers after the call ended, with its current state.
        _ = await world.act("cancel", try #require(first.call?.id), by: alice)
        let later = await world.call(alice, "conversation", conversation, clientID: clientID.lowercased())
        #expect(later.status == 200 && later.call?.state == .ended)
    }

    @Test(arguments: ["", "conversation-x", "group2"]) func badScopeKindIs400(kind: String) async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice")
        let response = await world.call(alice, kind, UUID().uuidString)
        #expect(response.status == 400)
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == "scopeKind")
    }

    @Test func badModeAndClientIDAre400() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        #expect(await world.call(alice, "conversation", conversation, mode: "hologram").status == 400)
        #expect(await world.call(alice, "conversation", conversation, clientID: "not-a-uuid").status == 400)
        let missing = await world.app.request("POST", "/calls", headers: alice.headers, body: #"{"scopeKind":"group"}"#)
        #expect(missing.status == 400)
    }

    @Test func nonMembersExFriendsAndBlocksInEitherDirectionAre403() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            mallory = try await world.person("mallory")
        let conversation = try await world.befriend(alice, bob)
        let group = try await world.group(alice, [bob])
        let stranger = await world.call(mallory, "conversation", conversation)
        #expect(stranger.status == 403 && stranger.errorCode == "NOT_MEMBER")
        #expect(await world.call(mallory, "group", group).errorCode == "NOT_MEMBER")
        #expect(await world.call(mallory, "group", UUID().uuidString).status == 403)

        #expect(await world.app.request("PUT", "/blocks/\(alice.id)", headers: bob.headers).status == 200)
        let blockedByPeer = await world.call(alice, "conversation", conversation)
        #expect(blockedByPeer.status == 403 && blockedByPeer.errorCode == "BLOCKED")
        #expect(await world.call(bob, "conversation", conversation).errorCode == "BLOCKED")
        #expect(await world.app.request("DELETE", "/blocks/\(alice.id)", headers: bob.headers).status == 204)

        #expect(await world.app.request("DELETE", "/friends/\(bob.id)", headers: alice.headers).status == 204)
        let exFriend = await world.call(bob, "conversation", conversation)
        #expect(exFriend.status == 403 && exFriend.errorCode == "NOT_FRIENDS")
    }

    @Test func oneCallPerScopeAndOneCallPerCaller() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            carol = try await world.person("carol")
        let ab = try await world.befriend(alice, bob)
        let ac = try await world.befriend(alice, carol)
        #expect(await world.call(alice, "conversation", ab).status == 201)
        let sameScope = await world.call(bob, "conversation", ab)
        #expect(sameScope.status == 409 && sameScope.errorCode == "CALL_BUSY")
        let busyCaller = await world.call(alice, "conversation", ac)
        #expect(busyCaller.status == 409 && busyCaller.errorCode == "CALL_BUSY")
    }

    @Test func anInviteeInAnotherCallIsBusyAndAllBusyIsBornEnded() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            carol = try await world.person("carol")
        let bc = try await world.befriend(bob, carol)
        let ab = try await world.befriend(alice, bob)
        let first = try #require(await world.call(bob, "conversation", bc).call)
        #expect(await world.act("accept", first.id, by: carol).status == 200)
        // Bob is in an active call: Alice's call to him is 201 but already ended/busy.
        let busy = await world.call(alice, "conversation", ab)
        #expect(busy.status == 201)
        #expect(busy.call?.state == .ended && busy.call?.endReason == .busy)
        #expect(busy.call?.invitations.first?.state == .busy)
        // Alice is free again at once.
        #expect(await world.app.request("GET", "/calls/active", headers: alice.headers).text == "[]")
    }

    @Test func acceptMakesItActiveLeaveCompletesIt() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        let accepted = await world.act("accept", call.id, by: bob)
        #expect(accepted.status == 200 && accepted.call?.state == .active)
        #expect(Set(accepted.call?.participants.map(\.userId) ?? []) == [alice.id, bob.id])
        #expect(accepted.call?.answeredAt != nil)
        // A repeated accept (a retry, or a hedged copy that lost the race) answers the call
        // unchanged and writes no event.
        let eventsBefore = try await world.events(of: alice).count
        let again = await world.act("accept", call.id, by: bob)
        #expect(again.status == 200 && again.call == accepted.call)
        #expect(try await world.events(of: alice).count == eventsBefore)
        #expect(await world.act("cancel", call.id, by: alice).errorCode == "CALL_NOT_RINGING")
        #expect(await world.act("join", call.id, by: bob).errorCode == "CALL_NOT_JOINABLE")
        let left = await world.act("leave", call.id, by: bob)
        #expect(left.call?.state == .ended && left.call?.endReason == .completed)
        #expect(left.call?.participants.allSatisfy { $0.leftAt != nil } == true)
        #expect(await world.act("leave", call.id, by: alice).errorCode == "CALL_ENDED")
    }

    @Test func acceptAndJoinCarryTheMediaTokenWhenAskedAndRefuseABadBody() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        let bad = await world.act("accept", call.id, by: bob, body: #"{"mediaToken":"yes"}"#)
        #expect(bad.status == 400 && bad.errorCode == "VALIDATION_FAILED")
        #expect(try await world.get(call.id, by: bob).state == .ringing, "a refused body changes nothing")
        let accepted = await world.act("accept", call.id, by: bob, body: #"{"mediaToken":true}"#)
        #expect(accepted.status == 200)
        let answer = try JSONDecoder().decode(CallWithMedia.self, from: Data(accepted.bodyBytes))
        #expect(answer.call.state == .active)
        let media = try #require(answer.media)
        #expect(!media.token.isEmpty && !media.url.isEmpty)
        // The same claims as a token from POST /calls/{id}/media-token.
        let separate = try JSONDecoder().decode(
            MediaToken.self, from: Data(await world.act("media-token", call.id, by: bob).bodyBytes))
        #expect(separate.url == media.url)
        #expect(try payload(of: separate.token)["sub"] as? String == bob.id)
        #expect(try payload(of: media.token)["sub"] as? String == bob.id)
        #expect(
            try (payload(of: media.token)["video"] as? [String: Any])?["room"] as? String
                == (payload(of: separate.token)["video"] as? [String: Any])?["room"] as? String)
        // The query form, for a request without a body (one packet on the way up).
        let viaQuery = await world.act("accept?mediaToken=true", call.id, by: bob)
        #expect(try JSONDecoder().decode(CallWithMedia.self, from: Data(viaQuery.bodyBytes)).media != nil)
        #expect(await world.act("accept?mediaToken=yes", call.id, by: bob).errorCode == "VALIDATION_FAILED")
        #expect(await world.act("accept?mediaToken=false", call.id, by: bob).json?["media"] == nil)
        // Without the option (or with false) there is no media field.
        let plain = await world.act("accept", call.id, by: bob, body: #"{"mediaToken":false}"#)
        #expect(plain.status == 200 && (plain.json?["media"] == nil))
        #expect(await world.act("accept", call.id, by: bob).json?["media"] == nil)
    }

    /// `POST /calls/{id}/media-token?wait=S`: the caller of a ringing call is answered when the
    /// callee answers (its token) or the call ends (403), or when the wait runs out on the
    /// clock (403); anyone else, and any call not ringing, is answered at once.
    @Test func theCallersMediaTokenRequestWaitsForTheAnswer() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let hub = world.app.application.store.hub
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        for bad in ["26", "-1", "x", "", "1.5"] {
            #expect(
                await world.act("media-token?wait=\(bad)", call.id, by: alice).errorCode == "VALIDATION_FAILED",
                "wait=\(bad)")
        }
        #expect(
            await world.act("media-token", call.id, by: alice).errorCode == "NOT_PARTICIPANT",
            "no wait: at once, as before")
        // The invitee is not held (only an accept of its own makes it a participant).
        #expect(await world.act("media-token?wait=25", call.id, by: bob).errorCode == "NOT_PARTICIPANT")
        #expect(hub.waiterCount == 0)

        let held = Task { await world.act("media-token?wait=25", call.id, by: alice) }
        #expect(await eventually { hub.waiterCount == 1 })
        // An event of another kind wakes it, it reads the call again and goes on waiting.
        let message = await world.app.request(
            "POST", "/conversations/\(conversation)/messages", headers: bob.headers, body: #"{"text":"hi"}"#)
        #expect(message.status == 201)
        #expect(await eventually { hub.waiterCount == 1 }, "woken by the message, waiting again")
        #expect(await world.act("accept", call.id, by: bob).status == 200)
        let answer = try await value(of: held)
        #expect(answer.status == 200)
        let token = try JSONDecoder().decode(MediaToken.self, from: Data(answer.bodyBytes))
        #expect(try payload(of: token.token)["sub"] as? String == alice.id)
        #expect(hub.waiterCount == 0)
        // Active now: answered at once.
        #expect(await world.act("media-token?wait=25", call.id, by: alice).status == 200)
        _ = await world.act("leave", call.id, by: alice)

        // A call that ends while held: 403.
        let cancelled = try #require(await world.call(alice, "conversation", conversation).call)
        let heldThroughCancel = Task { await world.act("media-token?wait=25", cancelled.id, by: alice) }
        #expect(await eventually { hub.waiterCount == 1 })
        #expect(await world.act("cancel", cancelled.id, by: alice).status == 200)
        #expect(try await value(of: heldThroughCancel).errorCode == "NOT_PARTICIPANT")

        // A wait that runs out on the clock while the call still rings: 403.
        let ringing = try #require(await world.call(alice, "conversation", conversation).call)
        let heldOut = Task { await world.act("media-token?wait=5", ringing.id, by: alice) }
        #expect(await eventually { hub.waiterCount == 1 })
        world.clock.advance(seconds: 6)
        #expect(try await value(of: heldOut).errorCode == "NOT_PARTICIPANT")
        #expect(try await world.get(ringing.id, by: alice).state == .ringing)
    }

    @Test func declineAndCancel() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let declined = try #require(await world.call(alice, "conversation", conversation).call)
        #expect(await world.act("decline", declined.id, by: alice).errorCode == "INVITATION_NOT_RINGING")
        #expect(await world.act("cancel", declined.id, by: bob).errorCode == "NOT_CALLER")
        let answer = await world.act("decline", declined.id, by: bob)
        #expect(answer.call?.state == .ended && answer.call?.endReason == .declined)
        let cancelled = try #require(await world.call(alice, "conversation", conversation).call)
        let cancel = await world.act("cancel", cancelled.id, by: alice)
        #expect(cancel.call?.endReason == .cancelled && cancel.call?.invitations.first?.state == .cancelled)
    }

    @Test func strangersCannotSeeOrTouchACall() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            mallory = try await world.person("mallory")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        for action in ["accept", "decline", "join", "leave", "cancel", "media-token"] {
            #expect(await world.act(action, call.id, by: mallory).status == 404, "\(action)")
        }
        #expect(await world.app.request("GET", "/calls/\(call.id)", headers: mallory.headers).status == 404)
        #expect(await world.app.request("GET", "/calls/\(UUID().uuidString)", headers: alice.headers).status == 404)
        #expect(
            await world.app.request(
                "GET", "/calls/current?scopeKind=conversation&scopeId=\(conversation)", headers: mallory.headers
            ).status == 403)
    }

    @Test func groupCallBusyDeclineAcceptJoinAndLastLeaverEndsIt() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let owner = try await world.person("owner")
        let members = try await [
            world.person("member1"), world.person("member2"), world.person("member3"), world.person("member4"),
        ]
        let group = try await world.group(owner, members)
        // m4 is busy in a 1:1 call with a friend of theirs.
        let friend = try await world.person("friend")
        let side = try await world.befriend(members[3], friend)
        let sideCall = try #require(await world.call(members[3], "conversation", side).call)

        let call = try #require(await world.call(owner, "group", group).call)
        func states(_ call: CallInfo?) -> [String?] {
            members.map { member in call?.invitations.first { $0.userId == member.id }?.state.rawValue }
        }
        #expect(states(call) == ["ringing", "ringing", "ringing", "busy"])
        #expect(await world.act("decline", call.id, by: members[0]).call?.state == .ringing)
        let accepted = await world.act("accept", call.id, by: members[1])
        #expect(accepted.call?.state == .active)
        #expect(
            states(await world.act("join", call.id, by: members[2]).call) == [
                "declined", "accepted", "accepted", "busy",
            ])
        // The busy member joins once free; the one who declined can join too.
        _ = await world.act("cancel", sideCall.id, by: members[3])
        #expect(await world.act("join", call.id, by: members[3]).status == 200)
        let joined = await world.act("join", call.id, by: members[0], body: #"{"mediaToken":true}"#)
        #expect(joined.status == 200)
        #expect(
            try JSONDecoder().decode(CallWithMedia.self, from: Data(joined.bodyBytes)).media?.token.isEmpty == false)
        #expect(await world.act("join", call.id, by: members[0]).errorCode == "ALREADY_PARTICIPANT")
        for person in [owner, members[0], members[1], members[2]] {
            #expect(await world.act("leave", call.id, by: person).call?.state == .active)
        }
        let last = await world.act("leave", call.id, by: members[3])
        #expect(last.call?.state == .ended && last.call?.endReason == .completed)
    }

    @Test func everyGroupInviteeDecliningEndsIt() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let owner = try await world.person("owner"), a = try await world.person("anna"),
            b = try await world.person("bert")
        let group = try await world.group(owner, [a, b])
        let call = try #require(await world.call(owner, "group", group).call)
        _ = await world.act("decline", call.id, by: a)
        #expect(await world.act("decline", call.id, by: b).call?.endReason == .declined)
    }

    @Test func ringTimeoutMakesItMissedExactlyAtTheDeadline() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        world.clock.advance(seconds: 44.999)
        try await world.app.application.calls.sweepRingTimeouts()
        #expect(try await world.get(call.id, by: alice).state == .ringing)
        world.clock.advance(seconds: 0.001)
        try await world.app.application.calls.sweepRingTimeouts()
        let missed = try await world.get(call.id, by: alice)
        #expect(missed.state == .ended && missed.endReason == .missed && missed.invitations.first?.state == .missed)
    }

    @Test func activeReadsCurrentAndHistory() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let scope = "scopeKind=conversation&scopeId=\(conversation)"
        #expect(await world.app.request("GET", "/calls/current?\(scope)", headers: alice.headers).text == "null")
        let call = try #require(await world.call(alice, "conversation", conversation).call)
        for person in [alice, bob] {
            let active = try JSONDecoder().decode(
                [CallInfo].self,
                from: Data(await world.app.request("GET", "/calls/active", headers: person.headers).bodyBytes))
            #expect(active.map(\.id) == [call.id])
        }
        #expect(await world.app.request("GET", "/calls/current?\(scope)", headers: bob.headers).call?.id == call.id)
        #expect(
            await world.app.request("GET", "/calls/current?scopeKind=conversation", headers: bob.headers).status == 400)
        _ = await world.act("cancel", call.id, by: alice)
        // History: only ended calls, newest first, at most 100.
        for _ in 0..<101 {
            let next = try #require(await world.call(alice, "conversation", conversation).call)
            world.clock.advance(seconds: 1)
            _ = await world.act("cancel", next.id, by: alice)
        }
        _ = await world.call(alice, "conversation", conversation)  // one still ringing, not in history
        let history = try JSONDecoder().decode(
            [CallInfo].self,
            from: Data(await world.app.request("GET", "/calls/history?\(scope)", headers: bob.headers).bodyBytes))
        #expect(history.count == 100)
        #expect(history.allSatisfy { $0.state == .ended })
        #expect(history.map(\.endedAt!) == history.map(\.endedAt!).sorted(by: >))
        #expect(!history.contains { $0.id == call.id })  // the oldest fell off
    }

    @Test func unfriendingBlockingAndGroupChangesEndOrLeaveCalls() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let conversation = try await world.befriend(alice, bob)
        let first = try #require(await world.call(alice, "conversation", conversation).call)
        _ = await world.act("accept", first.id, by: bob)
        _ = await world.app.request("PUT", "/blocks/\(alice.id)", headers: bob.headers)
        #expect(try await world.get(first.id, by: alice).endReason == .blocked)
        _ = await world.app.request("DELETE", "/blocks/\(alice.id)", headers: bob.headers)
        let second = try #require(await world.call(bob, "conversation", conversation).call)
        _ = await world.app.request("DELETE", "/friends/\(bob.id)", headers: alice.headers)
        #expect(try await world.get(second.id, by: alice).endReason == .unfriended)

        let owner = try await world.person("owner"), m1 = try await world.person("member1"),
            m2 = try await world.person("member2")
        let group = try await world.group(owner, [m1, m2])
        let groupCall = try #require(await world.call(owner, "group", group).call)
        _ = await world.act("accept", groupCall.id, by: m1)
        _ = await world.act("accept", groupCall.id, by: m2)
        #expect(
            await world.app.request("DELETE", "/groups/\(group)/members/\(m1.id)", headers: owner.headers).status == 204
        )
        let afterRemoval = try await world.get(groupCall.id, by: owner)
        #expect(afterRemoval.state == .active && afterRemoval.participants.first { $0.userId == m1.id }?.leftAt != nil)
        #expect(await world.app.request("POST", "/groups/\(group)/leave", headers: m2.headers).status == 204)
        #expect(try await world.get(groupCall.id, by: owner).state == .active)
        #expect(await world.app.request("DELETE", "/groups/\(group)", headers: owner.headers).status == 204)
        #expect(try await world.get(groupCall.id, by: owner).endReason == .groupDissolved)
    }
}

/// The claims of a JWT (no signature check: the media tests verify signatures).
private func payload(of token: String) throws -> [String: Any] {
    let parts = token.split(separator: ".")
    guard parts.count == 3 else { throw TestFailure("not a JWT: \(token)") }
    var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    guard let data = Data(base64Encoded: base64),
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    else {
        throw TestFailure("bad JWT payload")
    }
    return object
}
