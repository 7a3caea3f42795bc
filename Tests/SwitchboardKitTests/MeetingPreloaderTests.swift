import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting

/// The server's scheduled calls and pre-authorisations for one user, on a manual clock: each
/// pre-authorisation valid ten minutes from its issue, requests failing on demand.
final class SimulatedMeetingServer: MeetingPreloadBackend {
    private struct State {
        var calls: [ScheduledCall] = []
        var ended: Set<String> = []
        var failures = 0
        var listFailures = 0
        var issued: [CallPreauthorization] = []
        var requests: [String] = []
    }

    private let state = Mutex(State())
    let clock: ManualClock
    /// The validity its pre-authorisations state, by this device's clock (600 s; more: the
    /// device's clock is behind the server's).
    let statedValidity: Double

    init(clock: ManualClock, statedValidity: Double = 600) {
        self.clock = clock
        self.statedValidity = statedValidity
    }

    static func stamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// Schedules a meeting of `group` starting `seconds` from the clock's now.
    @discardableResult
    func schedule(_ id: String, startsIn seconds: Double, group: String = "g1") -> ScheduledCall {
        let call = ScheduledCall(
            id: id, groupId: group, title: nil, mode: .audio,
            startsAt: Self.stamp(clock.now.addingTimeInterval(seconds)), createdBy: "u2",
            createdAt: Self.stamp(clock.now), callId: nil)
        state.withLock { $0.calls.append(call) }
        return call
    }

    func cancel(_ id: String) { state.withLock { $0.calls.removeAll { $0.id == id } } }
    func start(_ id: String, callID: String) {
        state.withLock { state in
            for index in state.calls.indices where state.calls[index].id == id { state.calls[index].callId = callID }
        }
    }
    func end(_ id: String) { state.withLock { _ = $0.ended.insert(id) } }
    /// The next `times` pre-authorisation requests fail (no answer).
    func failPreauthorizations(times: Int) { state.withLock { $0.failures = times } }
    func failLists(times: Int) { state.withLock { $0.listFailures = times } }

    var requests: [String] { state.withLock { $0.requests } }
    var preauthorizationRequests: [String] { requests.filter { $0 != "list" } }
    var issued: [CallPreauthorization] { state.withLock { $0.issued } }

    func upcomingScheduledCalls() async throws -> [ScheduledCall] {
        try state.withLock { state throws(SwitchboardAPIError) -> [ScheduledCall] in
            state.requests.append("list")
            if state.listFailures > 0 {
                state.listFailures -= 1
                throw SwitchboardAPIError(status: 0, code: .transport, message: "offline")
            }
            return state.calls.sorted { $0.startsAt < $1.startsAt }
        }
    }

    func preauthorize(_ scheduledCallID: String) async throws -> CallPreauthorization {
        let now = clock.now
        return try state.withLock { state throws(SwitchboardAPIError) -> CallPreauthorization in
            state.requests.append(scheduledCallID)
            if state.failures > 0 {
                state.failures -= 1
                throw SwitchboardAPIError(status: 0, code: .transport, message: "offline")
            }
            guard state.calls.contains(where: { $0.id == scheduledCallID }) else {
                throw SwitchboardAPIError(status: 404, code: .notFound, message: "")
            }
            if state.ended.contains(scheduledCallID) {
                throw SwitchboardAPIError(status: 409, code: .scheduledCallEnded, message: "")
            }
            let preauthorization = CallPreauthorization(
                token: "pa-\(scheduledCallID)-\(state.issued.count)", scheduledCallId: scheduledCallID,
                expiresAt: Self.stamp(now.addingTimeInterval(statedValidity)))
            state.issued.append(preauthorization)
            return preauthorization
        }
    }
}

/// Waits, without a deadline of its own (the suite's time limit is the bound), until `condition`.
func eventually(_ condition: () async -> Bool) async {
    while !(await condition()) {
        await Task.yield()
        try? await Task.sleep(nanoseconds: 1_000_000)
    }
}

