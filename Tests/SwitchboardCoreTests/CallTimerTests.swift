import Foundation
import SwitchboardCore
import Testing

/// The two timers: the ring timeout (deadline `at(45)` in every fixture) and the empty-room
/// watchdog (grace 30 s in these tables).
@Suite("Calls: ring timeout and empty-room watchdog", .timeLimit(.minutes(3)))
struct CallTimerTests {
    struct RingRow: Sendable, CustomTestStringConvertible {
        let fixture: Fixture
        let seconds: Double
        /// The resulting call, or `nil` when the timeout must do nothing.
        let expected: String?
        var testDescription: String { "\(fixture) at \(seconds)" }
        init(_ fixture: Fixture, _ seconds: Double, _ expected: String?) {
            self.fixture = fixture
            self.seconds = seconds
            self.expected = expected
        }
    }

    static let ringRows: [RingRow] = [
        RingRow(.convRinging, 44.999, nil),
        RingRow(.convRinging, 45, "ended:missed ended@45 | bob missed@45 | none"),
        RingRow(.convRinging, 50, "ended:missed ended@50 | bob missed@50 | none"),
        RingRow(.convActive, 45, nil),
        RingRow(.convActive, 500, nil),
        RingRow(.groupRinging, 44.999, nil),
        RingRow(.groupRinging, 45, "ended:missed ended@45 | bob missed@45, cora missed@45, dan declined@3 | none"),
        RingRow(
            .groupRinging, 46.5,
            "ended:missed ended@46.500 | bob missed@46.500, cora missed@46.500, dan declined@3 | none"),
        RingRow(.groupRingingLast, 44.999, nil),
        RingRow(.groupRingingLast, 45, "ended:missed ended@45 | bob missed@45, cora declined@3, dan busy@0 | none"),
        // An active group call stays active: only the invitations still ringing become missed.
        RingRow(.groupActive, 44.999, nil),
        RingRow(
            .groupActive, 45, "active answered@5 | bob accepted@5, cora missed@45, dan declined@3 | alice 5-, bob 5-"),
        RingRow(
            .groupActiveOneLeft, 60,
            "active answered@5 | bob accepted@5, cora missed@60, dan declined@3 | alice 5-8, bob 5-"),
        RingRow(
            .groupActiveWithGuest, 45,
            "active answered@5 | bob accepted@5, cora missed@45, dan declined@3 | alice 5-, bob 5-8, erin 9-"),
    ]

    @Test("ring timeout: nothing before the deadline; at and after it, exactly this", arguments: ringRows)
    func ringTimeout(row: RingRow) {
        let before = row.fixture.call
        let result = CallStateMachine.ringTimedOut(before, now: at(row.seconds))
        if let expected = row.expected {
            // Never a room to delete: a call that never got answered has none, an active one keeps it.
            expectTransition(result, from: before, summary: expected, notify: row.fixture.involved)
        } else {
            #expect(result == nil)
        }
    }

    @Test("ring timeout never touches an ended call", arguments: Fixture.ended, [45.0, 1_000])
    func ringTimeoutEnded(fixture: Fixture, seconds: Double) {
        #expect(CallStateMachine.ringTimedOut(fixture.call, now: at(seconds)) == nil)
    }

