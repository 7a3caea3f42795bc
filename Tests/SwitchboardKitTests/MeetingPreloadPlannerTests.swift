import Foundation
import Testing
import SwitchboardKit

/// The pre-authorisation policy of meetings, on times alone.
@Suite("Meeting preload planner", .timeLimit(.minutes(2)))
struct MeetingPreloadPlannerTests {
    typealias Planner = MeetingPreloadPlanner
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let planner = Planner()

    static func at(_ seconds: Double) -> Date { now.addingTimeInterval(seconds) }

    static func meeting(
        _ id: String, startsIn seconds: Double, group: String = "g", callID: String? = nil
    ) -> Planner.Meeting {
        Planner.Meeting(id: id, groupID: group, startsAt: at(seconds), callID: callID)
    }

    static func held(_ id: String, expiresIn seconds: Double) -> Planner.Held {
        Planner.Held(scheduledCallID: id, expiresAt: at(seconds))
    }

    // MARK: One meeting, nothing held

    /// (start relative to now, requested now, the wake relative to now).
    static let firstRequests: [(Double, Bool, Double?)] = [
        (20 * 60, false, 12 * 60),  // due in 12 min
        (8 * 60 + 0.001, false, 0.001),  // a millisecond before it is due
        (8 * 60, true, 3600 + 8 * 60),  // due now; only the window's end is left to wake for
        (60, true, 3600 + 60),
        (0, true, 3600),
        (-10 * 60, true, 50 * 60),  // under way: still worth holding one
        (-3599, true, 1),
        (-3600, false, nil),  // started an hour ago: no longer looked after
        (-7200, false, nil),
    ]

    @Test(arguments: firstRequests)
    func aMeetingIsFirstAskedForEightMinutesBeforeItsStart(start: Double, requested: Bool, wake: Double?) {
        let plan = planner.plan(.init(now: Self.now, meetings: [Self.meeting("m", startsIn: start)]))
        #expect(plan.request == (requested ? ["m"] : []))
        #expect(plan.drop.isEmpty)
        #expect(plan.wake == wake.map(Self.at))
    }

    // MARK: Holding one

    /// (start, held expiry, requested now, wake), relative to now.
    static let replacements: [(Double, Double, Bool, Double?)] = [
        (8 * 60, 10 * 60, false, 9 * 60),  // issued now: good until a minute after the start
        (5 * 60, 6 * 60 + 1, false, 5 * 60 + 1),  // good just past start + margin
        (5 * 60, 6 * 60, true, 6 * 60),  // exactly start + margin: replaced now (kept until it expires)
        (5 * 60, 4 * 60, true, 4 * 60),  // expires before the start: replaced
        (-5 * 60, 2 * 60, false, 60),  // under way: good while it outlives now by a minute
        (-5 * 60, 60, true, 60),  // under way, a minute left: replaced
        (20 * 60, 10 * 60, false, 10 * 60),  // not due yet, held anyway (an older policy): kept to its expiry
    ]

    @Test(arguments: replacements)
    func aHeldOneIsReplacedWhenItWouldNotCoverTheStartOrNowByAMinute(
        start: Double, expiry: Double, requested: Bool, wake: Double?
    ) {
        let plan = planner.plan(
            .init(
                now: Self.now, meetings: [Self.meeting("m", startsIn: start)], held: [Self.held("m", expiresIn: expiry)]
            ))
        #expect(plan.request == (requested ? ["m"] : []))
        #expect(plan.drop.isEmpty, "an unexpired one of a candidate is kept while its replacement is asked for")
        #expect(plan.wake == wake.map(Self.at))
    }

    @Test(arguments: [0.0, -1, -600])
    func anExpiredOneIsDroppedAndAskedForAgain(expiry: Double) {
        let plan = planner.plan(
            .init(now: Self.now, meetings: [Self.meeting("m", startsIn: 60)], held: [Self.held("m", expiresIn: expiry)])
        )
        #expect(plan.drop == ["m"])
        #expect(plan.request == ["m"])
    }

    // MARK: The next three

    @Test func onlyTheNextThreeAreAskedForSoonestFirst() {
        let meetings = [
            Self.meeting("d", startsIn: 240), Self.meeting("b", startsIn: 120), Self.meeting("e", startsIn: 300),
            Self.meeting("a", startsIn: 60), Self.meeting("c", startsIn: 180),
        ]
        let plan = planner.plan(.init(now: Self.now, meetings: meetings, held: [Self.held("d", expiresIn: 500)]))
        #expect(plan.request == ["a", "b", "c"])
        #expect(plan.drop == ["d"], "the fourth is not looked after")
    }

    @Test func sameStartTimesAreOrderedById() {
        let meetings = ["z", "y", "x", "w"].map { Self.meeting($0, startsIn: 60) }
        #expect(planner.plan(.init(now: Self.now, meetings: meetings)).request == ["w", "x", "y"])
    }

