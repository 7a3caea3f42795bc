import Foundation
import SwitchboardCore
import Testing

/// Join, leave and cancel for every live call and kind of actor, at `at(20)`; then the rules
/// that hold for every call: strangers, ended calls, error codes.
@Suite("Calls: join, leave, cancel", .timeLimit(.minutes(3)))
struct CallParticipationTests {
    static let joinRows: [ActionRow] = [
        // Conversation calls cannot be joined, by anyone.
        ActionRow(.convRinging, "alice", .refused(.notJoinable)),
        ActionRow(.convRinging, "bob", .refused(.notJoinable)),
        ActionRow(.convActive, "alice", .refused(.notJoinable)),
        ActionRow(.convActive, "bob", .refused(.notJoinable)),
        // A ringing group call is not joinable yet: invitees accept instead.
        ActionRow(.groupRinging, "alice", .refused(.callNotActive)),
        ActionRow(.groupRinging, "bob", .refused(.callNotActive)),
        ActionRow(.groupRinging, "cora", .refused(.callNotActive)),
        ActionRow(.groupRinging, "dan", .refused(.callNotActive)),
        ActionRow(.groupRinging, "erin", .refused(.callNotActive)),
        ActionRow(.groupRingingLast, "alice", .refused(.callNotActive)),
        ActionRow(.groupRingingLast, "bob", .refused(.callNotActive)),
        ActionRow(.groupRingingLast, "dan", .refused(.callNotActive)),
        ActionRow(.groupRingingLast, "erin", .refused(.callNotActive)),
        // Active group call: participants are already in; a ringing invitee's join answers the invitation;
        // an invitee who declined, and a member nobody invited, may still join.
        ActionRow(.groupActive, "alice", .refused(.alreadyParticipant)),
        ActionRow(.groupActive, "bob", .refused(.alreadyParticipant)),
        ActionRow(
            .groupActive, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-, bob 5-, cora 20-")),
        ActionRow(
            .groupActive, "dan",
            .changed("active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-, dan 20-")),
        ActionRow(
            .groupActive, "erin",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-, erin 20-",
                notify: ["alice", "bob", "cora", "dan", "erin"])),
        // Someone who left comes back: same participant row, joined again, present again.
        ActionRow(
            .groupActiveOneLeft, "alice",
            .changed("active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 20-, bob 5-")),
        ActionRow(.groupActiveOneLeft, "bob", .refused(.alreadyParticipant)),
        ActionRow(
            .groupActiveOneLeft, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-8, bob 5-, cora 20-")),
        ActionRow(
            .groupActiveOneLeft, "dan",
            .changed("active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-8, bob 5-, dan 20-")),
        ActionRow(
            .groupActiveOneLeft, "erin",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-8, bob 5-, erin 20-",
                notify: ["alice", "bob", "cora", "dan", "erin"])),
        ActionRow(.groupActiveWithGuest, "alice", .refused(.alreadyParticipant)),
        ActionRow(
            .groupActiveWithGuest, "bob",
            .changed("active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 20-, erin 9-")),
        ActionRow(
            .groupActiveWithGuest, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-, bob 5-8, erin 9-, cora 20-"
            )),
        ActionRow(
            .groupActiveWithGuest, "dan",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-8, erin 9-, dan 20-"
            )),
        ActionRow(.groupActiveWithGuest, "erin", .refused(.alreadyParticipant)),
    ]

    @Test("join: exact result for every live call and actor (members of the scope)", arguments: joinRows)
    func join(row: ActionRow) {
        check(.join, row)
    }

    static let joinBusyRows: [ActionRow] = [
        ActionRow(.groupActive, "cora", .refused(.busy), busyElsewhere: true),
        ActionRow(.groupActive, "dan", .refused(.busy), busyElsewhere: true),
        ActionRow(.groupActive, "erin", .refused(.busy), busyElsewhere: true),
        ActionRow(.groupActiveWithGuest, "bob", .refused(.busy), busyElsewhere: true),
        // The more fundamental refusal wins.
        ActionRow(.groupActive, "bob", .refused(.alreadyParticipant), busyElsewhere: true),
        ActionRow(.groupRinging, "erin", .refused(.callNotActive), busyElsewhere: true),
        ActionRow(.convActive, "bob", .refused(.notJoinable), busyElsewhere: true),
    ]

    @Test("join while in another call is 409 CALL_BUSY", arguments: joinBusyRows)
    func joinWhileBusy(row: ActionRow) {
        check(.join, row)
    }

    static let formerMemberRows: [ActionRow] = [
        ActionRow(.groupActive, "cora", .refused(.notMember)),
        ActionRow(.groupActive, "dan", .refused(.notMember)),
        ActionRow(.groupActiveOneLeft, "alice", .refused(.notMember)),
        ActionRow(.groupActiveWithGuest, "bob", .refused(.notMember)),
        ActionRow(.groupRinging, "dan", .refused(.notMember)),
    ]

    @Test(
        "an involved user who is no longer a member of the group cannot join: 403 NOT_MEMBER",
        arguments: formerMemberRows)
    func formerMemberCannotJoin(row: ActionRow) {
        check(.join, row, isMember: false)
    }

    @Test("nobody outside the call and its group can ever join it", arguments: Fixture.allCases)
    func strangerNeverJoins(fixture: Fixture) {
        // The server answers 404 before asking the machine; the machine must still never let them in.
        for user in everyone where !fixture.involved.contains(user) && !fixture.members.contains(user) {
            #expect(throws: CallTransitionError.self, "\(user)") {
                try CallStateMachine.join(fixture.call, by: user, now: at(20), isMember: false, busyElsewhere: false)
            }
        }
    }

    static let leaveRows: [ActionRow] = [
        // Nobody is in a ringing call's room; the caller cancels instead.
        ActionRow(.convRinging, "alice", .refused(.notParticipant)),
        ActionRow(.convRinging, "bob", .refused(.notParticipant)),
        // Either side hanging up ends a conversation call and deletes its room.
        ActionRow(
            .convActive, "alice",
            .changed(
                "ended:completed answered@5 ended@20 | bob accepted@5 | alice 5-20, bob 5-20",
                media: [.deleteRoom(room)])),
        ActionRow(
            .convActive, "bob",
            .changed(
                "ended:completed answered@5 ended@20 | bob accepted@5 | alice 5-20, bob 5-20",
                media: [.deleteRoom(room)])),
        ActionRow(.groupRinging, "alice", .refused(.notParticipant)),
        ActionRow(.groupRinging, "bob", .refused(.notParticipant)),
        ActionRow(.groupRinging, "dan", .refused(.notParticipant)),
        ActionRow(.groupRingingLast, "alice", .refused(.notParticipant)),
        ActionRow(.groupRingingLast, "bob", .refused(.notParticipant)),
        // Group: a leaver who is not the last is removed from the room; the call goes on.
        ActionRow(
            .groupActive, "alice",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-20, bob 5-",
                media: [.removeParticipant(room: room, identity: "alice")])),
        ActionRow(
            .groupActive, "bob",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-20",
                media: [.removeParticipant(room: room, identity: "bob")])),
        ActionRow(.groupActive, "cora", .refused(.notParticipant)),
        ActionRow(.groupActive, "dan", .refused(.notParticipant)),
        // The last one out ends the call `completed`, deletes the room, and cora's unanswered ring is missed.
        ActionRow(.groupActiveOneLeft, "alice", .refused(.notParticipant)),
        ActionRow(
            .groupActiveOneLeft, "bob",
            .changed(
                "ended:completed answered@5 ended@20 | bob accepted@5, cora missed@20, dan declined@3 | alice 5-8, bob 5-20",
                media: [.deleteRoom(room)])),
        ActionRow(.groupActiveOneLeft, "cora", .refused(.notParticipant)),
        ActionRow(.groupActiveOneLeft, "dan", .refused(.notParticipant)),
        ActionRow(
            .groupActiveWithGuest, "alice",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-20, bob 5-8, erin 9-",
                media: [.removeParticipant(room: room, identity: "alice")])),
        ActionRow(.groupActiveWithGuest, "bob", .refused(.notParticipant)),
        ActionRow(.groupActiveWithGuest, "cora", .refused(.notParticipant)),
        ActionRow(.groupActiveWithGuest, "dan", .refused(.notParticipant)),
        ActionRow(
            .groupActiveWithGuest, "erin",
            .changed(
                "active answered@5 | bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-8, erin 9-20",
                media: [.removeParticipant(room: room, identity: "erin")])),
    ]

    @Test("leave: exact result for every live call and actor", arguments: leaveRows)
    func leave(row: ActionRow) {
        check(.leave, row)
    }

    static let cancelRows: [ActionRow] = [
        ActionRow(.convRinging, "alice", .changed("ended:cancelled ended@20 | bob cancelled@20 | none")),
        ActionRow(.convRinging, "bob", .refused(.notCaller)),
        ActionRow(.convActive, "alice", .refused(.callNotRinging)),
        ActionRow(.convActive, "bob", .refused(.notCaller)),
        // Only ringing invitations become cancelled; other answers stay as they were.
        ActionRow(
            .groupRinging, "alice",
            .changed("ended:cancelled ended@20 | bob cancelled@20, cora cancelled@20, dan declined@3 | none")),
        ActionRow(.groupRinging, "bob", .refused(.notCaller)),
        ActionRow(.groupRinging, "cora", .refused(.notCaller)),
        ActionRow(.groupRinging, "dan", .refused(.notCaller)),
        ActionRow(
            .groupRingingLast, "alice",
            .changed("ended:cancelled ended@20 | bob cancelled@20, cora declined@3, dan busy@0 | none")),
        ActionRow(.groupRingingLast, "bob", .refused(.notCaller)),
        ActionRow(.groupRingingLast, "dan", .refused(.notCaller)),
        ActionRow(.groupActive, "alice", .refused(.callNotRinging)),
        ActionRow(.groupActive, "bob", .refused(.notCaller)),
        ActionRow(.groupActive, "cora", .refused(.notCaller)),
        ActionRow(.groupActive, "dan", .refused(.notCaller)),
        ActionRow(.groupActiveOneLeft, "alice", .refused(.callNotRinging)),
        ActionRow(.groupActiveOneLeft, "bob", .refused(.notCaller)),
        ActionRow(.groupActiveWithGuest, "alice", .refused(.callNotRinging)),
        ActionRow(.groupActiveWithGuest, "erin", .refused(.notCaller)),
    ]

    @Test("cancel: exact result for every live call and actor", arguments: cancelRows)
    func cancel(row: ActionRow) {
        check(.cancel, row)
    }

    @Test(
        "someone the call does not involve gets 404 NOT_FOUND from accept, decline, leave and cancel",
        arguments: Fixture.allCases, [UserAction.accept, .decline, .leave, .cancel])
    func notInvolved(fixture: Fixture, action: UserAction) {
        let strangers = everyone.filter { !fixture.involved.contains($0) }
        #expect(!strangers.isEmpty)
        for user in strangers {
            check(action, ActionRow(fixture, user, .refused(.notInvolved)))
        }
    }

    @Test(
        "every action on an ended call is 409 CALL_ENDED for everyone who can see it", arguments: Fixture.ended,
        UserAction.allCases)
    func endedCall(fixture: Fixture, action: UserAction) {
        let canSee = everyone.filter {
            fixture.involved.contains($0) || (action == .join && fixture.members.contains($0))
        }
        for user in canSee {
            check(action, ActionRow(fixture, user, .refused(.callEnded)))
        }
    }

    @Test("no two refusals share a message")
    func errorCodesDistinct() {
        let all: [CallTransitionError] = [
            .notInvolved, .notCaller, .notMember, .invitationNotRinging, .callEnded, .callNotRinging, .callNotActive,
            .notJoinable,
            .notParticipant, .alreadyParticipant, .busy,
        ]
        #expect(Set(all.map(\.message)).count == all.count)
        #expect(all.allSatisfy { !$0.message.isEmpty })
    }
}
