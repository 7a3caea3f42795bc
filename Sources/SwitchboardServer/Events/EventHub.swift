import Foundation
import Synchronization
import SwitchboardWire

/// Held requests waiting for a user's next events. Right after each commit, in commit order,
/// the store hands the events it wrote to `deliver`; one sweep (in `run()`) times waiters out,
/// so a held request costs a small entry here and no timer of its own.
///
/// Use: `register` before the second query, `wait` only if that query found nothing, and
/// always `release` (it is harmless after a wake-up). A delivery that arrives between
/// `register` and `wait` is kept, so no event can slip between the query and the wait.
///
/// Why the delivered events can be answered without another query: anything committed before
/// the second query's snapshot is in that query; anything committed later is delivered after
/// the waiter registered, and deliveries come in commit order, so the first delivery a waiter
/// gets holds that user's next events. Later deliveries are left to the next request, which
/// reads them from the database. That holds for one process only: with several instances on
/// one database, commits reach a hub by two paths (its own commits, other instances' notices)
/// that can overtake each other. There a delivery says which event its events follow
/// (`after`), and a waiter whose cursor is behind that reads from the database instead.
public final class EventHub: Sendable {
    /// Why a wait ended.
    public enum WakeReason: Sendable, Equatable {
        /// New events for the user, in id order, that directly follow event `after` in the
        /// user's feed (0 when nothing before them can be missing: one instance). A waiter whose
        /// cursor is below `after` missed a commit of another instance and reads instead.
        case notified([Event], after: Int64)
        /// Another instance committed events for the user (or may have, while this one could
        /// not hear it): read them from the database.
        case changed
        case timedOut
        case cancelled
    }

    /// A registered waiter.
    public struct Token: Sendable, Hashable {
        let id: UInt64
        let userID: String
    }

    private struct Entry {
        var deadline: Date
        var continuation: CheckedContinuation<WakeReason, Never>?
        var result: WakeReason?
    }

    private struct State {
        var nextID: UInt64 = 0
        var waiters: [String: [UInt64: Entry]] = [:]
        var count = 0
        /// After `closeAll()`: new waiters time out at once.
        var closed = false
    }

    private let state = Mutex(State())
    /// How often `run()` looks for expired waiters.
    let sweepInterval: Duration
    /// The clock deadlines are read on and `run()` sleeps on (the store's).
    let environment: ServerEnvironment

    /// Creates a hub; `sweepInterval` bounds how late a timeout may fire.
    public init(sweepInterval: Duration = .milliseconds(100), environment: ServerEnvironment = .live) {
        self.sweepInterval = sweepInterval
        self.environment = environment
    }

    /// Whether `closeAll()` was called (the server is shutting down).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The number of registered waiters.
    public var waiterCount: Int { state.withLock { $0.count } }

    /// Registers a waiter for `userID` that times out `timeout` from now (on the hub's clock).
    public func register(userID: String, timeout: Duration) -> Token {
        let deadline = environment.moment(after: timeout)
        return state.withLock { state in
            state.nextID += 1
            state.waiters[userID, default: [:]][state.nextID] = Entry(
                deadline: deadline, result: state.closed ? .timedOut : nil)
            state.count += 1
            return Token(id: state.nextID, userID: userID)
        }
    }

