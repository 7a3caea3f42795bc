import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardTesting

/// A lane whose requests wait until the test answers them, one by one, in the order sent.
private final class ScriptedLane: HTTPTransport {
    enum Reply { case status(Int), transportFailure }

    private struct State {
        var waiting: [CheckedContinuation<(Data, HTTPURLResponse), any Error>] = []
        var sent: [String] = []
        var cancelled = 0
        var warmed = 0
    }

    private let state = Mutex(State())

    var sent: [String] { state.withLock { $0.sent } }
    var waiting: Int { state.withLock { $0.waiting.count } }
    var cancelled: Int { state.withLock { $0.cancelled } }

    var warmed: Int { state.withLock { $0.warmed } }

    /// When set, warming requests fail (the lane stays cold).
    let failsWarming: Bool

    init(failsWarming: Bool = false) { self.failsWarming = failsWarming }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let path = "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")"
        if path == "GET /healthz" {
            // Warming requests are answered at once.
            state.withLock { $0.warmed += 1 }
            if failsWarming { throw URLError(.cannotConnectToHost) }
            return (
                Data(), HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!
            )
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock {
                    $0.sent.append(path)
                    $0.waiting.append(continuation)
                }
            }
        } onCancel: {
            state.withLock { $0.cancelled += 1 }
        }
    }

    /// Answers the oldest waiting request.
    func reply(_ reply: Reply) {
        let continuation = state.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
        switch reply {
        case .status(let status):
            let response = HTTPURLResponse(
                url: URL(string: "http://test/")!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])!
            continuation?.resume(returning: (Data("\(status)".utf8), response))
        case .transportFailure:
            continuation?.resume(throwing: URLError(.networkConnectionLost))
        }
    }
}

/// Hedge timers the test fires by hand.
private final class ManualTimers: Sendable {
    private let state = Mutex<[CheckedContinuation<Void, any Error>]>([])

    var pending: Int { state.withLock { $0.count } }

    func sleep(_ seconds: Double) async throws {
        try await withCheckedThrowingContinuation { continuation in state.withLock { $0.append(continuation) } }
    }

    func fireAll() {
        let timers = state.withLock { state in
            defer { state = [] }
            return state
        }
        timers.forEach { $0.resume() }
    }
}

private struct Rig {
    let lanes: [ScriptedLane]
    let timers = ManualTimers()
    // Three lanes, so each test can use every one.
    let transport: HedgingTransport

    /// `failsWarming`: the warming requests a first request sends beside it fail, so the lanes
    /// stay cold however fast those requests are (a test of a cold start must not race them).
    init(failsWarming: Bool = false) {
        lanes = (0..<3).map { _ in ScriptedLane(failsWarming: failsWarming) }
        let timers = self.timers
        transport = HedgingTransport(lanes: lanes, sleep: { try await timers.sleep($0) }, now: { 0 })
    }

    /// A rig whose lanes all answered a warming request: warm, so requests are hedged one copy
    /// at a time.
    static func warm() async -> Rig {
        let rig = Rig()
        rig.transport.warm(URL(string: "http://test/healthz")!)
        _ = await eventually { rig.transport.warmLaneCount == rig.lanes.count }
        return rig
    }

    var request: URLRequest {
        var request = URLRequest(url: URL(string: "http://test/calls/c1/accept")!)
        request.httpMethod = "POST"
        return request
    }

    func sendAsync(repeatable: Bool = true) -> Task<Result<Int, any Error>, Never> {
        let transport = self.transport, request = self.request
        return Task {
            do {
                return .success(try await transport.send(request, repeatable: repeatable).1.statusCode)
            } catch {
                return .failure(error)
            }
        }
    }

    var totalSent: Int { lanes.reduce(0) { $0 + $1.sent.count } }
}

@Suite("Hedging transport: copies of repeatable requests on other connections", .timeLimit(.minutes(1)))
struct HedgingTransportTests {
    @Test func aRequestThatIsNotRepeatableGoesOnceAndNoTimerRuns() async throws {
        let rig = Rig()
        let task = rig.sendAsync(repeatable: false)
        #expect(await eventually { rig.lanes[0].waiting == 1 })
        #expect(rig.timers.pending == 0)
        rig.lanes[0].reply(.status(201))
        #expect(try await value(of: task).get() == 201)
        #expect(rig.totalSent == 1)
    }

