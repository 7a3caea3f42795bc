import Foundation
import SwitchboardCore
import SwitchboardTesting
import SwitchboardWire
import Testing

@testable import SwitchboardServer

/// The record a call leaves in its conversation or group: one `call` message per call, for
/// every outcome, sent as a normal message event.
@Suite("Calls in the conversation", .serialized, .timeLimit(.minutes(3)))
struct CallMessageTests {
    private func records(_ world: CallWorld, _ person: CallWorld.Person, _ path: String) async throws -> [Message] {
        let response = await world.app.request("GET", path, headers: person.headers)
        return try JSONDecoder().decode(MessagePage.self, from: Data(response.bodyBytes)).messages.filter {
            $0.kind == .call
        }
    }

    @Test func everyOutcomeLeavesOneRecord() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob"),
            carol = try await world.person("carol")
        let ab = try await world.befriend(alice, bob), bc = try await world.befriend(bob, carol)
        var expected: [(String, CallOutcome)] = []

        let answered = try #require(await world.call(alice, "conversation", ab, mode: "video").call)
        #expect(await world.act("accept", answered.id, by: bob).status == 200)
        world.clock.advance(seconds: 192)
        #expect(await world.act("leave", answered.id, by: bob).status == 200)
        expected.append((answered.id, .answered))

        let declined = try #require(await world.call(alice, "conversation", ab).call)
        #expect(await world.act("decline", declined.id, by: bob).status == 200)
        expected.append((declined.id, .declined))

        let cancelled = try #require(await world.call(alice, "conversation", ab).call)
        #expect(await world.act("cancel", cancelled.id, by: alice).status == 200)
        expected.append((cancelled.id, .cancelled))

        let missed = try #require(await world.call(alice, "conversation", ab).call)
        world.clock.advance(seconds: 45)
        try await world.app.application.calls.sweepRingTimeouts()
        try await world.app.application.calls.sweepRingTimeouts()
        expected.append((missed.id, .missed))

        // Bob is in a call with Carol: Alice's call is born ended, busy.
        let other = try #require(await world.call(bob, "conversation", bc).call)
        #expect(await world.act("accept", other.id, by: carol).status == 200)
        let busy = try #require(await world.call(alice, "conversation", ab).call)
        #expect(busy.endReason == .busy)
        expected.append((busy.id, .busy))

        let shown = try await records(world, bob, "/conversations/\(ab)/messages")
        #expect(shown.count == expected.count)
        #expect(shown.map { $0.call?.callId } == expected.map(\.0))
        #expect(shown.map { $0.call?.outcome } == expected.map(\.1))
        #expect(shown.allSatisfy { $0.senderId == alice.id && $0.conversationId == ab })
        #expect(shown.first?.call?.durationSeconds == 192 && shown.first?.call?.mode == .video)
        #expect(shown.first?.text == "Video call · 3:12")
        #expect(shown.dropFirst().allSatisfy { $0.call?.durationSeconds == 0 })
        #expect(
            shown.map(\.text).dropFirst() == [
                "Declined audio call", "Cancelled audio call", "Missed audio call", "Audio call · busy",
            ])
        // Each reached both as a message event.
        let events = try await world.events(of: bob).filter { $0.kind == .message && $0.conversationId == ab }
        #expect(Set(events.compactMap(\.messageId)) == Set(shown.map(\.id)))
    }

    @Test func aGroupCallIsRecordedInItsGroupOnce() async throws {
        let world = try CallWorld()
        defer { world.close() }
        let owner = try await world.person("owner"), anna = try await world.person("anna"),
            bert = try await world.person("bert")
        let group = try await world.group(owner, [anna, bert])
        let call = try #require(await world.call(owner, "group", group).call)
        #expect(await world.act("accept", call.id, by: anna).status == 200)
        #expect(await world.act("decline", call.id, by: bert).status == 200)
        #expect(await world.act("leave", call.id, by: anna).status == 200)
        #expect(await world.act("leave", call.id, by: owner).status == 200)
        let shown = try await records(world, bert, "/groups/\(group)/messages")
        #expect(shown.count == 1 && shown.first?.call?.outcome == .answered && shown.first?.groupId == group)
        let events = try await world.events(of: bert).filter { $0.kind == .groupMessage }
        #expect(events.count == 1)
    }

    @Test func turnedOffNoRecordIsWritten() async throws {
        var configuration = ServerConfiguration()
        configuration.calls.messages = .off
        let world = try CallWorld(configuration: configuration)
        defer { world.close() }
        let alice = try await world.person("alice"), bob = try await world.person("bob")
        let ab = try await world.befriend(alice, bob)
        let call = try #require(await world.call(alice, "conversation", ab).call)
        #expect(await world.act("decline", call.id, by: bob).status == 200)
        #expect(try await records(world, bob, "/conversations/\(ab)/messages").isEmpty)
    }
}