    /// Suspends until the waiter is notified, times out or its task is cancelled. Returns at
    /// once when that already happened since `register`.
    public func wait(_ token: Token) async -> WakeReason {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WakeReason, Never>) in
                let immediate: WakeReason? = state.withLock { state in
                    guard var entry = state.waiters[token.userID]?[token.id] else { return .cancelled }
                    if let result = entry.result { return result }
                    entry.continuation = continuation
                    state.waiters[token.userID]?[token.id] = entry
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            finish(token, with: .cancelled)
        }
    }

    /// Removes the waiter; a suspended `wait` returns `.cancelled`.
    public func release(_ token: Token) {
        let continuation = state.withLock { state -> CheckedContinuation<WakeReason, Never>? in
            guard let entry = state.waiters[token.userID]?.removeValue(forKey: token.id) else { return nil }
            if state.waiters[token.userID]?.isEmpty == true { state.waiters[token.userID] = nil }
            state.count -= 1
            return entry.continuation
        }
        continuation?.resume(returning: .cancelled)
    }

    /// Hands each user's new events to their waiters (called right after the commit that wrote
    /// them, in commit order). A waiter keeps the first delivery it gets. `previous`: each
    /// user's newest event id before these (a shared database), 0 when absent.
    public func deliver(_ events: [String: [Event]], previous: [String: Int64] = [:]) {
        var wake: [(CheckedContinuation<WakeReason, Never>, [Event], Int64)] = []
        state.withLock { state in
            for (userID, userEvents) in events {
                guard let entries = state.waiters[userID] else { continue }
                for (id, entry) in entries where entry.result == nil {
                    state.waiters[userID]?[id]?.result = .notified(userEvents, after: previous[userID] ?? 0)
                    if let continuation = entry.continuation {
                        state.waiters[userID]?[id]?.continuation = nil
                        wake.append((continuation, userEvents, previous[userID] ?? 0))
                    }
                }
            }
        }
        for (continuation, userEvents, after) in wake {
            continuation.resume(returning: .notified(userEvents, after: after))
        }
    }

    /// Tells the waiters of `userIDs` that events of theirs were committed elsewhere (another
    /// instance); they read them from the database. A waiter that already has a result keeps it.
    public func changed(_ userIDs: some Sequence<String>) {
        var wake: [CheckedContinuation<WakeReason, Never>] = []
        state.withLock { state in
            for userID in userIDs {
                guard let entries = state.waiters[userID] else { continue }
                for (id, entry) in entries where entry.result == nil {
                    state.waiters[userID]?[id]?.result = .changed
                    if let continuation = entry.continuation {
                        state.waiters[userID]?[id]?.continuation = nil
                        wake.append(continuation)
                    }
                }
            }
        }
        for continuation in wake { continuation.resume(returning: .changed) }
    }

    /// ``changed(_:)`` for every user with a waiter: after notices may have been missed (the
    /// listener's connection was down).
    public func everythingChanged() {
        changed(state.withLock { Array($0.waiters.keys) })
    }

    /// Times out every waiter whose deadline has passed.
    public func sweep(now: Date? = nil) {
        let now = now ?? environment.now()
        var wake: [CheckedContinuation<WakeReason, Never>] = []
        state.withLock { state in
            for (userID, entries) in state.waiters {
                for (id, entry) in entries where entry.result == nil && entry.deadline <= now {
                    state.waiters[userID]?[id]?.result = .timedOut
                    if let continuation = entry.continuation {
                        state.waiters[userID]?[id]?.continuation = nil
                        wake.append(continuation)
                    }
                }
            }
        }
        for continuation in wake { continuation.resume(returning: .timedOut) }
    }

    /// The server is shutting down: every held request is answered now (as a timeout: an empty
    /// batch, or a heartbeat for a stream), and later ones do not wait, so the drain is not held
    /// up by long polls.
    public func closeAll() {
        state.withLock { $0.closed = true }
        sweep(now: .distantFuture)
    }

    /// Sweeps every `sweepInterval` (on the hub's clock) until cancelled.
    public func run() async {
        await BackgroundLoop.$name.withValue("event hub sweep") {
            while !Task.isCancelled {
                try? await environment.sleep(for: sweepInterval)
                sweep()
            }
        }
    }

    private func finish(_ token: Token, with reason: WakeReason) {
        let continuation = state.withLock { state -> CheckedContinuation<WakeReason, Never>? in
            guard var entry = state.waiters[token.userID]?[token.id], entry.result == nil else { return nil }
            entry.result = reason
            let continuation = entry.continuation
            entry.continuation = nil
            state.waiters[token.userID]?[token.id] = entry
            return continuation
        }
        continuation?.resume(returning: reason)
    }
}
