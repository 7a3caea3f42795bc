import Synchronization

/// A level-triggered "there may be work" flag that one background loop waits on.
///
/// `signal()` before `wait(until:)` is remembered (the next wait returns at once); many signals
/// while nobody waits count as one. A wait ends with `.signalled` on a signal, with `.timedOut`
/// when the sleep to its deadline finishes, or with `.cancelled` — and nothing else: a timed-out
/// or cancelled wait never leaves a signal behind, so the next wait really sleeps. (The loop that
/// wrote its own timeout as a signal went on to spin on it: issue 12 §0.)
public final class WakeSignal: Sendable {
    public enum Outcome: Sendable, Equatable { case signalled, timedOut, cancelled }

    private struct State {
        var pending = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Outcome, Never>)?
        /// The wait in progress (its timer may fire before it has suspended).
        var current: UInt64 = 0
        /// How the current wait ended before it suspended.
        var endedEarly: Outcome?
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes the waiter now, or the next one if nobody waits.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: .signalled)
    }

    /// Waits for a signal, at most as long as `sleep` takes (which throws when cancelled).
    /// One waiter at a time.
    public func wait(sleep: @escaping @Sendable () async throws -> Void) async -> Outcome {
        let id = state.withLock { state -> UInt64 in
            state.current &+= 1
            state.endedEarly = nil
            return state.current
        }
        let timer = Task {
            do {
                try await sleep()
                self.end(id, with: .timedOut)
            } catch {
                // Cancelled because the wait already ended: nothing to tell anyone.
            }
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let immediate = state.withLock { state -> Outcome? in
                    if state.pending {
                        state.pending = false
                        return .signalled
                    }
                    if let early = state.endedEarly { return early }
                    if Task.isCancelled { return .cancelled }
                    precondition(state.waiter == nil, "WakeSignal has one waiter at a time")
                    state.waiter = (id, continuation)
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            self.end(id, with: .cancelled)
        }
    }

    /// Ends wait `id` if it is still the one waiting.
    private func end(_ id: UInt64, with outcome: Outcome) {
        let waiter = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard let waiter = state.waiter, waiter.id == id else {
                if state.current == id, state.endedEarly == nil { state.endedEarly = outcome }
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: outcome)
    }
}
