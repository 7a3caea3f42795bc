import Foundation
import SwitchboardCore
import Testing
import SwitchboardWire

// Shared fixtures for the call state machine tests. Every time is an explicit `Date` a number of
// seconds after `t0`; nothing reads a clock.

/// The moment every fixture call was created.
let t0 = Date(timeIntervalSince1970: 1_800_000_000)

/// `seconds` after `t0`.
func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

/// Seconds after `t0`, as the summaries print them: `45`, `44.999`.
func offset(_ date: Date) -> String {
    let milliseconds = (date.timeIntervalSince(t0) * 1000).rounded()
    if milliseconds.truncatingRemainder(dividingBy: 1000) == 0 { return String(Int(milliseconds / 1000)) }
    return String(format: "%.3f", milliseconds / 1000)
}

/// The fixtures' ring timeout: every fixture call's ring deadline is `at(45)`.
let ringTimeout: TimeInterval = 45

/// The room of every fixture call.
let room = "room-call-1"

/// The users of the fixtures: `alice` always calls; `erin` is a group member nobody invited;
/// `zed` is a stranger to everything.
let cast = ["alice", "bob", "cora", "dan", "erin"]
let everyone = cast + ["zed"]

/// A compact, exact rendering of everything a client sees of a call (and the watchdog's memory):
/// `active answered@5 | bob accepted@5, cora ringing@0 | alice 5-, bob 5-8`.
/// Invitations are `user state@updatedAt`; participants are `user joinedAt-leftAt` (`-` alone while present).
func summary(_ call: CallRecord) -> String {
    var head = call.state.rawValue
    if let reason = call.endReason { head += ":" + reason.rawValue }
    if let answeredAt = call.answeredAt { head += " answered@" + offset(answeredAt) }
    if let endedAt = call.endedAt { head += " ended@" + offset(endedAt) }
    if let emptySince = call.emptySince { head += " empty@" + offset(emptySince) }
    let invitations = call.invitations.map { "\($0.userID) \($0.state.rawValue)@\(offset($0.updatedAt))" }
    let participants = call.participants.map { "\($0.userID) \(offset($0.joinedAt))-\($0.leftAt.map(offset) ?? "")" }
    return [
        head, invitations.isEmpty ? "none" : invitations.joined(separator: ", "),
        participants.isEmpty ? "none" : participants.joined(separator: ", "),
    ].joined(separator: " | ")
}

/// Everyone a call concerns, computed here independently of `CallRecord.involvedUserIDs`:
/// caller, invitees, then participants without an invitation, once each.
func involved(_ call: CallRecord) -> [String] {
    var result = [call.createdBy]
    for user in call.invitations.map(\.userID) + call.participants.map(\.userID) where !result.contains(user) {
        result.append(user)
    }
    return result
}

/// A call record written out literally, so a fixture does not depend on the transitions under test.
func makeCall(
    _ scope: ScopeKind, _ state: CallState, reason: CallInfo.EndReason? = nil, answered: Double? = nil,
    ended: Double? = nil,
    invitations: [(String, InvitationState, Double)], participants: [(String, Double, Double?)] = []
) -> CallRecord {
    CallRecord(
        id: "call-1", scopeKind: scope, scopeID: scope == .group ? "group-1" : "conversation-1",
        mode: scope == .group ? .video : .audio, state: state, endReason: reason, createdBy: "alice", createdAt: t0,
        answeredAt: answered.map(at), endedAt: ended.map(at), ringDeadline: at(ringTimeout), roomName: room,
        emptySince: nil,
        invitations: invitations.map { CallInvitation(userID: $0.0, state: $0.1, updatedAt: at($0.2)) },
        participants: participants.map { CallParticipant(userID: $0.0, joinedAt: at($0.1), leftAt: $0.2.map(at)) })
}

