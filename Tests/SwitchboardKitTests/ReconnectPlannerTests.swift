import Testing
import SwitchboardKit

/// The reconnect rules of SPEC §4 rule 12 on the pure planner: durations, boundaries, the live
/// cursor, flapping networks and failures while reachability says online.
@Suite("Reconnect planner", .timeLimit(.minutes(1)))
struct ReconnectPlannerTests {
    typealias Plan = ReconnectPlanner.Plan

    /// Offline at 100 s, back online `seconds` later.
    private func plan(after seconds: Double, cursorLive: Bool = true) -> ReconnectPlanner.Action {
        var planner = ReconnectPlanner()
        #expect(planner.networkLost(at: 100) == .holdFeed)
        return planner.networkRestored(at: 100 + seconds, cursorLive: cursorLive)
    }

    @Test(arguments: [
        (0.0, Plan.resumeFeed), (1, .resumeFeed), (29.999, .resumeFeed),
        (30, .resumeAndRereadCalls), (30.001, .resumeAndRereadCalls), (299.999, .resumeAndRereadCalls),
        (300, .fullSnapshot), (300.001, .fullSnapshot), (86_400, .fullSnapshot),
    ])
    func anOutageIsPlannedByItsLength(_ seconds: Double, _ expected: Plan) {
        #expect(plan(after: seconds) == .reconnect(expected))
    }

    @Test(arguments: [0.0, 10, 30, 299, 300, 5000])
    func withoutALiveCursorEveryReconnectIsAFullSnapshot(_ seconds: Double) {
        #expect(plan(after: seconds, cursorLive: false) == .reconnect(.fullSnapshot))
    }

    @Test func onlineWithoutAnOutageAsksForNothing() {
        var planner = ReconnectPlanner()
        #expect(planner.networkRestored(at: 5, cursorLive: true) == .none)
        #expect(planner.requestSucceeded(sentAt: 6, cursorLive: true) == .none)
        #expect(planner.outageStart == nil)
    }

    @Test func aSecondOfflineReportDoesNotMoveTheOutageStart() {
        var planner = ReconnectPlanner()
        #expect(planner.networkLost(at: 10) == .holdFeed)
        #expect(planner.networkLost(at: 25) == .none)
        #expect(planner.outageStart == 10)
        #expect(
            planner.networkRestored(at: 41, cursorLive: true) == .reconnect(.resumeAndRereadCalls),
            "31 s from the first moment offline")
    }

    @Test func blipsThatGetNoRequestThroughAreOneOutage() {
        // Offline 20 s, a 1 s blip, offline 20 s more, a blip… each blip alone would be short.
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.networkRestored(at: 20, cursorLive: true) == .reconnect(.resumeFeed))
        #expect(planner.requestFailed(at: 20.5) == .none, "the blip's poll failed")
        #expect(planner.networkLost(at: 21) == .holdFeed)
        #expect(
            planner.networkRestored(at: 41, cursorLive: true) == .reconnect(.resumeAndRereadCalls),
            "41 s since the first moment")
        _ = planner.networkLost(at: 42)
        #expect(planner.networkRestored(at: 301, cursorLive: true) == .reconnect(.fullSnapshot))
        #expect(planner.outageStart == 0)
        #expect(planner.planned == .fullSnapshot)
    }

    @Test func aBlipThatGotARequestThroughEndsTheOutage() {
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.networkRestored(at: 20, cursorLive: true) == .reconnect(.resumeFeed))
        #expect(planner.requestSucceeded(sentAt: 20.1, cursorLive: true) == .none, "the resume covered it")
        #expect(planner.outageStart == nil)
        _ = planner.networkLost(at: 21)
        #expect(planner.networkRestored(at: 41, cursorLive: true) == .reconnect(.resumeFeed), "a new outage of 20 s")
    }

    @Test func aLongPollAnsweredLongAfterTheResumeAsksForNothingMore() {
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.networkRestored(at: 25, cursorLive: true) == .reconnect(.resumeFeed))
        // Sent at 25, held 20 s by the server.
        #expect(planner.requestSucceeded(sentAt: 25, cursorLive: true) == .none)
    }

    @Test func aFlapThatOutlastsTheResumeIsCaughtUpWhenARequestGetsThrough() {
        // Online at 20 (resume), then requests fail without reachability noticing; one sent
        // at 95 gets through: 95 s offline in all, so the calls are re-read then.
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.networkRestored(at: 20, cursorLive: true) == .reconnect(.resumeFeed))
        #expect(planner.requestFailed(at: 24) == .none)
        #expect(planner.requestSucceeded(sentAt: 95, cursorLive: true) == .reconnect(.resumeAndRereadCalls))
        #expect(planner.outageStart == nil)
    }

    @Test(arguments: [(5.0, Plan.resumeFeed), (30, .resumeAndRereadCalls), (300, .fullSnapshot)])
    func failuresWhileOnlineAreAnOutageFromTheFirstFailure(_ seconds: Double, _ expected: Plan) {
        var planner = ReconnectPlanner()
        #expect(planner.requestFailed(at: 50) == .none)
        #expect(planner.requestFailed(at: 53) == .none)
        #expect(planner.outageStart == 50)
        #expect(planner.isOnline, "reachability never said otherwise")
        #expect(planner.requestSucceeded(sentAt: 50 + seconds, cursorLive: true) == .reconnect(expected))
        #expect(planner.requestSucceeded(sentAt: 50 + seconds + 1, cursorLive: true) == .none, "planned once")
    }

    @Test func failuresThenOfflineCountFromTheFirstFailure() {
        var planner = ReconnectPlanner()
        _ = planner.requestFailed(at: 0)
        #expect(planner.networkLost(at: 10) == .holdFeed)
        #expect(planner.networkRestored(at: 31, cursorLive: true) == .reconnect(.resumeAndRereadCalls))
    }

    @Test func aNewPathDuringFailuresIsAMomentToResume() {
        // Wi-Fi to cellular while requests fail: reachability says online again (it never said offline).
        var planner = ReconnectPlanner()
        _ = planner.requestFailed(at: 0)
        #expect(planner.networkRestored(at: 8, cursorLive: true) == .reconnect(.resumeFeed))
    }

    @Test func anAnswerToARequestSentBeforeTheOutageProvesNothing() {
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 10)
        #expect(planner.requestSucceeded(sentAt: 9, cursorLive: true) == .none)
        #expect(planner.outageStart == 10)
        #expect(!planner.isOnline)
    }

    @Test func aSuccessWhileReachabilitySaysOfflineEndsTheOutage() {
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.requestSucceeded(sentAt: 40, cursorLive: true) == .reconnect(.resumeAndRereadCalls))
        #expect(planner.isOnline)
        #expect(planner.outageStart == nil)
    }

    @Test func theCursorIsJudgedAtTheMomentOfReconnect() {
        var planner = ReconnectPlanner()
        _ = planner.networkLost(at: 0)
        #expect(planner.networkRestored(at: 5, cursorLive: false) == .reconnect(.fullSnapshot))
        _ = planner.networkLost(at: 6)
        #expect(
            planner.networkRestored(at: 7, cursorLive: true) == .reconnect(.resumeFeed),
            "the same outage, a live cursor now")
        #expect(planner.planned == .fullSnapshot, "the strongest plan given is remembered")
        #expect(planner.requestSucceeded(sentAt: 8, cursorLive: true) == .none)
    }
}
