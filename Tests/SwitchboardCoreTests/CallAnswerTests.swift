import Foundation
import Testing

/// Accept and decline, for every live call and every kind of actor, at `at(20)`.
/// Who is who: alice is the caller; in group fixtures bob/cora/dan are invitees (see `Fixture`);
/// erin is a member nobody invited (a participant in `groupActiveWithGuest`).
@Suite("Calls: accept and decline", .timeLimit(.minutes(3)))
struct CallAnswerTests {
    static let acceptRows: [ActionRow] = [
        // Conversation: only bob's ringing invitation can be accepted. An accept repeated by an
        // invitee who accepted and is present changes nothing (a retried or hedged request).
        ActionRow(.convRinging, "alice", .refused(.invitationNotRinging)),
        ActionRow(.convRinging, "bob", .changed("active answered@20 | bob accepted@20 | alice 20-, bob 20-")),
        ActionRow(.convActive, "alice", .refused(.invitationNotRinging)),
        ActionRow(.convActive, "bob", .unchanged),
        // Ringing group: the first accept makes the call active with the caller and the acceptor; the rest keep ringing.
        ActionRow(.groupRinging, "alice", .refused(.invitationNotRinging)),
        ActionRow(
            .groupRinging, "bob",
            .changed("active answered@20 | bob accepted@20, cora ringing@0, dan declined@3 | alice 20-, bob 20-")),
        ActionRow(
            .groupRinging, "cora",
            .changed("active answered@20 | bob ringing@0, cora accepted@20, dan declined@3 | alice 20-, cora 20-")),
        ActionRow(.groupRinging, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupRingingLast, "alice", .refused(.invitationNotRinging)),
        ActionRow(
            .groupRingingLast, "bob",
            .changed("active answered@20 | bob accepted@20, cora declined@3, dan busy@0 | alice 20-, bob 20-")),
        ActionRow(.groupRingingLast, "cora", .refused(.invitationNotRinging)),
        ActionRow(.groupRingingLast, "dan", .refused(.invitationNotRinging)),
        // Active group: a still-ringing invitee accepts into the running call; answeredAt stays the first answer.
        ActionRow(.groupActive, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActive, "bob", .unchanged),
        ActionRow(
            .groupActive, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-, bob 5-, cora 20-")),
        ActionRow(.groupActive, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveOneLeft, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveOneLeft, "bob", .unchanged),
        ActionRow(
            .groupActiveOneLeft, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-8, bob 5-, cora 20-")),
        ActionRow(.groupActiveOneLeft, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "bob", .refused(.invitationNotRinging)),
        ActionRow(
            .groupActiveWithGuest, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora accepted@20, dan declined@3 | alice 5-, bob 5-8, erin 9-, cora 20-"
            )),
        ActionRow(.groupActiveWithGuest, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "erin", .refused(.invitationNotRinging)),
    ]

    @Test("accept: exact result for every live call and actor", arguments: acceptRows)
    func accept(row: ActionRow) {
        check(.accept, row)
    }

    static let acceptBusyRows: [ActionRow] = [
        // A ringing invitee who is in another call cannot accept; their invitation keeps ringing.
        ActionRow(.convRinging, "bob", .refused(.busy), busyElsewhere: true),
        ActionRow(.groupRinging, "cora", .refused(.busy), busyElsewhere: true),
        ActionRow(.groupActive, "cora", .refused(.busy), busyElsewhere: true),
        // Without a ringing invitation, that is the answer whether or not they are busy (bob
        // accepted already and is in the call: a repeat changes nothing).
        ActionRow(.groupActive, "dan", .refused(.invitationNotRinging), busyElsewhere: true),
        ActionRow(.convActive, "bob", .unchanged, busyElsewhere: true),
    ]

    @Test("accept while in another call is 409 CALL_BUSY for a ringing invitee", arguments: acceptBusyRows)
    func acceptWhileBusy(row: ActionRow) {
        check(.accept, row)
    }

    static let declineRows: [ActionRow] = [
        // Conversation: bob's decline ends the call; it never had a room, so no media work.
        ActionRow(.convRinging, "alice", .refused(.invitationNotRinging)),
        ActionRow(.convRinging, "bob", .changed("ended:declined ended@20 | bob declined@20 | none")),
        ActionRow(.convActive, "alice", .refused(.invitationNotRinging)),
        ActionRow(.convActive, "bob", .refused(.invitationNotRinging)),
        // Ringing group: one decline among several ringing invitations changes only that invitation.
        ActionRow(.groupRinging, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupRinging, "bob", .changed("ringing | bob declined@20, cora ringing@0, dan declined@3 | none")),
        ActionRow(.groupRinging, "cora", .changed("ringing | bob ringing@0, cora declined@20, dan declined@3 | none")),
        ActionRow(.groupRinging, "dan", .refused(.invitationNotRinging)),
        // The last ringing invitee declines and nobody accepted: ended `declined`, even though dan was busy.
        ActionRow(.groupRingingLast, "alice", .refused(.invitationNotRinging)),
        ActionRow(
            .groupRingingLast, "bob",
            .changed("ended:declined ended@20 | bob declined@20, cora declined@3, dan busy@0 | none")),
        ActionRow(.groupRingingLast, "cora", .refused(.invitationNotRinging)),
        ActionRow(.groupRingingLast, "dan", .refused(.invitationNotRinging)),
        // Active group: a decline never ends a call somebody answered.
        ActionRow(.groupActive, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActive, "bob", .refused(.invitationNotRinging)),
        ActionRow(
            .groupActive, "cora",
            .changed("active answered@5 | bob accepted@5, cora declined@20, dan declined@3 | alice 5-, bob 5-")),
        ActionRow(.groupActive, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveOneLeft, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveOneLeft, "bob", .refused(.invitationNotRinging)),
        ActionRow(
            .groupActiveOneLeft, "cora",
            .changed("active answered@5 | bob accepted@5, cora declined@20, dan declined@3 | alice 5-8, bob 5-")),
        ActionRow(.groupActiveOneLeft, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "alice", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "bob", .refused(.invitationNotRinging)),
        ActionRow(
            .groupActiveWithGuest, "cora",
            .changed(
                "active answered@5 | bob accepted@5, cora declined@20, dan declined@3 | alice 5-, bob 5-8, erin 9-")),
        ActionRow(.groupActiveWithGuest, "dan", .refused(.invitationNotRinging)),
        ActionRow(.groupActiveWithGuest, "erin", .refused(.invitationNotRinging)),
    ]

    @Test("decline: exact result for every live call and actor", arguments: declineRows)
    func decline(row: ActionRow) {
        check(.decline, row)
    }
}
