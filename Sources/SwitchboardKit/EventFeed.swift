import Foundation
import SwitchboardWire

/// Where the event cursor survives app restarts (UserDefaults, a file, a database…).
public protocol EventCursorStore: Sendable {
    func load() async -> Int64?
    func save(_ cursor: Int64) async
}

/// A cursor store in memory (tests, previews).
public final class InMemoryCursorStore: EventCursorStore {
    private let value: LockedState<Int64?>
    public init(_ cursor: Int64? = nil) { value = LockedState(cursor) }
    public func load() async -> Int64? { value.withLock { $0 } }
    public func save(_ cursor: Int64) async { value.withLock { $0 = cursor } }
}

/// What the feed yields.
public enum EventFeedUpdate: Sendable, Equatable {
    /// New events, ascending. Ask for the next update only when they are handled: that is
    /// when the cursor is saved.
    case events([Event])
    /// The token is no longer valid: clear the session. The feed ends.
    case sessionEnded
    /// The cursor predates the server's retention: take a new snapshot and start a new feed
    /// from its cursor. The feed ends.
    case snapshotRequired
}

/// The event stream of SPEC §4 rule 10 as an `AsyncSequence`, driven by `EventConsumerPolicy`:
/// long polls with `wait=20`, ~3 s jittered retries after failures, the cursor saved only
/// after a batch was handled, and an end on 401 or an expired cursor.
///
/// With a ``ReconnectMonitor`` it follows the reconnect plan of rule 12: a retry pause ends the
/// moment the network is back; after a long outage (or an expired cursor) it takes a new cursor
/// from `/me` and runs `refresh` — the app re-reads its own data — before it goes on (without
/// `refresh` it yields `.snapshotRequired` and ends, as on an expired cursor).
///
/// ```swift
/// for try await update in EventFeed(client: client, cursorStore: store, startCursor: me.eventCursor) {
///     if case .events(let events) = update { await refresh(for: events) }
/// }
/// ```
public struct EventFeed: AsyncSequence, Sendable {
    public typealias Element = EventFeedUpdate

    let client: SwitchboardClient
    let cursorStore: any EventCursorStore
    let startCursor: Int64
    let sleep: @Sendable (Double) async throws -> Void
    let jitter: @Sendable () -> Double
    let reconnect: ReconnectMonitor?
    let refresh: (@Sendable () async throws -> Void)?

    /// - Parameters:
    ///   - startCursor: used when the store has none (a fresh snapshot's `eventCursor`).
    ///   - sleep: how to wait before a retry (injected so tests need not wait).
    ///   - reconnect: reachability and the reconnect plan (SPEC §4 rule 12); nil: plain retries.
    ///   - refresh: the app's own re-read of everything, for a full snapshot after a long
    ///     outage or an expired cursor; it runs after the new cursor was read and before the
    ///     feed goes on from it. A throw retries the snapshot like a failed poll.
    public init(
        client: SwitchboardClient, cursorStore: any EventCursorStore, startCursor: Int64,
        sleep: @escaping @Sendable (Double) async throws -> Void = {
            try await Task.sleep(for: .milliseconds(Int($0 * 1000)))
        },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        reconnect: ReconnectMonitor? = nil,
        refresh: (@Sendable () async throws -> Void)? = nil
    ) {
        self.client = client
        self.cursorStore = cursorStore
        self.startCursor = startCursor
        self.sleep = sleep
        self.jitter = jitter
        self.reconnect = reconnect
        self.refresh = refresh
    }

    public func makeAsyncIterator() -> Iterator { Iterator(feed: self) }

    public struct Iterator: AsyncIteratorProtocol {
        let feed: EventFeed
        var policy: EventConsumerPolicy?
        var pending: EventConsumerPolicy.Action?
        var finished = false

        init(feed: EventFeed) { self.feed = feed }

