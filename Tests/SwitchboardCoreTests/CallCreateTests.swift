import Foundation
import SwitchboardCore
import Testing
import SwitchboardWire

/// Creating a call, and the record's derived views (who is involved, who is busy).
@Suite("Calls: create and the call record", .timeLimit(.minutes(3)))
struct CallCreateTests {
    func create(
        _ scope: ScopeKind = .group, mode: CallMode = .video, invitees: [String], busy: Set<String> = [],
        now: Date = at(0),
        timeout: TimeInterval = ringTimeout
    ) -> CallStateMachine.Transition {
        CallStateMachine.create(
            id: "call-7", scopeKind: scope, scopeID: "scope-7", mode: mode, caller: "alice", invitees: invitees,
            busy: busy,
            roomName: "room-7", now: now, ringTimeout: timeout)
    }

    @Test("a new call rings every invitee once, in order, never the caller")
    func ringsEveryInviteeOnce() {
        let created = create(invitees: ["bob", "alice", "cora", "bob", "dan", "cora"], now: at(3))
        let call = created.call
        #expect(summary(call) == "ringing | bob ringing@3, cora ringing@3, dan ringing@3 | none")
        #expect(created.effects == CallEffects(notify: ["alice", "bob", "cora", "dan"], ring: ["bob", "cora", "dan"]))
        #expect(call.id == "call-7" && call.scopeKind == .group && call.scopeID == "scope-7" && call.mode == .video)
        #expect(call.createdBy == "alice" && call.createdAt == at(3) && call.roomName == "room-7")
        #expect(call.ringDeadline == at(48))
        #expect(call.answeredAt == nil && call.endedAt == nil && call.endReason == nil && call.emptySince == nil)
    }

    @Test("the ring deadline is creation time plus the configured timeout", arguments: [45.0, 1, 0.5, 600])
    func ringDeadline(timeout: Double) {
        #expect(create(invitees: ["bob"], now: at(7), timeout: timeout).call.ringDeadline == at(7 + timeout))
    }

    @Test("mode and scope are kept as given", arguments: ScopeKind.known, CallMode.known)
    func keepsModeAndScope(scope: ScopeKind, mode: CallMode) {
        let call = create(scope, mode: mode, invitees: ["bob"]).call
        #expect(call.scopeKind == scope && call.mode == mode)
    }

    struct BusyRow: Sendable, CustomTestStringConvertible {
        let scope: ScopeKind
        let invitees: [String]
        let busy: Set<String>
        let expected: String
        let ring: [String]
        var testDescription: String { "\(scope.rawValue) \(invitees) busy \(busy.sorted())" }
    }

    static let busyRows: [BusyRow] = [
        BusyRow(
            scope: .group, invitees: ["bob", "cora", "dan"], busy: ["cora"],
            expected: "ringing | bob ringing@0, cora busy@0, dan ringing@0 | none",
            ring: ["bob", "dan"]),
        BusyRow(
            scope: .group, invitees: ["bob", "cora", "dan"], busy: ["bob", "dan"],
            expected: "ringing | bob busy@0, cora ringing@0, dan busy@0 | none",
            ring: ["cora"]),
        // Busy users who are not invited (or the caller) change nothing.
        BusyRow(
            scope: .group, invitees: ["bob", "cora"], busy: ["alice", "zed"],
            expected: "ringing | bob ringing@0, cora ringing@0 | none",
            ring: ["bob", "cora"]),
        BusyRow(
            scope: .conversation, invitees: ["bob"], busy: ["zed"], expected: "ringing | bob ringing@0 | none",
            ring: ["bob"]),
        // Everyone busy: born ended `busy`, nobody rung, but everyone told.
        BusyRow(
            scope: .conversation, invitees: ["bob"], busy: ["bob"], expected: "ended:busy ended@0 | bob busy@0 | none",
            ring: []),
        BusyRow(
            scope: .group, invitees: ["bob", "cora", "bob"], busy: ["bob", "cora"],
            expected: "ended:busy ended@0 | bob busy@0, cora busy@0 | none",
            ring: []),
    ]

    @Test("invitees already in another call are busy; when all are, the call is born ended", arguments: busyRows)
    func busyInvitees(row: BusyRow) {
        let created = create(row.scope, invitees: row.invitees, busy: row.busy)
        #expect(summary(created.call) == row.expected)
        #expect(created.effects.ring == row.ring)
        #expect(
            created.effects.notify == ["alice"]
                + row.invitees.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } })
        #expect(created.effects.media == [])
    }

    @Test("a call born ended is final: no timer, watchdog or action revives it")
    func bornEndedIsFinal() {
        let call = create(.conversation, invitees: ["bob"], busy: ["bob"]).call
        #expect(CallStateMachine.ringTimedOut(call, now: at(100)) == nil)
        #expect(CallStateMachine.mediaCounted(call, participants: 0, now: at(100), grace: 0) == nil)
        for action in UserAction.allCases {
            for user in ["alice", "bob"] {
                expectRefusal(.callEnded) { () throws(CallTransitionError) in
                    try perform(action, on: call, by: user, now: at(1), isMember: true)
                }
            }
        }
    }

    @Test("a call with nobody to invite does not ring forever: it is born ended, with nothing to ring")
    func nobodyToInvite() {
        for invitees in [[], ["alice"], ["alice", "alice"]] {
            let created = create(invitees: invitees)
            #expect(created.call.state == .ended, "\(invitees)")
            #expect(created.call.endedAt == at(0))
            #expect(created.effects.ring == [])
            #expect(created.call.invitations.isEmpty)
        }
    }

    // MARK: The record's views

    @Test("involved users: caller, invitees, then uninvited participants, once each")
    func involvedUserIDs() {
        let call = makeCall(
            .group, .active, answered: 5, invitations: [("bob", .accepted, 5), ("cora", .declined, 3)],
            participants: [("alice", 5, nil), ("bob", 5, 8), ("erin", 9, nil), ("frank", 10, 11)])
        #expect(call.involvedUserIDs == ["alice", "bob", "cora", "erin", "frank"])
        #expect(call.presentUserIDs == ["alice", "erin"])
        #expect(Fixture.groupRinging.call.ringingUserIDs == ["bob", "cora"])
        for fixture in Fixture.allCases {
            #expect(fixture.call.involvedUserIDs == fixture.involved, "\(fixture)")
        }
    }

    struct OccupancyRow: Sendable, CustomTestStringConvertible {
        let fixture: Fixture
        let occupied: [String]
        var testDescription: String { fixture.rawValue }
    }

    @Test(
        "a user is busy in a call as its caller while it rings, or as a present participant while it is active",
        arguments: [
            OccupancyRow(fixture: .convRinging, occupied: ["alice"]),
            OccupancyRow(fixture: .groupRinging, occupied: ["alice"]),
            OccupancyRow(fixture: .convActive, occupied: ["alice", "bob"]),
            OccupancyRow(fixture: .groupActive, occupied: ["alice", "bob"]),
            OccupancyRow(fixture: .groupActiveOneLeft, occupied: ["bob"]),
            OccupancyRow(fixture: .groupActiveWithGuest, occupied: ["alice", "erin"]),
        ] + Fixture.ended.map { OccupancyRow(fixture: $0, occupied: []) })
    func occupies(row: OccupancyRow) {
        let call = row.fixture.call
        #expect(everyone.filter { call.occupies($0) } == row.occupied)
    }
}
