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

    /// - Parameters:
    ///   - startCursor: used when the store has none (a fresh snapshot's `eventCursor`).
    ///   - sleep: how to wait before a retry (injected so tests need not wait).
    public init(
        client: SwitchboardClient, cursorStore: any EventCursorStore, startCursor: Int64,
        sleep: @escaping @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .milliseconds(Int($0 * 1000))) },
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.client = client
        self.cursorStore = cursorStore
        self.startCursor = startCursor
        self.sleep = sleep
        self.jitter = jitter
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
                    pending = await poll(after: after, wait: wait, generation: generation)
                case .retry(let seconds, let after, let generation):
                    try await feed.sleep(seconds)
                    pending = await poll(after: after, wait: EventConsumerPolicy.wait, generation: generation)
                case .endSession, .resnapshot, .idle, .discard:
                    finished = true
                    return nil
                }
                switch pending {
                case .handle(let events, _)?: return .events(events)
                case .endSession?:
                    finished = true
                    return .sessionEnded
                case .resnapshot?:
                    finished = true
                    return .snapshotRequired
                default: continue
                }
            }
        }

        private mutating func poll(after: Int64, wait: Int, generation: Int) async -> EventConsumerPolicy.Action {
            let outcome: EventConsumerPolicy.Outcome
            do {
                outcome = .events(try await feed.client.events(after: after, wait: wait))
            } catch let error as SwitchboardAPIError where error.status == 401 {
                outcome = .unauthorized
            } catch let error as SwitchboardAPIError where error.status == 410 {
                outcome = .cursorExpired
            } catch {
                outcome = .failure
            }
            return policy!.received(outcome, sentGeneration: generation, jitter: feed.jitter())
        }
    }
}
