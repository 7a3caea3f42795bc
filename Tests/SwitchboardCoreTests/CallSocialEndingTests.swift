import Foundation
import SwitchboardCore
import Testing
import SwitchboardWire

/// Endings that come from the social graph: unfriending, blocking, dissolving a group, and
/// removing a member from a group, all at `at(20)`.
@Suite("Calls: social endings", .timeLimit(.minutes(3)))
struct CallSocialEndingTests {
    struct ScopeRow: Sendable, CustomTestStringConvertible {
        let fixture: Fixture
        let reason: CallInfo.EndReason
        let expected: String
        let media: [MediaAction]
        var testDescription: String { "\(fixture), \(reason.rawValue)" }
        init(_ fixture: Fixture, _ reason: CallInfo.EndReason, _ expected: String, media: [MediaAction] = []) {
            self.fixture = fixture
            self.reason = reason
            self.expected = expected
            self.media = media
        }
    }

    static let scopeRows: [ScopeRow] = [
        // A call that never got answered has no room: its invitations are withdrawn (`cancelled`).
        ScopeRow(.convRinging, .unfriended, "ended:unfriended ended@20 | bob cancelled@20 | none"),
        ScopeRow(.convRinging, .blocked, "ended:blocked ended@20 | bob cancelled@20 | none"),
        ScopeRow(
            .groupRinging, .groupDissolved,
            "ended:group_dissolved ended@20 | bob cancelled@20, cora cancelled@20, dan declined@3 | none"),
        ScopeRow(
            .groupRingingLast, .groupDissolved,
            "ended:group_dissolved ended@20 | bob cancelled@20, cora declined@3, dan busy@0 | none"),
        // An answered call's room is deleted first, and everyone still in it leaves now.
        ScopeRow(
            .convActive, .unfriended, "ended:unfriended answered@5 ended@20 | bob accepted@5 | alice 5-20, bob 5-20",
            media: [.deleteRoom(room)]),
        ScopeRow(
            .convActive, .blocked, "ended:blocked answered@5 ended@20 | bob accepted@5 | alice 5-20, bob 5-20",
            media: [.deleteRoom(room)]),
        ScopeRow(
            .groupActive, .groupDissolved,
            "ended:group_dissolved answered@5 ended@20 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-20, bob 5-20",
            media: [.deleteRoom(room)]),
        ScopeRow(
            .groupActiveOneLeft, .groupDissolved,
            "ended:group_dissolved answered@5 ended@20 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-8, bob 5-20",
            media: [.deleteRoom(room)]),
        ScopeRow(
            .groupActiveWithGuest, .groupDissolved,
            "ended:group_dissolved answered@5 ended@20 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-20, bob 5-8, erin 9-20",
            media: [.deleteRoom(room)]),
    ]

    @Test("unfriending, blocking or dissolving ends a live call with that reason", arguments: scopeRows)
    func scopeEnded(row: ScopeRow) {
        let before = row.fixture.call
        let result = CallStateMachine.scopeEnded(before, reason: row.reason, now: at(20))
        expectTransition(result, from: before, summary: row.expected, notify: row.fixture.involved, media: row.media)
    }

    @Test(
        "an ended call stays as it ended", arguments: Fixture.ended,
        [CallInfo.EndReason.unfriended, .blocked, .groupDissolved])
    func scopeEndedAfterEnd(fixture: Fixture, reason: CallInfo.EndReason) {
        #expect(CallStateMachine.scopeEnded(fixture.call, reason: reason, now: at(500)) == nil)
    }

    @Test("a watchdog memory does not survive the end of a call")
    func scopeEndedForgetsEmptiness() {
        var call = Fixture.groupActive.call
        call.emptySince = at(12)
        #expect(CallStateMachine.scopeEnded(call, reason: .groupDissolved, now: at(20))?.call.emptySince == nil)
    }

    // MARK: Member removed

    enum RemovalOutcome: Sendable {
        /// The user is not part of the call: `nil`.
        case nothing
        /// Part of the call but nothing of theirs is live: the call must not change and no media work is done.
        case unchanged
        /// Exactly this call and media work; everyone involved (including the removed user) is notified.
        case changed(String, media: [MediaAction] = [])
    }

    struct RemovalRow: Sendable, CustomTestStringConvertible {
        let fixture: Fixture
        let user: String
        let outcome: RemovalOutcome
        var testDescription: String { "\(fixture), \(user) removed" }
        init(_ fixture: Fixture, _ user: String, _ outcome: RemovalOutcome) {
            self.fixture = fixture
            self.user = user
            self.outcome = outcome
        }
    }

