import Foundation

/// Where the app (or the `NWPathMonitor` adapter) reports reachability, and where the event
/// feed and the call coordinator learn how to catch up after an outage. It holds a
/// ``ReconnectPlanner`` under a lock and performs its actions outside it.
///
/// Give the same monitor to the ``EventFeed`` and the ``CallCoordinator``:
///
/// ```swift
/// let reconnect = ReconnectMonitor()
/// let coordinator = CallCoordinator(..., reconnect: reconnect)
/// let feed = EventFeed(client: client, cursorStore: store, startCursor: me.eventCursor,
///                      reconnect: reconnect, refresh: { await model.reloadEverything() })
/// pathMonitor.pathUpdateHandler = { reconnect.networkChanged(isOnline: $0.status == .satisfied) }
/// ```
///
/// When the network is back the feed polls at once (a retry pause is cut short); after 30 s
/// the coordinator also re-reads the active calls; after 5 min, or with no live cursor, the
/// feed takes a new cursor from `/me` and calls the app's `refresh` first.
public final class ReconnectMonitor: Sendable {
    /// While offline, a feed waiting to retry waits for the network this long at most (seconds)
    /// before trying anyway, in case reachability is wrong.
    public static let offlineRetrySeconds = 30.0

    private struct State {
        var planner = ReconnectPlanner()
        /// Whether an event feed holds a cursor the server accepted.
        var cursorLive = false
        /// What the event feed still has to do (the strongest plan since it last looked).
        var feedPlan: ReconnectPlanner.Plan?
        /// Reconnects so far: a pause that began before the latest one ends at once.
        var reconnects = 0
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
        var handlers: [@Sendable (ReconnectPlanner.Plan) -> Void] = []
        var log: [ReconnectPlanner.Plan] = []
    }

    private let state = LockedState(State())
    private let now: @Sendable () -> Double

    /// - Parameter now: monotonic seconds (injected for tests on a manual clock).
    public init(now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.now = now
    }

    /// Reports reachability: call it with every path update (`NWPath.status == .satisfied`).
    /// A repeated "online" during an outage (a new path) is a moment to try again at once.
    public func networkChanged(isOnline: Bool) {
        let moment = now()
        perform { state in
            isOnline
                ? state.planner.networkRestored(at: moment, cursorLive: state.cursorLive)
                : state.planner.networkLost(at: moment)
        }
    }

    /// Whether the network is usable, as far as the monitor knows.
    public var isOnline: Bool { state.withLock { $0.planner.isOnline } }

    /// Runs `handler` (on the reporting thread; keep it short) with each reconnect's plan.
    public func onReconnect(_ handler: @escaping @Sendable (ReconnectPlanner.Plan) -> Void) {
        state.withLock { $0.handlers.append(handler) }
    }

    /// The latest plans given (at most 64), oldest first, for logs and tests.
    public var plans: [ReconnectPlanner.Plan] { state.withLock { $0.log } }

    // MARK: For the event feed and the coordinator's watcher

    /// The current moment on the monitor's clock.
    package var moment: Double { now() }

    /// How many reconnects happened: pass it to ``pause(_:since:sleep:)``.
    package var reconnectCount: Int { state.withLock { $0.reconnects } }

    /// The event feed holds (or lost) a cursor the server accepts.
    package func feedCursor(live: Bool) { state.withLock { $0.cursorLive = live } }

    /// A request got no answer.
    package func requestFailed() {
        let moment = now()
        perform { $0.planner.requestFailed(at: moment) }
    }

    /// A request sent at `sentAt` (``moment``) got an answer.
    package func requestSucceeded(sentAt: Double) {
        perform { $0.planner.requestSucceeded(sentAt: sentAt, cursorLive: $0.cursorLive) }
    }

    /// What the event feed has to do before its next poll (taken once).
    package func takeFeedPlan() -> ReconnectPlanner.Plan? {
        state.withLock { state in
            defer { state.feedPlan = nil }
            return state.feedPlan
        }
    }

    /// A full snapshot that could not be taken: the feed tries again with its next attempt.
    package func returnFeedPlan(_ plan: ReconnectPlanner.Plan) {
        state.withLock { $0.feedPlan = max($0.feedPlan ?? plan, plan) }
    }

    /// Waits `seconds` with `sleep` (while offline, up to ``offlineRetrySeconds``), or until a
    /// reconnect newer than `count` (``reconnectCount`` taken before the request that failed).
    package func pause(
        _ seconds: Double, since count: Int, sleep: @escaping @Sendable (Double) async throws -> Void
    ) async throws {
        let duration = isOnline ? seconds : max(seconds, Self.offlineRetrySeconds)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await sleep(duration) }
            group.addTask { await self.reconnected(since: count) }
            try await group.next()
            group.cancelAll()
        }
    }

    private func reconnected(since count: Int) async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.reconnects > count || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    private func perform(_ decide: (inout State) -> ReconnectPlanner.Action) {
        let (plan, waiters, handlers) = state.withLock {
            state -> (
                ReconnectPlanner.Plan?, [CheckedContinuation<Void, Never>], [@Sendable (ReconnectPlanner.Plan) -> Void]
            ) in
            guard case .reconnect(let plan) = decide(&state) else { return (nil, [], []) }
            state.reconnects += 1
            state.feedPlan = max(state.feedPlan ?? plan, plan)
            state.log.append(plan)
            if state.log.count > 64 { state.log.removeFirst() }
            defer { state.waiters = [:] }
            return (plan, Array(state.waiters.values), state.handlers)
        }
        guard let plan else { return }
        waiters.forEach { $0.resume() }
        handlers.forEach { $0(plan) }
    }
}
