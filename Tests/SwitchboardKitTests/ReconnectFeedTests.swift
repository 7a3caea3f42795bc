import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardTesting
import SwitchboardWire

/// A server behind a network that can go away: `/events` holds until an event is written (or
/// the network drops, which fails every held poll), `/me` answers the newest cursor, and every
/// request fails with a transport error while offline.
private final class FlakyServer: HTTPTransport {
    private struct State {
        var offline = false
        /// A cursor below this is older than the retention window: 410 `CURSOR_EXPIRED`.
        var keptFrom: Int64 = 0
        var events: [Event] = []
        var waiters: [UUID: CheckedContinuation<String??, Never>] = [:]
        var lines: [String] = []
    }

    private let state = Mutex(State())

    var lines: [String] { state.withLock { $0.lines } }
    func count(_ prefix: String) -> Int { lines.filter { $0.hasPrefix(prefix) }.count }

    func setOffline(_ offline: Bool) {
        wake { $0.offline = offline }
    }

    func prune(below id: Int64) { wake { $0.keptFrom = id } }

    /// Prunes and writes newer events in one step, so no request sees one without the other.
    func prune(below id: Int64, thenWrite ids: ClosedRange<Int64>) {
        wake { state in
            state.keptFrom = id
            for id in ids { state.events.append(Self.event(id)) }
        }
    }

    private static func event(_ id: Int64) -> Event {
        Event(id: id, kind: EventKind(rawValue: "message_created"), createdAt: "2026-12-03T00:00:00.000Z")
    }

    func write(_ id: Int64) {
        wake { $0.events.append(Self.event(id)) }
    }

    private func wake(_ change: (inout State) -> Void) {
        let waiters = state.withLock { state in
            change(&state)
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume(returning: nil) }
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let url = try #require(request.url)
        let parts = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        state.withLock { $0.lines.append(parts.path + (parts.query.map { "?" + $0 } ?? "")) }
        while true {
            try Task.checkCancellation()
            let id = UUID()
            let answer = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<String??, Never>) in
                    let now = state.withLock { state -> String?? in
                        if state.offline { return .some(nil) }
                        if parts.path == "/me" {
                            let cursor = state.events.last?.id ?? 0
                            return #"{"user":{"id":"u1","username":"me","displayName":"Me"},"eventCursor":\#(cursor)}"#
                        }
                        let after = Int64(parts.queryItems?.first { $0.name == "after" }?.value ?? "0") ?? 0
                        if after < state.keptFrom { return .some("410") }
                        let fresh = state.events.filter { $0.id > after }
                        if !fresh.isEmpty {
                            let body = String(
                                decoding: try! JSONEncoder().encode(EventsPage(events: fresh, cursor: fresh.last!.id)),
                                as: UTF8.self)
                            return .some(body)
                        }
                        if Task.isCancelled { return .some(nil) }
                        state.waiters[id] = continuation
                        return .none
                    }
                    if let now { continuation.resume(returning: .some(now)) }
                }
            } onCancel: {
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
            }
            guard let answer else { continue }  // woken: look again
            guard let body = answer else { throw URLError(.notConnectedToInternet) }
            if body == "410" {
                let response = try #require(
                    HTTPURLResponse(url: url, statusCode: 410, httpVersion: "HTTP/1.1", headerFields: nil))
                return (Data(#"{"error":{"code":"CURSOR_EXPIRED","message":"gone"}}"#.utf8), response)
            }
            let response = try #require(
                HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: nil))
            return (Data(body.utf8), response)
        }
    }
}

/// A value shared between a test and the tasks it starts.
private final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
}

/// Reconnect plans carried out by `EventFeed` and `CallCoordinator` (SPEC §4 rule 12), on a
/// manual clock: the feed resumes the moment the network is back, a long outage takes a new
/// cursor and runs the app's refresh, and the coordinator re-reads the active calls.
@Suite("Reconnect plans, carried out", .timeLimit(.minutes(2)))
struct ReconnectFeedTests {
    private final class FeedRig: Sendable {
        let clock = ManualClock()
        let server = FlakyServer()
        let monitor: ReconnectMonitor
        let store = InMemoryCursorStore(5)
        let refreshes = Shared(0)
        let updates = Shared<[EventFeedUpdate]>([])
        let task = Shared<Task<Void, Never>?>(nil)