/// ``CallChronicle``: the events of each change, without I/O.
@Suite("What a call's change announces", .timeLimit(.minutes(1)))
struct CallChronicleTests {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func call(
        _ state: CallState, invitations: [(String, InvitationState)], answered: Bool = false
    )
        -> CallRecord
    {
        CallRecord(
            id: "c", scopeKind: .group, scopeID: "g", mode: .audio, state: state,
            endReason: state == .ended ? (answered ? .completed : .missed) : nil, createdBy: "a", createdAt: start,
            answeredAt: answered ? start.addingTimeInterval(5) : nil,
            endedAt: state == .ended ? start.addingTimeInterval(65.9) : nil, ringDeadline: start.addingTimeInterval(45),
            roomName: "r", emptySince: nil,
            invitations: invitations.map { CallInvitation(userID: $0.0, state: $0.1, updatedAt: start) },
            participants: [])
    }

    @Test func eachChangeAnnouncesWhatHappenedInOrder() {
        let ringing = call(.ringing, invitations: [("b", .ringing), ("c", .ringing), ("d", .busy)])
        #expect(CallChronicle.events(from: nil, to: ringing) == [.init(.callRinging)])
        let declined = call(.ringing, invitations: [("b", .declined), ("c", .ringing), ("d", .busy)])
        #expect(CallChronicle.events(from: ringing, to: declined) == [.init(.callDeclined, userID: "b")])
        let active = call(.active, invitations: [("b", .declined), ("c", .accepted), ("d", .busy)], answered: true)
        #expect(CallChronicle.events(from: declined, to: active) == [.init(.callAnswered)])
        let ended = call(.ended, invitations: [("b", .declined), ("c", .accepted), ("d", .busy)], answered: true)
        #expect(CallChronicle.events(from: active, to: ended) == [.init(.callEnded)])
        #expect(CallChronicle.summary(of: ended)?.outcome == .answered)
        #expect(CallChronicle.durationSeconds(of: ended) == 60)
        // Unanswered rings that end are missed, in the same change as the end; a busy one never.
        let timedOut = call(.ended, invitations: [("b", .missed), ("c", .missed), ("d", .busy)])
        #expect(
            CallChronicle.events(from: ringing, to: timedOut) == [
                .init(.callMissed, userID: "b"), .init(.callMissed, userID: "c"), .init(.callEnded),
            ])
        #expect(CallChronicle.summary(of: timedOut)?.outcome == .missed)
        #expect(CallChronicle.events(from: ended, to: ended).isEmpty)
    }

    @Test func aCallEndedByASocialChangeBeforeAnAnswerLeavesNoRecord() {
        var unfriended = call(.ended, invitations: [("b", .cancelled)])
        unfriended.endReason = .unfriended
        #expect(CallChronicle.summary(of: unfriended) == nil)
        #expect(CallChronicle.clock(3725) == "1:02:05" && CallChronicle.clock(59) == "0:59")
    }
}
