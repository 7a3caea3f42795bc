import Dispatch
import Synchronization

/// A fixed number of PostgreSQL connections shared by many callers. A caller borrows one for
/// the length of a closure, on a thread of the pool's own (libpq blocks, so the cooperative
/// pool never waits on the network); when all are lent out, callers wait their turn in order.
/// A connection found broken after use is closed and opened again on the next borrow, so a
/// restarted server or a killed backend costs one failed call, not the pool.
public final class PostgresPool: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        /// Borrowers waiting for a connection, first come first served, by ticket.
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<PostgresConnection?, Never>)] = []
        var nextTicket: UInt64 = 0
        var closed = false
    }

    private let url: String
    private let size: Int
    private let state = Mutex(State())
    private let queue: DispatchQueue

    /// At most `size` connections to `url` (opened when first needed).
    public init(url: String, size: Int) {
        self.url = url
        self.size = max(1, size)
        queue = DispatchQueue(label: "switchboard.postgres", attributes: .concurrent)
    }

    /// Connections open now (idle or lent out).
    public var openCount: Int { state.withLock { $0.open } }

    /// Runs `body` with a connection, on one of the pool's threads.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let connection = try await borrow()
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { [self] in
                let result = Result { try body(connection) }
                giveBack(connection)
                continuation.resume(with: result)
            }
        }
    }

    /// Closes the idle connections now and the lent ones as they come back; later borrows fail.
    public func close() {
        let (idle, waiters) = state.withLock { state -> ([PostgresConnection], [(ticket: UInt64, continuation: CheckedContinuation<PostgresConnection?, Never>)]) in
            state.closed = true
            defer {
                state.open -= state.idle.count
                state.idle = []
                state.waiters = []
            }
            return (state.idle, state.waiters)
        }
        idle.forEach { $0.close() }
        waiters.forEach { $0.continuation.resume(returning: nil) }
    }

    /// A connection to use: an idle one, a slot to open one in (a placeholder that is not
    /// open), or, when every slot is lent out, the next one given back. One lock section
    /// decides, so a connection given back meanwhile cannot pass a waiter by.
    private func borrow() async throws -> PostgresConnection {
        let ticket = state.withLock { state -> UInt64 in
            state.nextTicket += 1
            return state.nextTicket
        }
        let handed: PostgresConnection? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> PostgresConnection?? in
                    if state.closed || Task.isCancelled { return .some(nil) }
                    if let connection = state.idle.popLast() { return .some(connection) }
                    if state.open < size {
                        state.open += 1
                        return .some(PostgresConnection.closedPlaceholder())
                    }
                    state.waiters.append((ticket, continuation))
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            // A cancelled borrower stops waiting (its place is given up).
            let waiter = state.withLock { state -> CheckedContinuation<PostgresConnection?, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: nil)
        }
        if Task.isCancelled {
            // Whatever came (a connection, or a slot to open one in) goes back for the next.
            if let handed { giveBack(handed) }
            throw CancellationError()
        }
        guard let handed else { throw PostgresError(message: "the connection pool is closed") }
        // A placeholder or a broken connection: a slot to open a connection in.
        if handed.isOpen { return handed }
        return try await openInSlot()
    }

    /// Opens a connection in a slot already counted; a failed open frees the slot for a waiter.
    private func openInSlot() async throws -> PostgresConnection {
        do {
            return try await opened()
        } catch {
            state.withLock { $0.open -= 1 }
            handOnTheSlot()
            throw error
        }
    }

    /// Opens a connection on the pool's threads (connecting blocks).
    private func opened() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [url] in continuation.resume(with: Result { try PostgresConnection(url: url) }) }
        }
    }

    /// After use: to the next waiter, else idle; a broken one is closed and its slot handed on.
    private func giveBack(_ connection: PostgresConnection) {
        if !connection.isOpen { connection.close() }
        let (waiter, closeIt) = state.withLock { state -> (CheckedContinuation<PostgresConnection?, Never>?, Bool) in
            if state.closed {
                state.open -= 1
                return (nil, true)
            }
            if !state.waiters.isEmpty { return (state.waiters.removeFirst().continuation, false) }
            if connection.isOpen {
                state.idle.append(connection)
            } else {
                state.open -= 1
            }
            return (nil, false)
        }
        if closeIt { connection.close() }
        waiter?.resume(returning: connection)
    }

    /// A slot freed without a connection (a failed open): the next waiter may open one.
    private func handOnTheSlot() {
        let waiter = state.withLock { state -> CheckedContinuation<PostgresConnection?, Never>? in
            guard !state.waiters.isEmpty, state.open < size else { return nil }
            state.open += 1
            return state.waiters.removeFirst().continuation
        }
        // A closed connection tells the waiter to open a fresh one in this slot.
        waiter?.resume(returning: PostgresConnection.closedPlaceholder())
    }
}

extension PostgresConnection {
    /// A connection that was never open: handed to a waiter as "open one yourself".
    static func closedPlaceholder() -> PostgresConnection { PostgresConnection() }
}