        init(refresh: Bool) {
            let clock = clock
            monitor = ReconnectMonitor(now: { clock.elapsed })
            let client = SwitchboardClient(
                baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: server, eventTransport: server)
            let refreshes = refreshes
            let count: @Sendable () async throws -> Void = { refreshes.withLock { $0 += 1 } }
            let feed = EventFeed(
                client: client, cursorStore: store, startCursor: 0,
                sleep: { try await clock.sleep(for: .milliseconds(Int($0 * 1000))) },
                jitter: { 0.5 }, reconnect: monitor, refresh: refresh ? count : nil)
            let updates = updates
            task.withLock {
                $0 = Task {
                    do {
                        for try await update in feed { updates.withLock { $0.append(update) } }
                    } catch {}
                }
            }
        }

        deinit { task.withLock { $0?.cancel() } }

        var polls: Int { server.count("/events") }
        var eventIDs: [Int64] {
            updates.withLock { $0 }.flatMap { update -> [Int64] in
                if case .events(let events) = update { events.map(\.id) } else { [] }
            }
        }

        /// Waits until the feed sleeps on the clock (a retry pause) or holds a poll.
        func waitForPause() async -> Bool { await eventually { clock.pendingTimers > 0 } }
    }

    @Test func aShortOutageResumesTheFeedTheMomentTheNetworkIsBack() async {
        let rig = FeedRig(refresh: true)
        rig.server.write(6)
        #expect(await eventually { rig.eventIDs == [6] })
        rig.monitor.networkChanged(isOnline: false)
        rig.server.setOffline(true)
        #expect(await rig.waitForPause(), "the failed poll waits to retry")
        let pollsWhileOffline = rig.polls
        rig.clock.advance(by: 10)
        #expect(await eventually { rig.clock.pendingTimers > 0 })
        #expect(rig.polls == pollsWhileOffline, "offline: no retry every 3 s")
        rig.server.setOffline(false)
        rig.monitor.networkChanged(isOnline: true)
        // No clock movement: the pause ends because the network is back.
        #expect(await eventually { rig.polls == pollsWhileOffline + 1 })
        rig.server.write(7)
        #expect(await eventually { rig.eventIDs == [6, 7] })
        #expect(rig.monitor.plans == [.resumeFeed])
        #expect(rig.server.count("/me") == 0)
        #expect(rig.refreshes.withLock { $0 } == 0)
    }