        public mutating func next() async throws -> EventFeedUpdate? {
            if finished { return nil }
            if policy == nil {
                var fresh = EventConsumerPolicy(cursor: await feed.cursorStore.load() ?? feed.startCursor)
                pending = fresh.start()
                policy = fresh
                feed.reconnect?.feedCursor(live: true)
            }
            while true {
                try Task.checkCancellation()
                guard let action = pending else { return nil }
                switch action {
                case .handle(_, let cursor):
                    // Asked for more: the previous batch was handled.
                    await feed.cursorStore.save(cursor)
                    pending = policy!.handled(through: cursor)
                case .poll(let after, let wait, let generation):
                    pending = await catchUpOrPoll(after: after, wait: wait, generation: generation)
                case .retry(let seconds, let after, let generation):
                    if let reconnect = feed.reconnect {
                        // Cut short when the network comes back (rule 12).
                        try await reconnect.pause(seconds, since: reconnects, sleep: feed.sleep)
                    } else {
                        try await feed.sleep(seconds)
                    }
                    pending = await catchUpOrPoll(after: after, wait: EventConsumerPolicy.wait, generation: generation)
                case .resnapshot where feed.refresh != nil:
                    // An expired cursor, with the app able to refresh: a full snapshot, then on.
                    // Running again on the old cursor, so a failed snapshot retries (and the
                    // retry's poll, answered 410 again, brings it back here).
                    feed.reconnect?.returnFeedPlan(.fullSnapshot)
                    // Expired again right after a snapshot: wait before the next (back-off).
                    let pause = policy!.snapshotPause
                    if pause > 0 { try await feed.sleep(pause) }
                    _ = policy!.resume(from: policy!.cursor)
                    pending = await snapshot(generation: policy!.generation)
                case .endSession, .resnapshot, .idle, .discard:
                    finished = true
                    return nil
                }
                switch pending {
                case .handle(let events, _)?: return .events(events)
                case .endSession?:
                    finished = true
                    feed.reconnect?.feedCursor(live: false)
                    return .sessionEnded
                case .resnapshot? where feed.refresh == nil:
                    finished = true
                    feed.reconnect?.feedCursor(live: false)
                    return .snapshotRequired
                default: continue
                }
            }
        }

        /// Reconnects seen before the request in flight: a pause after its failure ends at
        /// once when a newer one happened meanwhile.
        private var reconnects = 0

        /// Takes the full snapshot a reconnect asked for, or polls.
        private mutating func catchUpOrPoll(
            after: Int64, wait: Int, generation: Int
        ) async -> EventConsumerPolicy.Action {
            if let reconnect = feed.reconnect {
                reconnects = reconnect.reconnectCount
                if let plan = reconnect.takeFeedPlan(), plan == .fullSnapshot {
                    if feed.refresh == nil {
                        // The app takes the snapshot itself and starts a new feed from its cursor.
                        return .resnapshot
                    }
                    reconnect.returnFeedPlan(plan)
                    return await snapshot(generation: generation)
                }
            }
            return await poll(after: after, wait: wait, generation: generation)
        }

        /// A full snapshot: a new cursor from `/me`, the app's refresh, then polling from it.
        private mutating func snapshot(generation: Int) async -> EventConsumerPolicy.Action {
            let reconnect = feed.reconnect
            reconnects = reconnect?.reconnectCount ?? 0
            let sent = reconnect?.moment ?? 0
            do {
                let me = try await feed.client.me()
                reconnect?.requestSucceeded(sentAt: sent)
                try await feed.refresh?()
                _ = reconnect?.takeFeedPlan()
                await feed.cursorStore.save(me.eventCursor)
                reconnect?.feedCursor(live: true)
                return policy!.resume(from: me.eventCursor)
            } catch let error as SwitchboardAPIError where error.status == 401 {
                return policy!.received(.unauthorized, sentGeneration: generation, jitter: feed.jitter())
            } catch let error as SwitchboardAPIError where error.status == 0 {
                reconnect?.requestFailed()
                return policy!.received(.failure, sentGeneration: generation, jitter: feed.jitter())
            } catch {
                // The app's refresh failed, or the server answered an error: try again later.
                return policy!.received(.failure, sentGeneration: generation, jitter: feed.jitter())
            }
        }

        private mutating func poll(after: Int64, wait: Int, generation: Int) async -> EventConsumerPolicy.Action {
            let outcome: EventConsumerPolicy.Outcome
            let sent = feed.reconnect?.moment ?? 0
            do {
                outcome = .events(try await feed.client.events(after: after, wait: wait))
                feed.reconnect?.requestSucceeded(sentAt: sent)
            } catch let error as SwitchboardAPIError where error.status == 401 {
                outcome = .unauthorized
            } catch let error as SwitchboardAPIError where error.status == 410 {
                feed.reconnect?.requestSucceeded(sentAt: sent)
                feed.reconnect?.feedCursor(live: false)
                outcome = .cursorExpired
            } catch let error as SwitchboardAPIError where error.status != 0 {
                // An answer, if not a good one: the network works.
                feed.reconnect?.requestSucceeded(sentAt: sent)
                outcome = .failure
            } catch {
                feed.reconnect?.requestFailed()
                outcome = .failure
            }
            return policy!.received(outcome, sentGeneration: generation, jitter: feed.jitter())
        }
    }
}