/// Named calls in every state, each written out literally. Group invitees are bob, cora and dan.
enum Fixture: String, CaseIterable, Sendable, CustomTestStringConvertible {
    // Live calls.
    case convRinging, convActive
    /// bob and cora ring, dan declined.
    case groupRinging
    /// Only bob rings: cora declined, dan was busy.
    case groupRingingLast
    /// alice and bob are in; cora rings; dan declined.
    case groupActive
    /// As `groupActive`, but alice left at 8: bob is the only one in.
    case groupActiveOneLeft
    /// As `groupActive`, but bob left at 8 and erin (never invited) joined at 9.
    case groupActiveWithGuest
    // Ended calls, each way a call can end.
    case convEndedDeclined, convEndedCancelled, convEndedMissed, convEndedBusy, convEndedCompleted,
        convEndedConnectionLost
    case convEndedUnfriended, convEndedBlocked
    case groupEndedDeclined, groupEndedCancelled, groupEndedMissed, groupEndedBusy, groupEndedCompleted
    case groupEndedConnectionLost, groupEndedDissolved

    var testDescription: String { rawValue }

    static let live: [Fixture] = [
        .convRinging, .convActive, .groupRinging, .groupRingingLast, .groupActive, .groupActiveOneLeft,
        .groupActiveWithGuest,
    ]
    static let ended: [Fixture] = allCases.filter { !live.contains($0) }
    static let active: [Fixture] = [.convActive, .groupActive, .groupActiveOneLeft, .groupActiveWithGuest]

    var call: CallRecord {
        let answeredGroup: [(String, InvitationState, Double)] = [
            ("bob", .accepted, 5), ("cora", .ringing, 0), ("dan", .declined, 3),
        ]
        switch self {
        case .convRinging: return makeCall(.conversation, .ringing, invitations: [("bob", .ringing, 0)])
        case .convActive:
            return makeCall(
                .conversation, .active, answered: 5, invitations: [("bob", .accepted, 5)],
                participants: [("alice", 5, nil), ("bob", 5, nil)])
        case .groupRinging:
            return makeCall(
                .group, .ringing, invitations: [("bob", .ringing, 0), ("cora", .ringing, 0), ("dan", .declined, 3)])
        case .groupRingingLast:
            return makeCall(
                .group, .ringing, invitations: [("bob", .ringing, 0), ("cora", .declined, 3), ("dan", .busy, 0)])
        case .groupActive:
            return makeCall(
                .group, .active, answered: 5, invitations: answeredGroup,
                participants: [("alice", 5, nil), ("bob", 5, nil)])
        case .groupActiveOneLeft:
            return makeCall(
                .group, .active, answered: 5, invitations: answeredGroup,
                participants: [("alice", 5, 8), ("bob", 5, nil)])
        case .groupActiveWithGuest:
            return makeCall(
                .group, .active, answered: 5, invitations: answeredGroup,
                participants: [("alice", 5, nil), ("bob", 5, 8), ("erin", 9, nil)])
        case .convEndedDeclined:
            return makeCall(.conversation, .ended, reason: .declined, ended: 3, invitations: [("bob", .declined, 3)])
        case .convEndedCancelled:
            return makeCall(.conversation, .ended, reason: .cancelled, ended: 4, invitations: [("bob", .cancelled, 4)])
        case .convEndedMissed:
            return makeCall(.conversation, .ended, reason: .missed, ended: 45, invitations: [("bob", .missed, 45)])
        case .convEndedBusy:
            return makeCall(.conversation, .ended, reason: .busy, ended: 0, invitations: [("bob", .busy, 0)])
        case .convEndedCompleted:
            return makeCall(
                .conversation, .ended, reason: .completed, answered: 5, ended: 30, invitations: [("bob", .accepted, 5)],
                participants: [("alice", 5, 30), ("bob", 5, 30)])
        case .convEndedConnectionLost:
            return makeCall(
                .conversation, .ended, reason: .connectionLost, answered: 5, ended: 200,
                invitations: [("bob", .accepted, 5)],
                participants: [("alice", 5, 200), ("bob", 5, 200)])
        case .convEndedUnfriended:
            return makeCall(
                .conversation, .ended, reason: .unfriended, answered: 5, ended: 30,
                invitations: [("bob", .accepted, 5)],
                participants: [("alice", 5, 30), ("bob", 5, 30)])
        case .convEndedBlocked:
            return makeCall(.conversation, .ended, reason: .blocked, ended: 10, invitations: [("bob", .cancelled, 10)])
        case .groupEndedDeclined:
            return makeCall(
                .group, .ended, reason: .declined, ended: 6,
                invitations: [("bob", .declined, 4), ("cora", .declined, 6), ("dan", .busy, 0)])
        case .groupEndedCancelled:
            return makeCall(
                .group, .ended, reason: .cancelled, ended: 7,
                invitations: [("bob", .cancelled, 7), ("cora", .cancelled, 7), ("dan", .declined, 3)])
        case .groupEndedMissed:
            return makeCall(
                .group, .ended, reason: .missed, ended: 45,
                invitations: [("bob", .missed, 45), ("cora", .missed, 45), ("dan", .declined, 3)])
        case .groupEndedBusy:
            return makeCall(
                .group, .ended, reason: .busy, ended: 0,
                invitations: [("bob", .busy, 0), ("cora", .busy, 0), ("dan", .busy, 0)])
        case .groupEndedCompleted:
            return makeCall(
                .group, .ended, reason: .completed, answered: 5, ended: 60,
                invitations: [("bob", .accepted, 5), ("cora", .missed, 45), ("dan", .declined, 3)],
                participants: [("alice", 5, 30), ("bob", 5, 60), ("erin", 9, 50)])
        case .groupEndedConnectionLost:
            return makeCall(
                .group, .ended, reason: .connectionLost, answered: 5, ended: 200,
                invitations: [("bob", .accepted, 5), ("cora", .missed, 45), ("dan", .declined, 3)],
                participants: [("alice", 5, 200), ("bob", 5, 200)])
        case .groupEndedDissolved:
            return makeCall(
                .group, .ended, reason: .groupDissolved, answered: 5, ended: 20,
                invitations: [("bob", .accepted, 5), ("cora", .cancelled, 20), ("dan", .declined, 3)],
                participants: [("alice", 5, 20), ("bob", 5, 20)])
        }
    }