@Suite("Meeting preloader", .timeLimit(.minutes(2)))
struct MeetingPreloaderTests {
    let clock = ManualClock()
    let server: SimulatedMeetingServer
    let preloader: MeetingPreloader

    init() {
        server = SimulatedMeetingServer(clock: clock)
        preloader = MeetingPreloader(backend: server, clock: clock)
    }

    func held() async -> [String] { await preloader.preauthorizations.map(\.scheduledCallId) }

    @Test func atTheStartOnlyTheNextThreeDueMeetingsArePreauthorized() async {
        for (index, id) in ["a", "b", "c", "d"].enumerated() { server.schedule(id, startsIn: Double(index + 1) * 60) }
        server.schedule("later", startsIn: 3600)
        await preloader.refresh()
        #expect(await held() == ["a", "b", "c"])
        #expect(server.preauthorizationRequests == ["a", "b", "c"])
        #expect(
            await preloader.nextWake == clock.now.addingTimeInterval(9 * 60), "a's is replaced a minute after its start"
        )
    }

    @Test func aMeetingFurtherOutIsPreauthorizedAtItsWakeEightMinutesBefore() async {
        server.schedule("m", startsIn: 3600)
        let running = Task { await preloader.run() }
        defer { running.cancel() }
        await eventually { await preloader.nextWake != nil }
        #expect(await preloader.nextWake == clock.now.addingTimeInterval(3600 - 480))
        #expect(server.preauthorizationRequests.isEmpty)

        clock.advance(by: 3600 - 480 - 1)
        await preloader.update()
        #expect(server.preauthorizationRequests.isEmpty, "not a second early")
        clock.advance(by: 1)
        await eventually { await !preloader.preauthorizations.isEmpty }
        #expect(server.preauthorizationRequests == ["m"])
    }

    @Test func aScheduledCallChangedEventReadsTheListAgain() async {
        server.schedule("a", startsIn: 120)
        let running = Task { await preloader.run() }
        defer { running.cancel() }
        await eventually { await held() == ["a"] }

        server.cancel("a")
        server.schedule("b", startsIn: 60)
        preloader.handle(events: [Event(id: 1, kind: EventKind.callChanged, createdAt: "2026-12-03T00:00:00.000Z")])
        #expect(
            !MeetingPreloader.needsRefresh([
                Event(id: 1, kind: EventKind.callChanged, createdAt: "2026-12-03T00:00:00.000Z")
            ]))
        let changed = Event(
            id: 2, kind: EventKind.scheduledCallChanged, groupId: "g1", createdAt: "2026-12-03T00:00:00.000Z")
        #expect(MeetingPreloader.needsRefresh([changed]))
        preloader.handle(events: [changed])
        await eventually { await held() == ["b"] }
        #expect(server.requests.filter { $0 == "list" }.count == 2)
    }

    @Test func anExpiredOneIsNeverHandedOut() async {
        server.schedule("m", startsIn: 60)
        await preloader.refresh()
        clock.advance(by: 600)
        #expect(await preloader.take(forCall: "c1", groupID: "g1") == nil, "issued ten minutes ago")
    }

    /// A device clock five minutes behind the server's reads the expiry five minutes late: the
    /// preloader trusts one no longer than ten minutes after it arrived.
    @Test func anExpiryLaterThanTenMinutesFromArrivalIsNotTrusted() async {
        let server = SimulatedMeetingServer(clock: clock, statedValidity: 900)
        let preloader = MeetingPreloader(backend: server, clock: clock)
        server.schedule("m", startsIn: 60)
        await preloader.refresh()
        #expect(
            await preloader.nextWake == clock.now.addingTimeInterval(540), "replaced a minute before ten minutes are up"
        )
        clock.advance(by: 600)
        #expect(await preloader.take(forGroup: "g1") == nil)
    }

    @Test func whileTheMeetingRunsTheHeldOneIsReplacedBeforeItExpires() async {
        server.schedule("m", startsIn: 60)
        let running = Task { await preloader.run() }
        defer { running.cancel() }
        // Held and its replacement's wake set before the clock moves.
        await eventually {
            let (held, wake) = (await preloader.preauthorizations.count, await preloader.nextWake)
            return held == 1 && wake != nil
        }
        // Issued at start − 1 min, valid to start + 9 min: replaced at start + 8 min.
        clock.advance(by: 60 + 8 * 60)
        await eventually { server.issued.count == 2 }
        // Issued is not yet held: the preloader stores it when the request's answer returns.
        await eventually { await preloader.preauthorizations == [server.issued[1]] }
        #expect(await preloader.preauthorizations == [server.issued[1]])
        #expect(await preloader.take(forGroup: "g1")?.token == server.issued[1].token)
    }

    @Test func aPreauthorizationIsHandedOutOnceAndTheMeetingNotAskedForAgain() async {
        server.schedule("m", startsIn: 60)
        await preloader.refresh()
        server.start("m", callID: "c1")
        await preloader.refresh()
        let first = await preloader.take(forCall: "c1", groupID: nil)
        #expect(first?.scheduledCallId == "m")
        #expect(await preloader.take(forCall: "c1", groupID: "g1") == nil)
        clock.advance(by: 3000)
        await preloader.update()
        #expect(server.preauthorizationRequests == ["m"])
    }

    @Test func byGroupTheMeetingNearestNowIsTakenAndAnotherCallsIsNot() async {
        server.schedule("early", startsIn: -120)
        server.schedule("soon", startsIn: 60)
        server.schedule("other-group", startsIn: 30, group: "g2")
        await preloader.refresh()
        server.start("early", callID: "c-early")
        await preloader.refresh()
        #expect(
            await preloader.take(forCall: "c-new", groupID: "g1")?.scheduledCallId == "soon", "early belongs to c-early"
        )
        #expect(await preloader.take(forCall: "c-new", groupID: "g1") == nil)
        #expect(await preloader.take(forCall: "c-early", groupID: nil)?.scheduledCallId == "early")
        #expect(await held() == ["other-group"])
    }

    @Test func aFailedRequestIsRetriedAtTheNextWakeAndNeverThrown() async {
        server.schedule("m", startsIn: 60)
        server.failPreauthorizations(times: 2)
        let running = Task { await preloader.run() }
        defer { running.cancel() }
        await eventually { await preloader.nextWake != nil }
        #expect(await held().isEmpty)
        #expect(await preloader.nextWake == clock.now.addingTimeInterval(30))
        clock.advance(by: 30)
        // The second failure noted and its retry's wake set before the clock moves again.
        let retry = clock.now.addingTimeInterval(30)
        await eventually {
            let wake = await preloader.nextWake
            return server.preauthorizationRequests.count == 2 && wake == retry
        }
        #expect(await held().isEmpty)
        clock.advance(by: 30)
        await eventually { await held() == ["m"] }
        #expect(server.preauthorizationRequests == ["m", "m", "m"])
    }

    @Test func aFailedListReadIsRetriedAtTheNextWake() async {
        server.schedule("m", startsIn: 60)
        server.failLists(times: 1)
        let running = Task { await preloader.run() }
        defer { running.cancel() }
        await eventually { await preloader.nextWake != nil }
        #expect(await held().isEmpty)
        clock.advance(by: 30)
        await eventually { await held() == ["m"] }
        #expect(server.requests == ["list", "list", "m"])
    }

    @Test func anEndedMeetingIsNotAskedForAgain() async {
        server.schedule("m", startsIn: 60)
        server.end("m")
        await preloader.refresh()
        clock.advance(by: 120)
        await preloader.update()
        #expect(server.preauthorizationRequests == ["m"])
        #expect(await held().isEmpty)
    }
}
