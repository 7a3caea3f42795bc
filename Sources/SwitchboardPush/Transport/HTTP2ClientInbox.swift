/// The hand-over between callers of ``HTTP2Client/send(_:)`` and the client's loop thread, as a pure state machine.
///
/// It lives under the client's `Mutex`; its event methods return what to do, and the caller does it after
/// unlocking (resume a continuation, wake the loop). `Waiter` is what a request carries (its continuation in the
/// client, a plain value in tests).
///
/// A request id goes through: reserved (``reserveID()``) → submitted (``submit(id:waiter:)``, queued for the loop)
/// → owned by the loop (``drain()``) → finished (``finished(ids:)``). A cancellation can arrive at any point.
struct HTTP2ClientInbox<Waiter> {
    enum SubmitAction {
        /// Queued; wake the loop (it may be sleeping in `curl_multi_poll`).
        case wakeLoop
        /// Queued; a wake-up is already on its way.
        case none
        /// Not queued: the client is shut down.
        case failShutdown(Waiter)
        /// Not queued: the task was cancelled before it got here.
        case failCancelled(Waiter)
    }

    enum CancelAction {
        /// Nothing to do (already finished, or marked for ``submit(id:waiter:)`` to refuse).
        case none
        /// The request had not reached the loop: fail it here.
        case failCancelled(Waiter)
        /// The loop owns it: wake the loop so it removes the transfer.
        case wakeLoop
    }

    /// What the loop takes in one drain.
    struct Batch {
        var submissions: [(id: UInt64, waiter: Waiter)] = []
        var cancellations: [UInt64] = []
        var shutdown = false
    }

    private var nextID: UInt64 = 1
    private var reserved: Set<UInt64> = []
    private var cancelledBeforeSubmit: Set<UInt64> = []
    private var queued: [(id: UInt64, waiter: Waiter)] = []
    private var owned: Set<UInt64> = []
    private var cancellations: [UInt64] = []
    private var wakePending = false
    private(set) var isShutdown = false

    /// Requests submitted and not yet finished.
    var inFlight: Int { queued.count + owned.count }

    /// Hands out the id under which a request is submitted and cancelled.
    mutating func reserveID() -> UInt64 {
        let id = nextID
        nextID += 1
        reserved.insert(id)
        return id
    }

    mutating func submit(id: UInt64, waiter: Waiter) -> SubmitAction {
        reserved.remove(id)
        if cancelledBeforeSubmit.remove(id) != nil { return .failCancelled(waiter) }
        if isShutdown { return .failShutdown(waiter) }
        queued.append((id, waiter))
        return requestWake() ? .wakeLoop : .none
    }

    mutating func cancel(id: UInt64) -> CancelAction {
        if reserved.contains(id) {
            cancelledBeforeSubmit.insert(id)
            return .none
        }
        if let index = queued.firstIndex(where: { $0.id == id }) {
            return .failCancelled(queued.remove(at: index).waiter)
        }
        if owned.contains(id) {
            cancellations.append(id)
            return requestWake() ? .wakeLoop : .none
        }
        return .none
    }

    /// Refuses new requests from now on and returns the queued ones to fail; the loop fails the ones it owns.
    /// `wake` is true when the loop must be woken to notice.
    mutating func shutDown() -> (failed: [Waiter], wake: Bool) {
        guard !isShutdown else { return ([], false) }
        isShutdown = true
        let failed = queued.map(\.waiter)
        queued.removeAll()
        return (failed, requestWake())
    }

    /// The loop takes everything queued for it; the next submission wakes it again.
    mutating func drain() -> Batch {
        wakePending = false
        var batch = Batch()
        batch.shutdown = isShutdown
        guard !queued.isEmpty || !cancellations.isEmpty else { return batch }
        for entry in queued { owned.insert(entry.id) }
        swap(&batch.submissions, &queued)
        swap(&batch.cancellations, &cancellations)
        return batch
    }

    /// The loop completed these requests (their waiters are resumed by the loop).
    mutating func finished(ids: [UInt64]) {
        for id in ids { owned.remove(id) }
    }

    /// True when the caller must wake the loop: only the first request after a drain does.
    private mutating func requestWake() -> Bool {
        if wakePending { return false }
        wakePending = true
        return true
    }
}

extension HTTP2ClientInbox.SubmitAction: Equatable where Waiter: Equatable {}
extension HTTP2ClientInbox.CancelAction: Equatable where Waiter: Equatable {}