    @Test func anOutageOfFiveMinutesTakesANewCursorAndRefreshesTheApp() async {
        let rig = FeedRig(refresh: true)
        rig.server.write(6)
        #expect(await eventually { rig.eventIDs == [6] })
        rig.monitor.networkChanged(isOnline: false)
        rig.server.setOffline(true)
        for _ in 0..<10 {
            #expect(await rig.waitForPause())
            rig.clock.advance(by: 30)
        }
        #expect(await rig.waitForPause())
        // Events the device missed; a snapshot covers them, the feed goes on after them.
        for id in Int64(7)...9 { rig.server.write(id) }
        rig.server.setOffline(false)
        rig.monitor.networkChanged(isOnline: true)
        #expect(
            await eventually {
                rig.server.count("/me") == 1 && rig.polls > 0 && rig.server.lines.last == "/events?after=9&wait=20"
            })
        #expect(rig.refreshes.withLock { $0 } == 1)
        #expect(rig.monitor.plans.last == .fullSnapshot)
        #expect(await rig.store.load() == 9)
        rig.server.write(10)
        #expect(await eventually { rig.eventIDs == [6, 10] }, "\(rig.eventIDs)")
    }

    @Test func withoutARefreshALongOutageEndsTheFeedAskingForASnapshot() async {
        let rig = FeedRig(refresh: false)
        #expect(await eventually { rig.polls == 1 })
        rig.monitor.networkChanged(isOnline: false)
        rig.server.setOffline(true)
        for _ in 0..<11 {
            #expect(await rig.waitForPause())
            rig.clock.advance(by: 30)
        }
        rig.server.setOffline(false)
        rig.monitor.networkChanged(isOnline: true)
        #expect(await eventually { rig.updates.withLock { $0 } == [.snapshotRequired] })
        #expect(rig.server.count("/me") == 0)
    }

    @Test func withARefreshAnExpiredCursorIsAFullSnapshotAndTheFeedGoesOn() async {
        let rig = FeedRig(refresh: true)
        #expect(await eventually { rig.polls == 1 })
        for id in Int64(6)...8 { rig.server.write(id) }
        #expect(await eventually { rig.eventIDs == [6, 7, 8] })
        #expect(await eventually { rig.server.lines.last == "/events?after=8&wait=20" })
        // The device was away long enough for the server to prune past its cursor.
        rig.server.prune(below: 9, thenWrite: 9...12)
        #expect(
            await eventually { rig.server.count("/me") == 1 && rig.server.lines.last == "/events?after=12&wait=20" },
            "\(rig.server.lines)")
        #expect(rig.refreshes.withLock { $0 } == 1)
        #expect(rig.updates.withLock { $0 }.contains(.snapshotRequired) == false, "the feed did not end")
        rig.server.write(13)
        #expect(await eventually { rig.eventIDs.last == 13 })
    }

    /// The race that made the feed spin: the server prunes past the cursor before any newer
    /// event exists, so the new snapshot's cursor has expired too. The feed waits before the
    /// next snapshot instead of going round `/me` → `/events` at once.
    @Test func aSnapshotWhoseCursorExpiredAgainWaitsBeforeTheNext() async {
        let rig = FeedRig(refresh: true)
        #expect(await eventually { rig.polls == 1 })
        for id in Int64(6)...8 { rig.server.write(id) }
        #expect(await eventually { rig.server.lines.last == "/events?after=8&wait=20" })
        rig.server.prune(below: 9)
        // The first snapshot goes at once; its cursor (8) expires too, and the feed pauses.
        #expect(await eventually { rig.server.count("/me") == 1 && rig.clock.pendingTimers > 0 })
        let before = rig.server.lines.count
        try? await Task.sleep(for: .milliseconds(300))
        #expect(rig.server.lines.count == before, "no request while it waits: \(rig.server.lines.suffix(6))")
        // Still nothing new when the pause ends: the next pause is longer.
        rig.clock.advance(by: 1)
        #expect(await eventually { rig.server.count("/me") == 2 && rig.clock.pendingTimers > 0 })
        rig.clock.advance(by: 1)
        try? await Task.sleep(for: .milliseconds(100))
        #expect(rig.server.count("/me") == 2, "the second pause is 2 s")
        rig.server.write(9)
        rig.clock.advance(by: 1)
        #expect(
            await eventually { rig.server.count("/me") == 3 && rig.server.lines.last == "/events?after=9&wait=20" },
            "\(rig.server.lines.suffix(6))")
        #expect(rig.refreshes.withLock { $0 } == 3)
        #expect(rig.server.count("/me") <= 3 && rig.polls < 12, "it never spun: \(rig.server.lines.count) requests")
    }

    @Test func failuresWhileOnlineRetryAsBeforeAndEndInOnePlan() async {
        let rig = FeedRig(refresh: true)
        #expect(await eventually { rig.polls == 1 })
        rig.server.setOffline(true)  // reachability still says online: a server out of reach
        for attempt in 1...3 {
            #expect(await eventually { rig.polls == attempt && rig.clock.pendingTimers > 0 }, "a retry every 3 s")
            #expect(rig.monitor.plans.isEmpty)
            rig.clock.advance(by: 3)
        }
        #expect(await eventually { rig.polls == 4 && rig.clock.pendingTimers > 0 })
        rig.server.setOffline(false)
        rig.clock.advance(by: 3)
        rig.server.write(6)
        #expect(await eventually { rig.eventIDs == [6] })
        #expect(rig.monitor.plans == [.resumeFeed], "9 s from the first failure to the request that got through")
        #expect(rig.server.count("/me") == 0)
    }

    // MARK: The coordinator

    private final class CallRig: Sendable {
        let clock = ManualClock()
        let backend = InMemoryCallBackend()
        let device = SimulatedDevice()
        let system: SimulatedCallSystem
        let monitor: ReconnectMonitor
        let coordinator: CallCoordinator

        init() {
            let clock = clock
            system = SimulatedCallSystem(device: device, clock: clock)
            monitor = ReconnectMonitor(now: { clock.elapsed })
            let media = SimulatedMedia(clock: clock)
            media.attach(system)
            coordinator = CallCoordinator(
                userID: backend.me, backend: backend, callSystem: system, media: { media.makeSession($0) },
                clock: clock, reconnect: monitor)
        }

        deinit { coordinator.shutdown() }
    }

    @Test(arguments: [
        (29.9, true, false), (30.0, true, true), (120.0, true, true), (400.0, true, true), (10, false, true),
    ])
    func aCallThatRangDuringTheOutageShowsWhenTheCallsAreReread(
        _ seconds: Double, _ cursorLive: Bool, _ reread: Bool
    ) async {
        let rig = CallRig()
        // As a running event feed does (without one, every reconnect is a full snapshot).
        rig.monitor.feedCursor(live: cursorLive)
        rig.monitor.networkChanged(isOnline: false)
        let call = rig.backend.ring()  // its push was lost while offline
        await rig.clock.run(seconds: seconds, step: seconds / 4, settling: rig.system)
        rig.monitor.networkChanged(isOnline: true)
        await rig.system.settle()
        #expect(rig.backend.requests.contains("active") == reread)
        #expect((rig.system.call(CallIdentity.uuid(forCallID: call.id))?.state == .ringing) == reread)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    @Test func aFlappingNetworkIsOneOutageForTheCoordinatorToo() async {
        let rig = CallRig()
        rig.monitor.feedCursor(live: true)
        rig.monitor.networkChanged(isOnline: false)
        let call = rig.backend.ring()
        await rig.clock.run(seconds: 20, step: 5, settling: rig.system)
        rig.monitor.networkChanged(isOnline: true)  // a blip: no request gets through…
        rig.monitor.requestFailed()
        await rig.clock.run(seconds: 1, step: 0.5, settling: rig.system)
        rig.monitor.networkChanged(isOnline: false)  // …and it is gone again
        await rig.clock.run(seconds: 15, step: 5, settling: rig.system)
        #expect(!rig.backend.requests.contains("active"), "20 s and 1 s blips alone would only resume the feed")
        rig.monitor.networkChanged(isOnline: true)
        await rig.system.settle()
        #expect(rig.monitor.plans == [.resumeFeed, .resumeAndRereadCalls], "36 s since the first moment offline")
        #expect(rig.backend.requests.filter { $0 == "active" }.count == 1)
        #expect(rig.system.call(CallIdentity.uuid(forCallID: call.id))?.state == .ringing)
        #expect(rig.system.violations.isEmpty, "\(rig.system.violations)")
    }

    // MARK: The ledger's part

    @Test func aRereadListNamingNoLiveCallReReadsEachLiveCall() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        #expect(ledger.activeCallsRead([]) == [.server(callID: call.id, .fetch), .watch])
    }

    @Test func aRereadListWithACallThatRangMeanwhileReportsItOnce() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let effects = ledger.activeCallsRead([call])
        #expect(effects.filter { if case .reportIncoming = $0 { true } else { false } }.count == 1)
        #expect(ledger.entries[call.id]?.origin == .eventStream)
        #expect(ledger.activeCallsRead([call]).isEmpty, "read again: nothing new")
    }
}
