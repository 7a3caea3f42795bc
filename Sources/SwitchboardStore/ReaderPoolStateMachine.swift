/// The pure bookkeeping of the reader pool: which connections are idle, who waits for one, and
/// whether the pool is closed. Event methods return what the caller must do outside the lock.
///
/// Generic over the waiter so tests can use plain values; the pool stores continuations.
struct ReaderPoolStateMachine<Waiter> {
    /// Why an acquisition failed.
    enum Failure: Equatable {
        case closed
        case cancelled
    }

    /// What to do with an acquisition request.
    enum AcquireAction {
        /// Use this connection index now.
        case use(Int)
        /// The waiter was queued; it is resumed by a later ``readerReleased(_:)`` or ``closeRequested()``.
        case suspend
        /// Resume the requester with this failure.
        case fail(Failure)
    }

    /// What to do with a connection handed back.
    enum ReleaseAction {
        /// Resume this waiter with this connection index.
        case resume(Waiter, Int)
        /// Nothing: the connection is idle again.
        case none
        /// The pool is closed: close this connection.
        case close(Int)
    }

    /// What to do when the pool closes.
    struct CloseAction {
        /// Idle connections to close now.
        var idle: [Int]
        /// Waiters to fail with ``Failure/closed``.
        var waiters: [Waiter]
    }

    private var idle: [Int]
    private var waiters: [UInt64: Waiter] = [:]
    /// Waiter ids in arrival order from `head` on; ids whose waiter was cancelled are skipped.
    private var order: [UInt64] = []
    private var head = 0
    private(set) var isClosed = false

    /// A pool of `count` idle connections, indices `0..<count`.
    init(count: Int) {
        idle = Array((0..<count).reversed())
    }

    /// The number of queued waiters.
    var waiterCount: Int { waiters.count }

    /// The number of idle connections.
    var idleCount: Int { idle.count }

    /// A caller wants a connection; `id` is unique per request.
    mutating func acquireRequested(id: UInt64, waiter: Waiter, isCancelled: Bool) -> AcquireAction {
        if isClosed { return .fail(.closed) }
        if isCancelled { return .fail(.cancelled) }
        // Last released is first reused: its page cache and statements are warm.
        if let index = idle.popLast() { return .use(index) }
        waiters[id] = waiter
        order.append(id)
        return .suspend
    }

    /// The request `id` was cancelled; returns its waiter if it was still queued (to be failed).
    mutating func waiterCancelled(id: UInt64) -> Waiter? {
        waiters.removeValue(forKey: id)
    }

    /// A connection came back; hand it to the oldest waiter, keep it idle, or close it.
    mutating func readerReleased(_ index: Int) -> ReleaseAction {
        if isClosed { return .close(index) }
        while head < order.count {
            let id = order[head]
            head += 1
            if let waiter = waiters.removeValue(forKey: id) {
                compactOrder()
                return .resume(waiter, index)
            }
        }
        compactOrder()
        idle.append(index)
        return .none
    }

    /// The pool closes: idle connections close now, checked-out ones when released.
    mutating func closeRequested() -> CloseAction {
        guard !isClosed else { return CloseAction(idle: [], waiters: []) }
        isClosed = true
        let remaining = order[head...].compactMap { waiters[$0] }
        let action = CloseAction(idle: idle, waiters: remaining)
        idle = []
        waiters = [:]
        order = []
        head = 0
        return action
    }

    private mutating func compactOrder() {
        if head == order.count {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