    /// Who the call involves, written out (not computed by the code under test).
    var involved: [String] {
        switch self {
        case .groupActiveWithGuest, .groupEndedCompleted: ["alice", "bob", "cora", "dan", "erin"]
        default: isGroup ? ["alice", "bob", "cora", "dan"] : ["alice", "bob"]
        }
    }

    /// Members of the call's scope: the whole cast for the group, the pair for the conversation.
    var members: Set<String> { isGroup ? Set(cast) : ["alice", "bob"] }

    var isGroup: Bool { rawValue.hasPrefix("group") }
}

/// What a user can do to a call through the API.
enum UserAction: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case accept, decline, join, leave, cancel
    var testDescription: String { rawValue }
}

func perform(
    _ action: UserAction, on call: CallRecord, by user: String, now: Date, isMember: Bool, busyElsewhere: Bool = false
) throws(CallTransitionError) -> CallStateMachine.Transition {
    switch action {
    case .accept:
        // A repeated accept changes nothing: the same call, no effects.
        try CallStateMachine.accept(call, by: user, now: now, busyElsewhere: busyElsewhere)
            ?? .init(call: call, effects: CallEffects())
    case .decline: try CallStateMachine.decline(call, by: user, now: now)
    case .join: try CallStateMachine.join(call, by: user, now: now, isMember: isMember, busyElsewhere: busyElsewhere)
    case .leave: try CallStateMachine.leave(call, by: user, now: now)
    case .cancel: try CallStateMachine.cancel(call, by: user, now: now)
    }
}

/// The expected answer to one action.
enum Expected: Sendable {
    /// Refused with this error; nothing else happens.
    case refused(CallTransitionError)
    /// The call becomes exactly `summary`; the effects ask for `media` and notify `notify`
    /// (the fixture's involved users when `nil`); nobody is rung.
    case changed(String, media: [MediaAction] = [], notify: [String]? = nil)
    /// Accepted, but nothing changes and nobody is told (a repeated accept).
    case unchanged
}