    @Test func aCopyGoesOutWhenTheTimerFiresAndTheFirstSuccessWins() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes[1].waiting == 1 })
        rig.lanes[1].reply(.status(200))
        #expect(try await value(of: task).get() == 200)
        // The losing copy is cancelled, not waited for.
        #expect(await eventually { rig.lanes[0].cancelled == 1 })
        #expect(rig.lanes[2].sent.isEmpty)
        rig.lanes[0].reply(.status(200))
    }

    @Test func aConflictIsHeldBackWhileTheFirstCopyMayStillSucceed() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes[1].waiting == 1 })
        // The copy lost the race at the server (the first copy's accept landed): 409.
        rig.lanes[1].reply(.status(409))
        try await Task.sleep(for: .milliseconds(50))
        rig.lanes[0].reply(.status(200))
        #expect(try await value(of: task).get() == 200)
    }

    @Test func everyCopyConflictingAnswersTheConflict() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes[1].waiting == 1 && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes[2].waiting == 1 })
        #expect(rig.timers.pending == 0, "no timer once every lane has a copy")
        for lane in rig.lanes { lane.reply(.status(409)) }
        #expect(try await value(of: task).get() == 409)
        #expect(rig.totalSent == 3)
    }

    @Test func aTransportFailureSendsTheNextCopyAtOnce() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes[0].waiting == 1 })
        rig.lanes[0].reply(.transportFailure)
        #expect(await eventually { rig.lanes[1].waiting == 1 }, "the copy did not wait for the timer")
        rig.lanes[1].reply(.status(200))
        #expect(try await value(of: task).get() == 200)
    }

    @Test func theServersOtherRefusalsAreFinalAtOnce() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes[1].waiting == 1 })
        rig.lanes[1].reply(.status(404))
        #expect(try await value(of: task).get() == 404)
        rig.lanes[0].reply(.status(200))
    }

    @Test func everyLaneFailingAnswersTheFailure() async throws {
        let rig = await Rig.warm()
        let task = rig.sendAsync()
        for lane in rig.lanes {
            #expect(await eventually { lane.waiting == 1 })
            lane.reply(.transportFailure)
        }
        let result = try await value(of: task)
        #expect(throws: URLError.self) { try result.get() }
        #expect(rig.totalSent == 3)
    }

    @Test func withNoWarmLaneARepeatableRequestGoesOnEveryLaneAtOnce() async throws {
        let rig = Rig(failsWarming: true)
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes.allSatisfy { $0.waiting == 1 } })
        #expect(await eventually { rig.timers.pending == 1 }, "only the cold start's second round is timed")
        rig.lanes[2].reply(.status(200))
        #expect(try await value(of: task).get() == 200)
        rig.lanes[0].reply(.status(200))
        rig.lanes[1].reply(.status(200))
        rig.timers.fireAll()  // the second round's timer, its race over: it sends nothing
        // Now warm: the next one goes once.
        let next = rig.sendAsync()
        #expect(await eventually { rig.totalSent == 4 && rig.timers.pending == 1 })
        #expect(await eventually { rig.lanes.contains { $0.waiting == 1 } })
        for lane in rig.lanes { lane.reply(.status(200)) }
        #expect(try await value(of: next).get() == 200)
    }

    @Test func warmOpensEveryIdleLane() async throws {
        let rig = Rig()
        rig.transport.warm(URL(string: "http://test/healthz")!)
        #expect(await eventually { rig.lanes.allSatisfy { $0.warmed == 1 } })
    }

    @Test func theFirstRequestWarmsTheOtherLanesAndAWarmLaneIsLeftAlone() async throws {
        let clock = Mutex(0.0)
        let lanes = [ScriptedLane(), ScriptedLane(), ScriptedLane()]
        let transport = HedgingTransport(
            lanes: lanes, sleep: { _ in try await Task.sleep(for: .seconds(3600)) }, now: { clock.withLock { $0 } })
        var request = URLRequest(url: URL(string: "http://test/me")!)
        request.httpMethod = "GET"
        let first = Task { try await transport.send(request, repeatable: false) }
        #expect(await eventually { lanes[0].waiting == 1 && lanes[1].warmed == 1 && lanes[2].warmed == 1 })
        lanes[0].reply(.status(200))
        _ = try await value(of: first)
        // The warming answers are noted at time 0 too before the clock moves (their tasks can
        // run late on a busy machine, and a late one would be noted at a later time).
        #expect(await eventually { transport.warmLaneCount == 3 })
        // First answers include a handshake: they are not round trips.
        #expect(transport.policy.recent.isEmpty)
        // Ten seconds on, every lane answered recently: nothing is warmed again.
        clock.withLock { $0 = 10 }
        let second = Task { try await transport.send(request, repeatable: false) }
        #expect(await eventually { lanes[0].waiting == 1 })
        lanes[0].reply(.status(200))
        _ = try await value(of: second)
        #expect(lanes[1].warmed == 1 && lanes[2].warmed == 1)
        #expect(transport.policy.recent.count == 1, "the second answer on lane 0 is a round trip")
        // After the keep-warm time the idle lanes are warmed again beside the next request.
        clock.withLock { $0 = 10 + HedgingTransport.keepWarmSeconds + 1 }
        let third = Task { try await transport.send(request, repeatable: false) }
        #expect(await eventually { lanes[0].waiting == 1 && lanes[1].warmed == 2 && lanes[2].warmed == 2 })
        lanes[0].reply(.status(200))
        _ = try await value(of: third)
    }

    /// A cold start unanswered after `coldRetrySeconds` sends one more copy on every lane (a
    /// second connection each, its first still busy), and no more after that.
    @Test func aColdStartStillUnansweredSendsASecondRoundOnNewConnections() async throws {
        let rig = Rig(failsWarming: true)
        let task = rig.sendAsync()
        #expect(await eventually { rig.lanes.allSatisfy { $0.waiting == 1 } && rig.timers.pending == 1 })
        rig.timers.fireAll()
        #expect(await eventually { rig.lanes.allSatisfy { $0.waiting == 2 } })
        #expect(rig.totalSent == 6)
        rig.lanes[1].reply(.transportFailure)
        #expect(await eventually { rig.lanes[1].waiting == 1 })
        #expect(rig.totalSent == 6, "every copy is out: a failure sends no seventh")
        rig.lanes[0].reply(.status(200))
        #expect(try await value(of: task).get() == 200)
        // The four copies still out are cancelled. (The failed one may not have left its lane
        // yet when the race ends, on a busy machine, and then counts as cancelled too.)
        #expect(await eventually { rig.lanes.reduce(0) { $0 + $1.cancelled } >= 4 })
        #expect(rig.lanes.reduce(0) { $0 + $1.cancelled } <= 5)
    }

    /// A held request goes as its copies at once, one lane each, no timer; the first success
    /// answers and the other copy is left to end by itself (not cancelled). Cancelling the
    /// caller's task cancels the copies still out.
    @Test func aHeldRequestGoesAsItsCopiesAtOnceAndTheLoserIsNotCancelled() async throws {
        let rig = await Rig.warm()
        let transport = rig.transport, request = rig.request
        let held = Task { try await transport.sendHeld(request, copies: 2).1.statusCode }
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.lanes[1].waiting == 1 })
        #expect(rig.lanes[2].waiting == 0 && rig.timers.pending == 0)
        rig.lanes[1].reply(.status(200))
        #expect(try await value(of: held) == 200)
        try await Task.sleep(for: .milliseconds(50))
        #expect(rig.lanes[0].cancelled == 0 && rig.lanes[0].waiting == 1, "left to end by itself")
        rig.lanes[0].reply(.status(200))

    }

    /// A copy that fails or is cancelled leaves its lane cold only when nothing answered on
    /// that lane since the copy went out: a cold start's second round shares lanes with the
    /// first, and the winner's lane keeps its open connection.
    @Test func aLosingCopyBesideAWinnerOnTheSameLaneLeavesTheLaneWarm() async throws {
        let clock = Mutex(0.0)
        let timers = ManualTimers()
        let lanes = [ScriptedLane(failsWarming: true), ScriptedLane(failsWarming: true)]
        let transport = HedgingTransport(
            lanes: lanes, sleep: { try await timers.sleep($0) }, now: { clock.withLock { $0 } })
        var accept = URLRequest(url: URL(string: "http://test/calls/c1/accept")!)
        accept.httpMethod = "POST"
        let task = Task { try await transport.send(accept, repeatable: true) }
        #expect(await eventually { lanes.allSatisfy { $0.waiting == 1 } && timers.pending == 1 })
        clock.withLock { $0 = 1 }
        timers.fireAll()
        #expect(await eventually { lanes.allSatisfy { $0.waiting == 2 } })
        clock.withLock { $0 = 2 }
        lanes[1].reply(.status(200))  // the first round's copy on lane 1 wins
        #expect(try await value(of: task).1.statusCode == 200)
        // The three others were cancelled; they end (their connections gone).
        #expect(await eventually { lanes.reduce(0) { $0 + $1.cancelled } == 3 })
        lanes[1].reply(.transportFailure)
        lanes[0].reply(.transportFailure)
        lanes[0].reply(.transportFailure)
        #expect(await eventually { lanes.allSatisfy { $0.waiting == 0 } })
        #expect(
            await eventually { transport.warmLaneCount == 1 }, "lane 1 answered after its loser went out: still warm")
    }

    /// Held copies go on idle lanes only: a loser still out on a lane is not joined by another.
    @Test func heldCopiesSkipALaneWhoseLoserIsStillOut() async throws {
        let rig = await Rig.warm()
        let transport = rig.transport, request = rig.request
        let first = Task { try await transport.sendHeld(request, copies: 2).1.statusCode }
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.lanes[1].waiting == 1 })
        rig.lanes[0].reply(.status(200))
        #expect(try await value(of: first) == 200)
        // Lane 1's loser is still out: of three lanes two are idle, so two copies, not on lane 1.
        let second = Task { try await transport.sendHeld(request, copies: 3).1.statusCode }
        #expect(await eventually { rig.lanes[0].waiting == 1 && rig.lanes[2].waiting == 1 })
        #expect(rig.lanes[1].waiting == 1, "nothing more on lane 1")
        rig.lanes[2].reply(.status(200))
        #expect(try await value(of: second) == 200)
        for lane in rig.lanes { while lane.waiting > 0 { lane.reply(.status(200)) } }
    }

    /// With a warm idle lane (which the request takes), every cold idle lane is warmed beside
    /// it, not all but one (that one would be the request's only when no lane is warm).
    @Test func aRequestOnAWarmLaneWarmsEveryColdOne() async throws {
        let lanes = [ScriptedLane(), ScriptedLane(failsWarming: true), ScriptedLane(failsWarming: true)]
        let transport = HedgingTransport(
            lanes: lanes, sleep: { _ in try await Task.sleep(for: .seconds(3600)) }, now: { 0 })
        var read = URLRequest(url: URL(string: "http://test/me")!)
        read.httpMethod = "GET"
        let first = Task { try await transport.send(read, repeatable: false) }
        #expect(await eventually { lanes[0].waiting == 1 && lanes[1].warmed == 1 && lanes[2].warmed == 1 })
        lanes[0].reply(.status(200))
        _ = try await value(of: first)
        #expect(await eventually { transport.warmLaneCount == 1 }, "lanes 1 and 2 failed to warm: cold")
        let second = Task { try await transport.send(read, repeatable: false) }
        #expect(await eventually { lanes[0].waiting == 1 }, "the warm lane takes the request")
        #expect(
            await eventually { lanes[1].warmed == 2 && lanes[2].warmed == 2 }, "both cold lanes are warmed beside it")
        lanes[0].reply(.status(200))
        _ = try await value(of: second)
    }

}