    @Test("an active group call where nothing rings any more has no ring timeout")
    func ringTimeoutNothingRinging() throws {
        let call = try #require(
            expectSuccess { () throws(CallTransitionError) in
                try CallStateMachine.decline(Fixture.groupActive.call, by: "cora", now: at(20))
            }
        ).call
        #expect(CallStateMachine.ringTimedOut(call, now: at(45)) == nil)
        #expect(CallStateMachine.ringTimedOut(call, now: at(4_000)) == nil)
    }

    @Test("the ring deadline is exact to the millisecond for any configured timeout", arguments: [45.0, 30, 0.25, 120])
    func ringDeadlineBoundary(timeout: Double) {
        let created = CallStateMachine.create(
            id: "call-1", scopeKind: .group, scopeID: "group-1", mode: .audio, caller: "alice",
            invitees: ["bob", "cora"], busy: [],
            roomName: room, now: at(10), ringTimeout: timeout)
        #expect(created.call.ringDeadline == at(10 + timeout))
        #expect(CallStateMachine.ringTimedOut(created.call, now: at(10 + timeout - 0.001)) == nil)
        let fired = CallStateMachine.ringTimedOut(created.call, now: at(10 + timeout))
        #expect(fired?.call.state == .ended)
        #expect(fired?.call.endReason == .missed)
        #expect(fired?.call.endedAt == at(10 + timeout))
        #expect(fired?.call.invitations.map(\.state) == [.missed, .missed])
        #expect(fired?.effects == CallEffects(notify: ["alice", "bob", "cora"]))
    }

    // MARK: Watchdog

    enum WatchOutcome: Sendable {
        /// Nothing changes: `nil`.
        case nothing
        /// Only the watchdog's memory changes: the call becomes `summary`, nobody is notified, no media work.
        case remembers(String)
        /// The call ends `connection_lost` as `summary`; its room is deleted and everyone involved is notified.
        case ends(String)
    }

    struct WatchRow: Sendable, CustomTestStringConvertible {
        let fixture: Fixture
        let emptySince: Double?
        let count: Int?
        let seconds: Double
        let outcome: WatchOutcome
        var testDescription: String {
            "\(fixture), empty since \(emptySince.map { "\($0)" } ?? "-"), count \(count.map(String.init) ?? "failed") at \(seconds)"
        }
        init(_ fixture: Fixture, emptySince: Double?, count: Int?, at seconds: Double, _ outcome: WatchOutcome) {
            self.fixture = fixture
            self.emptySince = emptySince
            self.count = count
            self.seconds = seconds
            self.outcome = outcome
        }
    }

    static let grace: TimeInterval = 30
    static let groupIn = "bob accepted@5, cora ringing@0, dan declined@3 | alice 5-, bob 5-"

    static let watchRows: [WatchRow] = [
        // A failed count is not an empty room: it neither starts, ends nor resets the emptiness.
        WatchRow(.groupActive, emptySince: nil, count: nil, at: 40, .nothing),
        WatchRow(.groupActive, emptySince: 10, count: nil, at: 40, .nothing),
        WatchRow(.groupActive, emptySince: 10, count: nil, at: 1_000, .nothing),
        // The first empty reading only starts the watchdog's memory.
        WatchRow(
            .groupActive, emptySince: nil, count: 0, at: 12, .remembers("active answered@5 empty@12 | " + groupIn)),
        WatchRow(
            .convActive, emptySince: nil, count: 0, at: 12,
            .remembers("active answered@5 empty@12 | bob accepted@5 | alice 5-, bob 5-")),
        // Empty for less than the grace: nothing new.
        WatchRow(.groupActive, emptySince: 10, count: 0, at: 20, .nothing),
        WatchRow(.groupActive, emptySince: 10, count: 0, at: 39.999, .nothing),
        // Exactly the grace, or more: connection lost; the ringing invitation is missed, everyone present leaves.
        WatchRow(
            .groupActive, emptySince: 10, count: 0, at: 40,
            .ends(
                "ended:connection_lost answered@5 ended@40 | bob accepted@5, cora missed@40, dan declined@3 | alice 5-40, bob 5-40"
            )),
        WatchRow(
            .groupActive, emptySince: 10, count: 0, at: 44,
            .ends(
                "ended:connection_lost answered@5 ended@44 | bob accepted@5, cora missed@44, dan declined@3 | alice 5-44, bob 5-44"
            )),
        WatchRow(
            .convActive, emptySince: 10, count: 0, at: 40,
            .ends("ended:connection_lost answered@5 ended@40 | bob accepted@5 | alice 5-40, bob 5-40")),
        WatchRow(
            .groupActiveOneLeft, emptySince: 10, count: 0, at: 40,
            .ends(
                "ended:connection_lost answered@5 ended@40 | bob accepted@5, cora missed@40, dan declined@3 | alice 5-8, bob 5-40"
            )),
        WatchRow(
            .groupActiveWithGuest, emptySince: 10, count: 0, at: 40,
            .ends(
                "ended:connection_lost answered@5 ended@40 | bob accepted@5, cora missed@40, dan declined@3 | alice 5-40, bob 5-8, erin 9-40"
            )),
        // Anyone in the room forgets the emptiness, even a moment before the grace runs out.
        WatchRow(.groupActive, emptySince: 10, count: 1, at: 20, .remembers("active answered@5 | " + groupIn)),
        WatchRow(.groupActive, emptySince: 10, count: 2, at: 39.999, .remembers("active answered@5 | " + groupIn)),
        WatchRow(
            .convActive, emptySince: 10, count: 1, at: 40,
            .remembers("active answered@5 | bob accepted@5 | alice 5-, bob 5-")),
        WatchRow(.groupActive, emptySince: nil, count: 1, at: 20, .nothing),
        WatchRow(.groupActive, emptySince: nil, count: 3, at: 1_000, .nothing),
    ]

    @Test("watchdog: exact result for each reading of an active call", arguments: watchRows)
    func watchdog(row: WatchRow) {
        var before = row.fixture.call
        before.emptySince = row.emptySince.map(at)
        let result = CallStateMachine.mediaCounted(
            before, participants: row.count, now: at(row.seconds), grace: Self.grace)
        switch row.outcome {
        case .nothing:
            #expect(result == nil)
        case .remembers(let expected):
            #expect(result.map { summary($0.call) } == expected)
            #expect(result?.effects == CallEffects())
        case .ends(let expected):
            expectTransition(
                result, from: before, summary: expected, notify: row.fixture.involved, media: [.deleteRoom(room)])
        }
    }

    @Test(
        "watchdog never touches a call that is not active",
        arguments: Fixture.allCases.filter { !Fixture.active.contains($0) }, [nil, 0, 1])
    func watchdogIgnoresInactive(fixture: Fixture, count: Int?) {
        var call = fixture.call
        #expect(CallStateMachine.mediaCounted(call, participants: count, now: at(1_000), grace: Self.grace) == nil)
        call.emptySince = at(1)  // even with a stale memory
        #expect(CallStateMachine.mediaCounted(call, participants: count, now: at(1_000), grace: Self.grace) == nil)
    }

    /// Feeds readings `(seconds, count)` in order, returning the call after each (unchanged when `nil`).
    func watch(
        _ call: CallRecord, _ readings: [(Double, Int?)], grace: TimeInterval = CallTimerTests.grace
    ) -> [CallRecord] {
        var call = call
        return readings.map { seconds, count in
            if let transition = CallStateMachine.mediaCounted(call, participants: count, now: at(seconds), grace: grace)
            {
                if transition.call.state != .ended {
                    #expect(transition.effects == CallEffects(), "bookkeeping notifies nobody")
                }
                call = transition.call
            }
            return call
        }
    }

    @Test("failed counts in the middle of an empty stretch neither reset it nor end the call early")
    func failedCountsKeepEmptiness() {
        let calls = watch(Fixture.groupActive.call, [(10, 0), (20, nil), (35, nil), (39, nil), (39.999, 0), (40, 0)])
        #expect(calls.map(\.emptySince) == [at(10), at(10), at(10), at(10), at(10), nil])
        #expect(calls.map(\.state) == [.active, .active, .active, .active, .active, .ended])
        #expect(calls.last?.endReason == .connectionLost)
        #expect(calls.last?.endedAt == at(40))
    }

    @Test("a single non-empty reading restarts the grace from the next empty one")
    func nonEmptyRestarts() {
        let calls = watch(Fixture.groupActive.call, [(10, 0), (25, 1), (35, 0), (40, 0), (64.999, 0), (65, 0)])
        #expect(calls.map(\.emptySince) == [at(10), nil, at(35), at(35), at(35), nil])
        #expect(calls.map(\.state) == [.active, .active, .active, .active, .active, .ended])
        #expect(calls.last?.endedAt == at(65))
    }

    @Test("with the default 90 s grace, 89.999 s of emptiness is fine and 90 s ends the call")
    func defaultGrace() {
        let calls = watch(Fixture.convActive.call, [(10, 0), (20, 0), (99.999, 0), (100, 0)], grace: 90)
        #expect(calls.map(\.state) == [.active, .active, .active, .ended])
        #expect(
            calls.last.map(summary)
                == "ended:connection_lost answered@5 ended@100 | bob accepted@5 | alice 5-100, bob 5-100")
    }
}