/// One row of an action table: a fixture, who acts, and the exact outcome.
struct ActionRow: Sendable, CustomTestStringConvertible {
    let fixture: Fixture
    let actor: String
    let expected: Expected
    var busyElsewhere = false

    init(_ fixture: Fixture, _ actor: String, _ expected: Expected, busyElsewhere: Bool = false) {
        self.fixture = fixture
        self.actor = actor
        self.expected = expected
        self.busyElsewhere = busyElsewhere
    }

    var testDescription: String { "\(fixture) by \(actor)\(busyElsewhere ? " (busy elsewhere)" : "")" }
}

/// Performs `action` for the row at `at(20)` (before the ring deadline) and checks the whole outcome.
func check(
    _ action: UserAction, _ row: ActionRow, isMember: Bool? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    let before = row.fixture.call
    let member = isMember ?? row.fixture.members.contains(row.actor)
    let now = at(20)
    do {
        let transition = try perform(
            action, on: before, by: row.actor, now: now, isMember: member, busyElsewhere: row.busyElsewhere)
        switch row.expected {
        case .refused(let error):
            Issue.record("expected \(error), got \(summary(transition.call))", sourceLocation: sourceLocation)
        case .changed(let expected, let media, let notify):
            expectTransition(
                transition, from: before, summary: expected, notify: notify ?? row.fixture.involved, media: media,
                sourceLocation: sourceLocation)
        case .unchanged:
            #expect(transition.call == before && transition.effects == CallEffects(), sourceLocation: sourceLocation)
        }
    } catch {
        switch row.expected {
        case .refused(let expected):
            #expect(error == expected, sourceLocation: sourceLocation)
        case .changed(let expected, _, _):
            Issue.record("expected \(expected), got \(error)", sourceLocation: sourceLocation)
        case .unchanged:
            Issue.record("expected no change, got \(error)", sourceLocation: sourceLocation)
        }
    }
}

/// Checks a transition: the exact resulting call, effects, and that nothing that never changes did.
func expectTransition(
    _ transition: CallStateMachine.Transition?, from before: CallRecord, summary expected: String, notify: [String],
    media: [MediaAction] = [], sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let transition else {
        Issue.record("expected \(expected), got nil (nothing to do)", sourceLocation: sourceLocation)
        return
    }
    let call = transition.call
    #expect(summary(call) == expected, sourceLocation: sourceLocation)
    #expect(transition.effects.notify == notify, "notify", sourceLocation: sourceLocation)
    #expect(transition.effects.ring == [], "ring", sourceLocation: sourceLocation)
    #expect(transition.effects.media == media, "media", sourceLocation: sourceLocation)
    expectIdentityKept(call, before, sourceLocation: sourceLocation)
}

/// The fields no transition may change.
func expectIdentityKept(_ call: CallRecord, _ before: CallRecord, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(
        call.id == before.id && call.scopeKind == before.scopeKind && call.scopeID == before.scopeID,
        sourceLocation: sourceLocation)
    #expect(
        call.mode == before.mode && call.createdBy == before.createdBy && call.createdAt == before.createdAt,
        sourceLocation: sourceLocation)
    #expect(
        call.ringDeadline == before.ringDeadline && call.roomName == before.roomName, sourceLocation: sourceLocation)
}

/// Unwraps a transition the test expects to succeed, recording an issue (and returning `nil`) if it throws.
func expectSuccess(
    _ body: () throws(CallTransitionError) -> CallStateMachine.Transition,
    sourceLocation: SourceLocation = #_sourceLocation
) -> CallStateMachine.Transition? {
    do {
        return try body()
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Expects `body` to throw exactly `expected`.
func expectRefusal(
    _ expected: CallTransitionError, _ body: () throws(CallTransitionError) -> CallStateMachine.Transition,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        let transition = try body()
        Issue.record("expected \(expected), got \(summary(transition.call))", sourceLocation: sourceLocation)
    } catch {
        #expect(error == expected, sourceLocation: sourceLocation)
    }
}