    @Test func aMeetingScheduledEarlierPushesTheThirdOut() {
        let meetings = [
            Self.meeting("a", startsIn: 60), Self.meeting("b", startsIn: 120), Self.meeting("c", startsIn: 180),
        ]
        let held = meetings.map { Self.held($0.id, expiresIn: 600) }
        #expect(
            planner.plan(.init(now: Self.now, meetings: meetings, held: held))
                == .init(request: [], drop: [], wake: Self.at(540)))

        let plan = planner.plan(
            .init(now: Self.now, meetings: meetings + [Self.meeting("new", startsIn: 30)], held: held))
        #expect(plan.request == ["new"])
        #expect(plan.drop == ["c"])
    }

    @Test func aMeetingGoneFromTheListIsDropped() {
        let plan = planner.plan(
            .init(
                now: Self.now, meetings: [Self.meeting("b", startsIn: 60)],
                held: [Self.held("a", expiresIn: 600), Self.held("b", expiresIn: 600)]))
        #expect(plan.drop == ["a"])
        #expect(plan.request.isEmpty)
    }

    @Test func anEndedMeetingIsNeitherAskedForNorCountedAmongTheThree() {
        let meetings = (1...4).map { Self.meeting("m\($0)", startsIn: Double($0) * 60) }
        let plan = planner.plan(
            .init(now: Self.now, meetings: meetings, held: [Self.held("m1", expiresIn: 600)], ended: ["m1"]))
        #expect(plan.drop == ["m1"])
        #expect(plan.request == ["m2", "m3", "m4"])
    }

    @Test func aUsedMeetingIsNotAskedForAgain() {
        let meetings = [Self.meeting("a", startsIn: -60), Self.meeting("b", startsIn: 60)]
        #expect(planner.plan(.init(now: Self.now, meetings: meetings, used: ["a"])).request == ["b"])
    }

    @Test func aMeetingStartedAnHourAgoIsDroppedAtTheWindowsEnd() {
        let meetings = [Self.meeting("m", startsIn: -3599)]
        let before = planner.plan(.init(now: Self.now, meetings: meetings, held: [Self.held("m", expiresIn: 300)]))
        #expect(before.drop.isEmpty)
        #expect(before.wake == Self.at(1), "it wakes when the meeting leaves the window")
        let after = planner.plan(.init(now: Self.at(1), meetings: meetings, held: [Self.held("m", expiresIn: 300)]))
        #expect(after.drop == ["m"])
    }

    // MARK: Failures

    /// (seconds since the failed request, requested now, wake relative to now).
    static let retries: [(Double, Bool, Double?)] = [
        (0, false, 30), (10, false, 20), (29.999, false, 0.001), (30, true, 3660), (600, true, 3660),
    ]

    @Test(arguments: retries)
    func aFailedRequestIsAskedAgainThirtySecondsLater(since: Double, requested: Bool, wake: Double?) throws {
        let plan = planner.plan(
            .init(now: Self.now, meetings: [Self.meeting("m", startsIn: 60)], failedAt: ["m": Self.at(-since)]))
        #expect(plan.request == (requested ? ["m"] : []))
        let expected = try #require(wake)
        #expect(abs(try #require(plan.wake).timeIntervalSince(Self.at(expected))) < 1e-6)
    }

    @Test func withNothingToDoThereIsNoWake() {
        #expect(planner.plan(.init(now: Self.now, meetings: [])) == .init(request: [], drop: [], wake: nil))
    }

    // MARK: Following the wakes

    /// Following the planner from an hour before a meeting to the end of its window, asking when
    /// told (each answered at once, valid ten minutes): the first ask is at start − 8 min, and
    /// from the start on a held one is always valid (by more than the margin at each wake, so
    /// in between as well), with one ask per nine minutes.
    @Test(arguments: [0.0, 0.5, 479.0])
    func followingTheWakesAlwaysHoldsAValidOneFromTheStartOn(startOffset: Double) throws {
        let start = 3600 + startOffset
        let meetings = [Self.meeting("m", startsIn: start)]
        var now = Self.now, held: [Planner.Held] = [], asks: [Double] = []
        for _ in 0..<100 {
            let plan = planner.plan(.init(now: now, meetings: meetings, held: held))
            held.removeAll { plan.drop.contains($0.scheduledCallID) }
            if plan.request == ["m"] {
                asks.append(now.timeIntervalSince(Self.now))
                held = [Planner.Held(scheduledCallID: "m", expiresAt: now.addingTimeInterval(600))]
                continue
            }
            let elapsed = now.timeIntervalSince(Self.now)
            if elapsed >= start - 480, elapsed < start + 3600 {
                let expiry = try #require(held.first?.expiresAt, "nothing held at \(elapsed)")
                #expect(expiry.timeIntervalSince(max(now, Self.at(start))) > 60)
            }
            guard let wake = plan.wake else { break }
            #expect(wake > now)
            now = wake
        }
        #expect(asks.first == start - 480)
        // start − 8 min, then every nine minutes from start + 1 min to the window's end.
        let expected = [start - 480] + stride(from: start + 60, to: start + 3600, by: 540).map { $0 }
        #expect(asks == expected)
        #expect(held.isEmpty, "dropped at the window's end")
    }
}
