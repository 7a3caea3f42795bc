import Foundation
import SwitchboardCore
import Testing
import SwitchboardWire

/// Whole calls, from create to end, through the real transitions.
@Suite("Calls: scenarios end to end", .timeLimit(.minutes(3)))
struct CallScenarioTests {
    /// A call under test, advanced step by step; each step records an issue if it is refused.
    struct Story {
        var call: CallRecord
        var last: CallStateMachine.Transition?

        init(_ scope: ScopeKind, invitees: [String], busy: Set<String> = []) {
            let created = CallStateMachine.create(
                id: "call-1", scopeKind: scope, scopeID: "scope-1", mode: .audio, caller: "alice", invitees: invitees,
                busy: busy,
                roomName: room, now: at(0), ringTimeout: ringTimeout)
            call = created.call
            last = created
        }

        mutating func run(
            _ action: UserAction, _ user: String, at seconds: Double, isMember: Bool = true,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let call = call
            last = expectSuccess(
                { () throws(CallTransitionError) in
                    try perform(action, on: call, by: user, now: at(seconds), isMember: isMember)
                },
                sourceLocation: sourceLocation)
            if let last { self.call = last.call }
        }

        func refused(
            _ error: CallTransitionError, _ action: UserAction, _ user: String, at seconds: Double,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            expectRefusal(
                error,
                { () throws(CallTransitionError) in
                    try perform(action, on: call, by: user, now: at(seconds), isMember: true)
                },
                sourceLocation: sourceLocation)
        }
    }

    @Test("group call: busy, decline, accept, join by invitee and by an uninvited member, leave one by one")
    func groupLifecycle() {
        var story = Story(.group, invitees: ["bob", "cora", "dan", "erin"], busy: ["dan"])
        #expect(summary(story.call) == "ringing | bob ringing@0, cora ringing@0, dan busy@0, erin ringing@0 | none")
        #expect(
            story.last?.effects
                == CallEffects(notify: ["alice", "bob", "cora", "dan", "erin"], ring: ["bob", "cora", "erin"]))

        story.run(.decline, "cora", at: 3)
        #expect(summary(story.call) == "ringing | bob ringing@0, cora declined@3, dan busy@0, erin ringing@0 | none")
        story.refused(.callNotActive, .join, "frank", at: 4)

