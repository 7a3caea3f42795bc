import Synchronization

/// The writing end of a taken-over connection, shared by the loop and any thread that writes.
///
/// Every write and the close go through one queue under one lock, so they reach the socket in
/// the order they were made, whichever thread made them (a frame forwarded on the loop thread
/// and a close from a service thread cannot swap places). The loop is signalled once per batch:
/// when the queue goes from empty to non-empty. `unsentByteCount` is exact: bytes queued here
/// plus the socket's backlog as of the loop's last write.
final class TakeoverChannel: Sendable {
    private struct State {
        var queued: [UInt8] = []
        /// A drain signal is on its way to the loop.
        var signalled = false
        /// No more writes: the connection closes once what is queued is written.
        var closing = false
        /// The connection is gone.
        var closed = false
        /// Bytes the loop holds for the socket that it could not write yet.
        var backlog = 0
        var waiter: CheckedContinuation<Void, any Error>?
    }

    let loop: EventLoop
    let fd: Int32
    let connectionID: UInt64
    private let state = Mutex(State())

    init(loop: EventLoop, fd: Int32, connectionID: UInt64) {
        self.loop = loop
        self.fd = fd
        self.connectionID = connectionID
    }

    var isOpen: Bool { state.withLock { !$0.closing && !$0.closed } }

    var unsentByteCount: Int { state.withLock { $0.queued.count + $0.backlog } }

    /// Queues bytes; false once closing or closed.
    func offer(_ bytes: [UInt8]) -> Bool {
        let (accepted, signal) = state.withLock { state -> (Bool, Bool) in
            if state.closing || state.closed { return (false, false) }
            state.queued.append(contentsOf: bytes)
            return (true, Self.needsSignal(&state))
        }
        if signal { signalLoop() }
        return accepted
    }

    /// Queues bytes, then waits while more than `StreamChannel.highWater` are unsent.
    func write(_ bytes: [UInt8]) async throws {
        if Task.isCancelled { throw HTTPStreamClosed() }
        guard offer(bytes) else { throw HTTPStreamClosed() }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resumeNow: Result<Void, any Error>? = state.withLock { state in
                if state.closed || state.closing { return .failure(HTTPStreamClosed()) }
                if state.queued.count + state.backlog <= StreamChannel.highWater { return .success(()) }
                state.waiter = continuation
                return nil
            }
            if let resumeNow { continuation.resume(with: resumeNow) }
        }
    }

    /// Closes once what is queued is written (`abort: false`), or at once, dropping it.
    func finish(abort: Bool) {
        let (signal, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, any Error>?) in
            if state.closing || state.closed { return (false, nil) }
            state.closing = true
            if abort { state.queued = [] }
            defer { state.waiter = nil }
            return (!abort && Self.needsSignal(&state), state.waiter)
        }
        waiter?.resume(throwing: HTTPStreamClosed())
        if abort {
            loop.enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: [], then: .abort))
        } else if signal {
            signalLoop()
        }
    }

    private static func needsSignal(_ state: inout State) -> Bool {
        if state.signalled { return false }
        state.signalled = true
        return true
    }

    private func signalLoop() {
        loop.enqueue(Outbound(fd: fd, connectionID: connectionID, bytes: [], then: .drainTakeover(self)))
    }

    // MARK: The loop's side

    /// Takes what is queued (in order) and whether the connection is to close after it.
    func take() -> (bytes: [UInt8], close: Bool) {
        state.withLock { state in
            state.signalled = false
            defer { state.queued = [] }
            return (state.queued, state.closing)
        }
    }

    /// The socket's backlog after a write; wakes a writer waiting for room.
    func reportBacklog(_ bytes: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.backlog = bytes
            guard state.queued.count + bytes <= StreamChannel.highWater else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The connection is gone: writes fail from now on.
    func close() {
        let waiter = state.withLock { state in
            state.closed = true
            state.queued = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: HTTPStreamClosed())
    }
}
