import Dispatch
import Synchronization

/// A connection that is used by one party at a time, though it crosses threads.
///
/// `@unchecked Sendable` is safe because of how ``Database`` and ``PostgresDatabase`` confine
/// each connection (SQLite's and libpq's connections must not be used by two threads at once):
/// - the writer is used by `init` (SQLite's migrations) before it is wrapped, and afterwards only
///   inside jobs on the serial writer queue, including the job that closes it; dispatching a job
///   orders everything before it, and the serial queue orders the jobs (PostgreSQL migrates on
///   a connection of its own that is closed before the wrapped ones are made);
/// - a reader is used only by the one caller that checked it out of the ``ReaderPool``, until it
///   hands it back (PostgreSQL's only inside a job on that reader's serial queue). Check-out and
///   hand-back go through the pool's `Mutex`, whose lock and unlock order each use of a reader
///   before the next party's use (or its close).
struct ConfinedConnection<Connection: StoreConnection>: @unchecked Sendable {
    let connection: Connection
}

/// A connection the pools can close: SQLite's and PostgreSQL's.
protocol StoreConnection: AnyObject, SendableMetatype {
    func close()
}

extension SQLiteConnection: StoreConnection {}
extension PostgresConnection: StoreConnection {}

/// A store's "closed" flag: set once, by the first `close()`.
final class ClosedFlag: Sendable {
    private let state = Mutex(false)

    var isClosed: Bool { state.withLock { $0 } }

    /// Sets the flag; true only for the call that set it (that one closes the connections).
    func close() -> Bool {
        state.withLock { closed in
            defer { closed = true }
            return !closed
        }
    }

    /// Throws ``StoreError/Code/closed`` once the flag is set.
    func checkOpen() throws {
        if isClosed { throw StoreError.closed() }
    }
}

/// A fixed set of read-only connections, each with its own serial queue; callers wait (suspended,
/// not blocking a thread) when all are checked out.
final class ReaderPool<Connection: StoreConnection>: Sendable {
    /// A checked-out reader: its index, connection and the queue its blocking work runs on.
    struct Reader: Sendable {
        let index: Int
        let connection: ConfinedConnection<Connection>
        let queue: DispatchQueue
    }

    private let readers: [Reader]
    private let state: Mutex<ReaderPoolStateMachine<CheckedContinuation<Int, any Error>>>
    private let nextRequestID = Atomic<UInt64>(0)

    init(connections: [Connection], label: String = "switchboard.store.reader") {
        // One serial queue per reader: each runs on an overcommit thread, never on the threads
        // that Swift's cooperative pool shares with the global concurrent queue on Linux.
        readers = connections.enumerated().map { index, connection in
            Reader(
                index: index, connection: ConfinedConnection(connection: connection),
                queue: DispatchQueue(label: "\(label).\(index)"))
        }
        state = Mutex(ReaderPoolStateMachine(count: connections.count))
    }

    /// Checks out an idle reader, waiting for one when all are busy.
    ///
    /// Throws ``StoreError/Code/closed`` when the pool is or gets closed, `CancellationError` when
    /// the task is cancelled while waiting.
    func acquire() async throws -> Reader {
        let id = nextRequestID.wrappingAdd(1, ordering: .relaxed).oldValue
        let index = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                // Task.isCancelled is read under the lock: the cancellation handler takes the same
                // lock after the flag is set, so either it finds this waiter or we see the flag.
                let action = state.withLock {
                    $0.acquireRequested(id: id, waiter: continuation, isCancelled: Task.isCancelled)
                }
                switch action {
                case .use(let index): continuation.resume(returning: index)
                case .suspend: break
                case .fail(let failure): continuation.resume(throwing: readerPoolError(for: failure))
                }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiterCancelled(id: id) }
            waiter?.resume(throwing: CancellationError())
        }
        return readers[index]
    }

    /// Hands a reader back; must be called from the reader's queue, after its last use.
    func release(_ reader: Reader) {
        let action = state.withLock { $0.readerReleased(reader.index) }
        switch action {
        case .resume(let waiter, let index): waiter.resume(returning: index)
        case .none: break
        case .close(let index): readers[index].connection.connection.close()
        }
    }

    /// Closes idle readers now and fails every waiter; readers in use close when released.
    func close() {
        let action = state.withLock { $0.closeRequested() }
        for waiter in action.waiters { waiter.resume(throwing: StoreError.closed()) }
        for index in action.idle {
            // An idle reader has no job in flight, and the lock above ordered its last use before this.
            readers[index].connection.connection.close()
        }
    }

}

/// The error a waiter for a reader gets. A free function: the pool's generic metatype is not
/// Sendable, so the continuation's closure must not reach it through `Self`.
private func readerPoolError(
    for failure: ReaderPoolStateMachine<CheckedContinuation<Int, any Error>>.Failure
) -> any Error {
    switch failure {
    case .closed: StoreError.closed()
    case .cancelled: CancellationError()
    }
}
