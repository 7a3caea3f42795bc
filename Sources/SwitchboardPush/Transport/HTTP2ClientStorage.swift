import CCurl
import Synchronization

/// A request on its way from ``HTTP2Client/send(_:)`` to the loop thread.
struct PendingRequest: Sendable {
    let request: HTTP2Request
    let deadline: ContinuousClock.Instant
    /// Whether, once held by the reconnect gate, it is handed back unsent instead of sent when
    /// the gate opens (``RequestWindow``).
    let handBackWhenHeld: Bool
    let continuation: CheckedContinuation<HTTP2Response, any Error>
}

/// The `CURLM*` that callers may wake with `curl_multi_wakeup`, the one libcurl call documented as safe from any
/// thread while another thread drives the handle.
///
/// `@unchecked Sendable` is safe because the pointer is used for nothing but `curl_multi_wakeup`, and only under
/// ``HTTP2ClientStorage``'s lock while it is installed there; the loop removes it under that lock before the
/// handle is freed.
struct CurlWakeTarget: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer
}

/// The state shared by callers and the loop thread: the inbox state machine under a `Mutex`, plus counters.
///
/// Compute under the lock, act outside it — except `curl_multi_wakeup`, which is called under the lock on
/// purpose: the loop withdraws the multi handle (``loopWillExit()``) under the same lock before freeing it, so a
/// wake-up can never reach a freed handle.
final class HTTP2ClientStorage: Sendable {
    private struct State {
        var inbox = HTTP2ClientInbox<PendingRequest>()
        /// The multi handle to wake while the loop runs; `nil` once the loop is leaving.
        var wakeTarget: CurlWakeTarget?
        var loopExited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var loopThreadID: Int32?

        /// Interrupts the loop's `curl_multi_poll`. Its only failure is a bad handle, which `wakeTarget` rules out.
        func wakeLoop() {
            if let wakeTarget { _ = curl_multi_wakeup(wakeTarget.multi) }
        }
    }

    private let state: Mutex<State>
    /// Sockets libcurl was allowed to connect (metric; also how tests see the backoff at work).
    let connectionAttempts = Atomic<Int>(0)
    /// `CurlTransfer`s (easy handles) alive now; back to 0 whenever nothing is in flight (leak check for tests).
    let liveTransfers = Atomic<Int>(0)

    init(wakeTarget: CurlWakeTarget) {
        state = Mutex(State(wakeTarget: wakeTarget))
    }

    var inFlight: Int { state.withLock { $0.inbox.inFlight } }
    var loopThreadID: Int32? { state.withLock { $0.loopThreadID } }

    // MARK: Callers

    func reserveID() -> UInt64 {
        state.withLock { $0.inbox.reserveID() }
    }

    func submit(id: UInt64, _ pending: PendingRequest) {
        let action = state.withLock { state in
            let action = state.inbox.submit(id: id, waiter: pending)
            if case .wakeLoop = action { state.wakeLoop() }
            return action
        }
        switch action {
        case .wakeLoop, .none: break
        case .failShutdown(let waiter): waiter.continuation.resume(throwing: HTTP2ClientError.shutdown)
        case .failCancelled(let waiter): waiter.continuation.resume(throwing: CancellationError())
        }
    }

    func cancel(id: UInt64) {
        let action = state.withLock { state in
            let action = state.inbox.cancel(id: id)
            if case .wakeLoop = action { state.wakeLoop() }
            return action
        }
        if case .failCancelled(let waiter) = action { waiter.continuation.resume(throwing: CancellationError()) }
    }

    /// Refuses new requests, fails the queued ones and tells the loop to finish.
    func shutDown() {
        let failed = state.withLock { state in
            let (failed, wake) = state.inbox.shutDown()
            if wake { state.wakeLoop() }
            return failed
        }
        for waiter in failed { waiter.continuation.resume(throwing: HTTP2ClientError.shutdown) }
    }

    /// Suspends until the loop thread has finished (at once if it already has).
    func waitForLoopExit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state in
                if state.loopExited { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if finished { continuation.resume() }
        }
    }

    // MARK: Loop thread

    func loopStarted(threadID: Int32?) {
        state.withLock { $0.loopThreadID = threadID }
    }

    func drain() -> HTTP2ClientInbox<PendingRequest>.Batch {
        state.withLock { $0.inbox.drain() }
    }

    /// Marks requests finished (so ``inFlight`` drops) before the loop resumes their callers.
    func finished(ids: [UInt64]) {
        guard !ids.isEmpty else { return }
        state.withLock { $0.inbox.finished(ids: ids) }
    }

    /// Withdraws the multi handle from wake-ups; called by the loop before it frees the handle.
    func loopWillExit() {
        state.withLock { $0.wakeTarget = nil }
    }

    /// The loop thread is done; resumes everyone waiting in ``waitForLoopExit()``.
    func loopDidExit() {
        let waiters = state.withLock { state in
            state.loopExited = true
            defer { state.exitWaiters.removeAll() }
            return state.exitWaiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