@Suite("Hedge policy: delay from the fastest recent answer, and which answer wins", .timeLimit(.minutes(1)))
struct HedgePolicyTests {
    @Test func theDelayFollowsTheFastestRecentAnswerWithinItsBounds() {
        var policy = HedgePolicy(lanes: 3, initialDelay: 0.3, minimumDelay: 0.12, maximumDelay: 1.5)
        #expect(policy.hedgeDelay == 0.3, "no measurement yet")
        policy.answered(after: 0.2)
        #expect(abs(policy.hedgeDelay - 0.45) < 1e-9, "2 × 200 ms + 50 ms")
        // A lossy link: answers at the round trip or a stall later; the stalls do not count.
        for duration in [0.9, 0.025, 0.6, 0.225, 1.4, 0.03] { policy.answered(after: duration) }
        #expect(policy.hedgeDelay == 0.12, "2 × 25 ms + 50 ms, held at the floor")
        // The fast answer ages out of the window: a slower path takes over.
        for _ in 0..<HedgePolicy.window { policy.answered(after: 0.4) }
        #expect(abs(policy.hedgeDelay - 0.85) < 1e-9)
        #expect(policy.recent.count == HedgePolicy.window)
        for _ in 0..<HedgePolicy.window { policy.answered(after: 5) }
        #expect(policy.hedgeDelay == 1.5, "a slow one at the ceiling")
        policy.answered(after: -1)
        policy.answered(after: .nan)
        #expect(policy.hedgeDelay == 1.5, "nonsense measurements are ignored")
    }

    @Test func theStepsAfterEachOutcome() {
        #expect(HedgePolicy.step(after: .success, inFlight: 2, unusedLanes: 1) == .finish)
        #expect(HedgePolicy.step(after: .refused, inFlight: 2, unusedLanes: 1) == .finish)
        #expect(HedgePolicy.step(after: .conflict, inFlight: 1, unusedLanes: 1) == .wait)
        #expect(HedgePolicy.step(after: .conflict, inFlight: 0, unusedLanes: 1) == .finish)
        #expect(HedgePolicy.step(after: .transportFailure, inFlight: 1, unusedLanes: 1) == .sendCopy)
        #expect(HedgePolicy.step(after: .transportFailure, inFlight: 1, unusedLanes: 0) == .wait)
        #expect(HedgePolicy.step(after: .transportFailure, inFlight: 0, unusedLanes: 0) == .finish)
        #expect(
            HedgePolicy.preferred([.transportFailure, .conflict]) == 1, "the server's word before a lost connection")
        #expect(HedgePolicy.preferred([.transportFailure, .transportFailure]) == 0)
        #expect(HedgePolicy.preferred([]) == nil)
    }
}

extension Result {
    var isFailure: Bool { if case .failure = self { true } else { false } }
}