    static let removalRows: [RemovalRow] = [
        // Ringing: removing the caller cancels the call; removing a ringing invitee cancels only their invitation.
        RemovalRow(
            .groupRinging, "alice",
            .changed("ended:cancelled ended@20 | bob cancelled@20, cora cancelled@20, dan declined@3 | none")),
        RemovalRow(.groupRinging, "bob", .changed("ringing | bob cancelled@20, cora ringing@0, dan declined@3 | none")),
        RemovalRow(
            .groupRinging, "cora", .changed("ringing | bob ringing@0, cora cancelled@20, dan declined@3 | none")),
        RemovalRow(.groupRinging, "dan", .unchanged),
        RemovalRow(.groupRinging, "erin", .nothing),
        RemovalRow(.groupRinging, "zed", .nothing),
        RemovalRow(
            .groupRingingLast, "alice",
            .changed("ended:cancelled ended@20 | bob cancelled@20, cora declined@3, dan busy@0 | none")),
        RemovalRow(.groupRingingLast, "cora", .unchanged),
        RemovalRow(.groupRingingLast, "dan", .unchanged),
        RemovalRow(.groupRingingLast, "erin", .nothing),
        // Active: a present participant is disconnected from the room; the call goes on while anyone is in it.
        RemovalRow(
            .groupActive, "alice",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-20, bob 5-",
                media: [.removeParticipant(room: room, identity: "alice")])),
        RemovalRow(
            .groupActive, "bob",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-20",
                media: [.removeParticipant(room: room, identity: "bob")])),
        RemovalRow(
            .groupActive, "cora",
            .changed("active answered@5 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-, bob 5-")),
        RemovalRow(.groupActive, "dan", .unchanged),
        RemovalRow(.groupActive, "erin", .nothing),
        RemovalRow(.groupActive, "zed", .nothing),
        // Removing the last one in ends the call like a last leave: completed, room deleted, ringing invitation missed.
        RemovalRow(.groupActiveOneLeft, "alice", .unchanged),
        RemovalRow(
            .groupActiveOneLeft, "bob",
            .changed(
                "ended:completed answered@5 ended@20 | bob accepted@5, cora missed@20, dan declined@3 | alice 5-8, bob 5-20",
                media: [.deleteRoom(room)])),
        RemovalRow(
            .groupActiveOneLeft, "cora",
            .changed("active answered@5 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-8, bob 5-")),
        RemovalRow(.groupActiveOneLeft, "dan", .unchanged),
        RemovalRow(
            .groupActiveWithGuest, "alice",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-20, bob 5-8, erin 9-",
                media: [.removeParticipant(room: room, identity: "alice")])),
        RemovalRow(.groupActiveWithGuest, "bob", .unchanged),
        RemovalRow(
            .groupActiveWithGuest, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora cancelled@20, dan declined@3 | alice 5-, bob 5-8, erin 9-")),
        RemovalRow(
            .groupActiveWithGuest, "erin",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-8, erin 9-20",
                media: [.removeParticipant(room: room, identity: "erin")])),
        RemovalRow(.groupActiveWithGuest, "zed", .nothing),
    ]

    @Test("removing a group member: exact result for every live group call and user", arguments: removalRows)
    func memberRemoved(row: RemovalRow) {
        let before = row.fixture.call
        let result = CallStateMachine.memberRemoved(before, userID: row.user, now: at(20))
        switch row.outcome {
        case .nothing:
            #expect(result == nil)
        case .unchanged:
            #expect(result.map { summary($0.call) } ?? summary(before) == summary(before))
            #expect(result?.effects.media ?? [] == [])
        case .changed(let expected, let media):
            expectTransition(result, from: before, summary: expected, notify: row.fixture.involved, media: media)
        }
    }

    @Test("removing anyone from the group of an ended call changes nothing", arguments: Fixture.ended.filter(\.isGroup))
    func memberRemovedAfterEnd(fixture: Fixture) {
        for user in everyone {
            #expect(CallStateMachine.memberRemoved(fixture.call, userID: user, now: at(500)) == nil, "\(user)")
        }
    }

    @Test(
        "the last ringing invitee removed after everyone else declined: the call ends declined, not 'cancelled by the caller'"
    )
    func lastRingingRemovedAfterDeclines() {
        // cora declined, dan was busy, bob still rang when the owner removed him from the group.
        // Nobody accepted and nothing rings: the rule of §2 decline ("a group call ends when no invitation is
        // still ringing and nobody has accepted"). alice did not cancel, so her history must not say she did.
        let before = Fixture.groupRingingLast.call
        let result = CallStateMachine.memberRemoved(before, userID: "bob", now: at(20))
        expectTransition(
            result, from: before,
            summary: "ended:declined ended@20 | bob cancelled@20, cora declined@3, dan busy@0 | none",
            notify: ["alice", "bob", "cora", "dan"])
    }

    @Test("removing the only ringing invitee of a call nobody else can answer ends it at once, with no room work")
    func lastRingingRemovedNoOtherAnswer() {
        let before = makeCall(.group, .ringing, invitations: [("bob", .ringing, 0), ("cora", .busy, 0)])
        let result = CallStateMachine.memberRemoved(before, userID: "bob", now: at(20))
        #expect(result?.call.state == .ended)
        #expect(result?.call.endedAt == at(20))
        #expect(result?.call.invitations.map(\.state) == [.cancelled, .busy])
        #expect(result?.effects == CallEffects(notify: ["alice", "bob", "cora"]))
    }
}