        story.run(.accept, "bob", at: 5)
        #expect(
            summary(story.call)
                == "active answered@5 | bob accepted@5, cora declined@3, dan busy@0, erin ringing@0 | alice 5-, bob 5-")
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob", "cora", "dan", "erin"]))

        story.run(.join, "erin", at: 8)
        #expect(
            summary(story.call)
                == "active answered@5 | bob accepted@5, cora declined@3, dan busy@0, erin accepted@8 | alice 5-, bob 5-, erin 8-"
        )

        story.run(.join, "frank", at: 10)  // joined the group after the call started
        #expect(summary(story.call).hasSuffix("| alice 5-, bob 5-, erin 8-, frank 10-"))
        #expect(story.last?.effects.notify == ["alice", "bob", "cora", "dan", "erin", "frank"])
        story.refused(.alreadyParticipant, .join, "frank", at: 11)
        story.refused(.callNotRinging, .cancel, "alice", at: 11)

        for (user, seconds) in [("alice", 20.0), ("bob", 21), ("erin", 22)] {
            story.run(.leave, user, at: seconds)
            #expect(story.call.state == .active, "\(user) left")
            #expect(story.last?.effects.media == [.removeParticipant(room: room, identity: user)])
            #expect(story.last?.effects.notify == ["alice", "bob", "cora", "dan", "erin", "frank"])
        }
        #expect(story.call.presentUserIDs == ["frank"])

        story.run(.leave, "frank", at: 30)
        #expect(
            summary(story.call)
                == "ended:completed answered@5 ended@30 | bob accepted@5, cora declined@3, dan busy@0, erin accepted@8 | "
                + "alice 5-20, bob 5-21, erin 8-22, frank 10-30")
        #expect(
            story.last?.effects
                == CallEffects(notify: ["alice", "bob", "cora", "dan", "erin", "frank"], media: [.deleteRoom(room)]))
        story.refused(.callEnded, .leave, "frank", at: 31)
        story.refused(.callEnded, .join, "bob", at: 31)
    }

    @Test(
        "group call: every invitee declines before anyone accepts; the last decline ends it",
        arguments: [Set<String>(), ["dan"]])
    func groupAllDecline(busy: Set<String>) {
        var story = Story(.group, invitees: ["bob", "cora", "dan"], busy: busy)
        let decliners = ["bob", "cora", "dan"].filter { !busy.contains($0) }
        for (index, user) in decliners.enumerated() {
            story.run(.decline, user, at: Double(index + 2))
            let isLast = index == decliners.count - 1
            #expect(story.call.state == (isLast ? .ended : .ringing), "after \(user)")
        }
        #expect(story.call.endReason == .declined)
        #expect(story.call.endedAt == at(Double(decliners.count + 1)))
        #expect(story.call.answeredAt == nil && story.call.participants.isEmpty)
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob", "cora", "dan"]))
    }

    @Test("group call: the ring timeout of an active call only turns ringing invitations into missed ones")
    func groupTimeoutWhileActive() throws {
        var story = Story(.group, invitees: ["bob", "cora", "dan"])
        story.run(.decline, "dan", at: 2)
        story.run(.accept, "bob", at: 5)
        #expect(CallStateMachine.ringTimedOut(story.call, now: at(44.999)) == nil)
        let timedOut = try #require(CallStateMachine.ringTimedOut(story.call, now: at(45)))
        #expect(
            summary(timedOut.call)
                == "active answered@5 | bob accepted@5, cora missed@45, dan declined@2 | alice 5-, bob 5-")
        #expect(timedOut.effects == CallEffects(notify: ["alice", "bob", "cora", "dan"]))
        #expect(CallStateMachine.ringTimedOut(timedOut.call, now: at(46)) == nil)
        story.call = timedOut.call
        // cora can no longer answer the ring, but as a member she can still join the call.
        story.refused(.invitationNotRinging, .accept, "cora", at: 50)
        story.run(.join, "cora", at: 50)
        #expect(story.call.presentUserIDs == ["alice", "bob", "cora"])
    }

    @Test("conversation call: a decline ends it declined, with no room to delete")
    func conversationDecline() {
        var story = Story(.conversation, invitees: ["bob"])
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob"], ring: ["bob"]))
        story.run(.decline, "bob", at: 4)
        #expect(summary(story.call) == "ended:declined ended@4 | bob declined@4 | none")
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob"]))
    }

    @Test(
        "conversation call: accepted, then either side hangs up: completed, room deleted", arguments: ["alice", "bob"])
    func conversationHangUp(leaver: String) {
        var story = Story(.conversation, invitees: ["bob"])
        story.run(.accept, "bob", at: 6)
        #expect(summary(story.call) == "active answered@6 | bob accepted@6 | alice 6-, bob 6-")
        story.refused(.callNotRinging, .cancel, "alice", at: 7)
        story.refused(.notJoinable, .join, "alice", at: 7)
        story.refused(.notJoinable, .join, "bob", at: 7)
        story.refused(.invitationNotRinging, .decline, "bob", at: 7)
        story.run(.leave, leaver, at: 60)
        #expect(summary(story.call) == "ended:completed answered@6 ended@60 | bob accepted@6 | alice 6-60, bob 6-60")
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob"], media: [.deleteRoom(room)]))
        #expect(CallStateMachine.ringTimedOut(story.call, now: at(100)) == nil)
    }

    @Test("conversation call: unanswered, it is missed exactly at the deadline")
    func conversationMissed() {
        let story = Story(.conversation, invitees: ["bob"])
        #expect(CallStateMachine.ringTimedOut(story.call, now: at(44.999)) == nil)
        let missed = CallStateMachine.ringTimedOut(story.call, now: at(45))
        #expect(missed.map { summary($0.call) } == "ended:missed ended@45 | bob missed@45 | none")
        #expect(missed?.effects == CallEffects(notify: ["alice", "bob"]))
    }

    @Test("the caller cancels a ringing call: every ringing invitation is cancelled, nothing else changes")
    func callerCancels() {
        var story = Story(.group, invitees: ["bob", "cora", "dan"], busy: ["dan"])
        story.run(.decline, "cora", at: 2)
        story.refused(.notCaller, .cancel, "bob", at: 3)
        story.run(.cancel, "alice", at: 3)
        #expect(summary(story.call) == "ended:cancelled ended@3 | bob cancelled@3, cora declined@2, dan busy@0 | none")
        #expect(story.last?.effects == CallEffects(notify: ["alice", "bob", "cora", "dan"]))
        story.refused(.callEnded, .accept, "bob", at: 4)
    }

    @Test(
        "watchdog after a quiet stretch: the call is lost only after a full grace of emptiness, and says so to everyone"
    )
    func watchdogLosesCall() throws {
        var story = Story(.group, invitees: ["bob", "cora"])
        story.run(.accept, "bob", at: 5)
        var call = story.call
        let first = try #require(CallStateMachine.mediaCounted(call, participants: 0, now: at(10), grace: 30))
        #expect(first.effects == CallEffects())
        #expect(first.call.emptySince == at(10))
        call = first.call
        #expect(CallStateMachine.mediaCounted(call, participants: nil, now: at(38), grace: 30) == nil)
        #expect(CallStateMachine.mediaCounted(call, participants: 0, now: at(39.999), grace: 30) == nil)
        let lost = try #require(CallStateMachine.mediaCounted(call, participants: 0, now: at(40), grace: 30))
        #expect(
            summary(lost.call)
                == "ended:connection_lost answered@5 ended@40 | bob accepted@5, cora missed@40 | alice 5-40, bob 5-40")
        #expect(lost.effects == CallEffects(notify: ["alice", "bob", "cora"], media: [.deleteRoom(room)]))
    }

    @Test(
        "someone who just joined is not cut off by the watchdog: joining restarts its grace",
        arguments: [UserAction.accept, .join])
    func joinRestartsWatchdog(action: UserAction) throws {
        // The room has been empty since 10 (grace 30). At 38 cora answers (or erin joins) and starts connecting
        // to the media room. A reading at 40 still sees 0: ending the call "connection lost" two seconds after
        // someone entered it cuts off a user who did everything right.
        var call = Fixture.groupActive.call
        call.emptySince = at(10)
        let joiner = action == .accept ? "cora" : "erin"
        call = try #require(
            expectSuccess { () throws(CallTransitionError) in
                try perform(action, on: call, by: joiner, now: at(38), isMember: true)
            }
        ).call
        #expect(call.presentUserIDs.contains(joiner))
        var ended: Date?
        for seconds in [40.0, 50, 60, 68, 70] where ended == nil {
            if let transition = CallStateMachine.mediaCounted(call, participants: 0, now: at(seconds), grace: 30) {
                call = transition.call
                if call.state == .ended { ended = at(seconds) }
            }
        }
        #expect(ended != nil, "a call that stays empty is still lost eventually")
        #expect(
            ended.map { $0 >= at(68) } ?? false,
            "lost at \(ended.map(offset) ?? "-"), 2 s after \(joiner) came in at 38")
    }
}
