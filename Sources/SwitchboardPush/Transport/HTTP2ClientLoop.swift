import CCurl

#if canImport(Glibc)
import Glibc
#endif

/// Drives one `CURLM*` on the client's dedicated thread: takes requests from the inbox, admits them through the
/// reconnect gate, runs libcurl, and resumes callers.
///
/// Everything here is confined to that thread (the class is deliberately not `Sendable`); the only ways in are
/// the ``HTTP2ClientStorage`` it drains and the libcurl callbacks that run inside `curl_multi_perform`.
final class HTTP2ClientLoop: CurlTransferDelegate {
    private typealias Completion = (CheckedContinuation<HTTP2Response, any Error>, Result<HTTP2Response, any Error>)

    /// The longest `curl_multi_poll` sleeps when nothing is due (a wake-up ends it earlier).
    private static let idlePoll: Duration = .seconds(1)
    /// How long after a request's deadline the loop fails it itself, should libcurl not have (e.g. a transfer
    /// still queued inside libcurl for a stream slot). libcurl's own CURLOPT_TIMEOUT_MS normally fires first.
    private static let deadlineGrace: Duration = .milliseconds(50)

    private let storage: HTTP2ClientStorage
    private let configuration: HTTP2ClientConfiguration
    private let baseURL: String
    private let multi: CurlMultiHandle
    private let clock = ContinuousClock()
    /// The regular connections' streams.
    private let admissionLimit: Int
    /// With the overflow connections' streams: the most that slow requests can raise the limit to.
    private let overflowLimit: Int
    private var gate: ReconnectGate
    /// Accepted, not yet handed to libcurl (gate closed, or more than the connections' streams in flight).
    private var waiting: [CurlTransfer] = []
    /// Added to the multi handle, keyed by easy handle.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Some waiting transfer was held by the gate and is to be handed back (``CurlTransfer/heldByGate``).
    private var heldWaiting = false
    /// One held transfer went back to be looked at again, to return as the probe: until then
    /// (at most a second) no other goes back and the loop does not spin.
    private var probeAwaitedUntil: ContinuousClock.Instant?
    private var finishedIDs: [UInt64] = []
    private var completions: [Completion] = []

    init(configuration: HTTP2ClientConfiguration, baseURL: String, multi: CurlMultiHandle, storage: HTTP2ClientStorage)
    {
        self.configuration = configuration
        self.baseURL = baseURL
        self.multi = multi
        self.storage = storage
        let (limit, overflow) = configuration.maxConnections.multipliedReportingOverflow(
            by: configuration.maxConcurrentStreams)
        admissionLimit = overflow ? Int.max : limit
        let (extra, extraOverflow) = configuration.overflowConnections.multipliedReportingOverflow(
            by: configuration.maxConcurrentStreams)
        let (total, totalOverflow) = admissionLimit.addingReportingOverflow(extra)
        overflowLimit = overflow || extraOverflow || totalOverflow ? Int.max : total
        gate = ReconnectGate(
            initialDelay: configuration.reconnectInitialDelay, maximumDelay: configuration.reconnectMaximumDelay)
    }

    /// The thread's body; returns after shutdown, with every request resumed and every easy handle removed.
    func run() {
        storage.loopStarted(threadID: Self.currentThreadID())
        while true {
            let batch = storage.drain()
            accept(batch.submissions)
            if batch.shutdown {
                failAll(with: .shutdown)
                deliver()
                break
            }
            cancel(batch.cancellations)
            let now = clock.now
            expireWaiting(now: now)
            admit(now: now)
            perform()
            let after = clock.now
            collectCompletions(now: after)
            sweepOverdue(now: after)
            deliver()
            poll(milliseconds: pollTimeout(now: clock.now))
        }
        storage.loopWillExit()
    }

    // MARK: Steps

    private func accept(_ submissions: [(id: UInt64, waiter: PendingRequest)]) {
        for (id, pending) in submissions {
            do {
                waiting.append(
                    try CurlTransfer(
                        id: id, pending: pending, url: baseURL, configuration: configuration, delegate: self,
                        storage: storage))
            } catch {
                finishedIDs.append(id)
                completions.append((pending.continuation, .failure(error)))
            }
        }
    }

    private func cancel(_ ids: [UInt64]) {
        guard !ids.isEmpty else { return }
        let cancelled = Set(ids)
        let now = clock.now
        waiting.removeAll { transfer in
            guard cancelled.contains(transfer.id) else { return false }
            complete(transfer, .failure(CancellationError()))
            return true
        }
        for (easy, transfer) in active where cancelled.contains(transfer.id) {
            remove(easy)
            gate.requestFinished(id: transfer.id, epoch: transfer.epoch, outcome: .other, at: now)
            complete(transfer, .failure(CancellationError()))
        }
    }

    private func expireWaiting(now: ContinuousClock.Instant) {
        waiting.removeAll { transfer in
            guard transfer.deadline <= now else { return false }
            complete(transfer, .failure(HTTP2ClientError.timedOut))
            return true
        }
    }

    /// How many transfers may be in libcurl now: the regular connections' streams, plus one for
    /// every slow transfer (unanswered past the threshold), up to the overflow connections'.
    /// (Counted only when the regular budget is used up, so the common case costs nothing.)
    private func currentLimit(now: ContinuousClock.Instant) -> Int {
        guard active.count >= admissionLimit, overflowLimit > admissionLimit else { return admissionLimit }
        let slowSince = now - configuration.slowRequestThreshold
        let slow = active.values.reduce(0) { $0 + ($1.admittedAt <= slowSince ? 1 : 0) }
        return min(overflowLimit, admissionLimit + slow)
    }

    /// Hands waiting transfers to libcurl as far as the gate and the stream budget allow. While the gate
    /// holds them after a connection failure, those that asked to be handed back then
    /// (``RequestWindow``) are marked, and when it lets requests through again they end unsent
    /// (``HTTP2ClientError/heldForConnection``) instead of going out, for their senders to look again.
    private func admit(now: ContinuousClock.Instant) {
        let limit = waiting.isEmpty ? admissionLimit : currentLimit(now: now)
        while !waiting.isEmpty, active.count < limit {
            let admission = gate.admission(at: now)
            if case .none = admission {
                // Only an outage holds requests back (not the first connection's set-up).
                guard gate.recovering else { return }
                for transfer in waiting where transfer.handBackWhenHeld && !transfer.heldByGate {
                    transfer.heldByGate = true
                    heldWaiting = true
                }
                return
            }
            if heldWaiting {
                if case .all = admission {
                    // The connection is back: every held request goes to its sender to be looked at again.
                    heldWaiting = false
                    probeAwaitedUntil = nil
                    waiting.removeAll { transfer in
                        guard transfer.heldByGate else { return false }
                        complete(transfer, .failure(HTTP2ClientError.heldForConnection))
                        return true
                    }
                } else if !waiting.contains(where: { !$0.heldByGate }) {
                    // A probe may go, and only held requests wait: one goes back to be looked at
                    // again and comes back as the probe; the others wait for the connection. Another
                    // goes back only if none came back within a second (its call had ended).
                    if let until = probeAwaitedUntil, now < until { return }
                    if let first = waiting.firstIndex(where: { $0.heldByGate }) {
                        complete(waiting.remove(at: first), .failure(HTTP2ClientError.heldForConnection))
                        probeAwaitedUntil = now + .seconds(1)
                    }
                    heldWaiting = waiting.contains { $0.heldByGate }
                    return
                }
                guard !waiting.isEmpty else { return }
            }
            switch admission {
            case .all:
                let count = min(waiting.count, limit - active.count)
                let batch = waiting.prefix(count)
                waiting.removeFirst(count)
                for transfer in batch { _ = add(transfer, now: now) }
            case .one:
                // Never a held request as the probe: it goes back to its sender first (above).
                let probe = waiting.remove(at: waiting.firstIndex { !$0.heldByGate } ?? 0)
                if add(probe, now: now) {
                    gate.probeAdmitted(id: probe.id)
                    probeAwaitedUntil = nil
                }
            case .none:
                return
            }
        }
    }

    private func add(_ transfer: CurlTransfer, now: ContinuousClock.Instant) -> Bool {
        do {
            try transfer.arm(now: now, connectTimeout: configuration.connectTimeout)
            transfer.epoch = gate.epoch
            try CurlResult.check(curl_multi_add_handle(multi.raw, transfer.easy), "curl_multi_add_handle")
            active[transfer.easy] = transfer
            return true
        } catch {
            complete(transfer, .failure(error))
            return false
        }
    }

    private func perform() {
        var running: Int32 = 0
        do {
            try CurlResult.check(curl_multi_perform(multi.raw, &running), "curl_multi_perform")
        } catch {
            // Only out-of-memory or an internal libcurl error get here; the handles' state is unknown.
            failActive(with: error)
        }
    }

    private func collectCompletions(now: ContinuousClock.Instant) {
        var queued: Int32 = 0
        var requeue: [CurlTransfer] = []
        while let message = curl_multi_info_read(multi.raw, &queued) {
            // Copy what is needed now: the message is invalid after the next libcurl call.
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            guard let transfer = active[easy] else { continue }
            remove(easy)
            if transfer.connectionVetoed {
                // The gate refused its socket before connect(): nothing was sent, so it can safely wait its turn.
                gate.requestFinished(id: transfer.id, epoch: transfer.epoch, outcome: .other, at: now)
                if transfer.handBackWhenHeld {
                    transfer.heldByGate = true
                    heldWaiting = true
                }
                requeue.append(transfer)
                continue
            }
            let result = transfer.result(for: code)
            let outcome: ReconnectGate.Outcome
            switch result {
            case .success:
                outcome = .responded
            case .failure:
                // A request whose push attempt had less time left than a connection takes to set
                // up timed out by its own deadline, not the server's fault: it does not close the gate.
                let cutShort =
                    code == CURLE_OPERATION_TIMEDOUT && !transfer.requestSent
                    && transfer.deadline < transfer.admittedAt + configuration.connectTimeout
                outcome =
                    !cutShort && CurlResult.isConnectionLevel(code, requestWasSent: transfer.requestSent)
                    ? .connectionFailed : .other
            }
            gate.requestFinished(id: transfer.id, epoch: transfer.epoch, outcome: outcome, at: now)
            complete(transfer, result.mapError { $0 })
        }
        if !requeue.isEmpty { waiting.insert(contentsOf: requeue, at: 0) }
    }

    /// Fails transfers libcurl kept past their deadline (a hang guard; libcurl's own timeout normally fires first).
    private func sweepOverdue(now: ContinuousClock.Instant) {
        for (easy, transfer) in active where transfer.deadline + Self.deadlineGrace <= now {
            remove(easy)
            gate.requestFinished(id: transfer.id, epoch: transfer.epoch, outcome: .other, at: now)
            complete(transfer, .failure(HTTP2ClientError.timedOut))
        }
    }

    private func failAll(with error: HTTP2ClientError) {
        for transfer in waiting { complete(transfer, .failure(error)) }
        waiting.removeAll()
        failActive(with: error)
    }

    private func failActive(with error: any Error) {
        let now = clock.now
        for (easy, transfer) in active {
            remove(easy)
            gate.requestFinished(id: transfer.id, epoch: transfer.epoch, outcome: .other, at: now)
            complete(transfer, .failure(error))
        }
    }

    private func remove(_ easy: UnsafeMutableRawPointer) {
        // Fails only for a handle that is not in this multi handle, which `active` rules out.
        _ = curl_multi_remove_handle(multi.raw, easy)
        active[easy] = nil
    }

    private func complete(_ transfer: CurlTransfer, _ result: Result<HTTP2Response, any Error>) {
        finishedIDs.append(transfer.id)
        completions.append((transfer.continuation, result))
    }

    /// Marks the finished requests in the shared state first (so `inFlight` is exact when a caller resumes),
    /// then resumes the callers.
    private func deliver() {
        guard !completions.isEmpty || !finishedIDs.isEmpty else { return }
        storage.finished(ids: finishedIDs)
        finishedIDs.removeAll(keepingCapacity: true)
        let resumed = completions
        completions.removeAll(keepingCapacity: true)
        for (continuation, result) in resumed { continuation.resume(with: result) }
    }

    /// How long the loop may sleep: until the next deadline, the gate's next probe, or the idle limit.
    /// `curl_multi_poll` shortens it further to libcurl's own next timeout.
    private func pollTimeout(now: ContinuousClock.Instant) -> Int {
        var wakeAt = now + Self.idlePoll
        for transfer in waiting where transfer.deadline < wakeAt { wakeAt = transfer.deadline }
        for transfer in active.values where transfer.deadline + Self.deadlineGrace < wakeAt {
            wakeAt = transfer.deadline + Self.deadlineGrace
        }
        if !waiting.isEmpty {
            if let until = probeAwaitedUntil, until > now, !waiting.contains(where: { !$0.heldByGate }) {
                // Only held transfers wait for the probe that is being looked at: a submission
                // wakes the loop, or the second runs out.
                wakeAt = min(wakeAt, until)
            } else if active.count < currentLimit(now: now) {
                switch gate.admission(at: now) {
                case .all, .one: return 0
                case .none(let until?): wakeAt = min(wakeAt, until)
                case .none(nil): break
                }
            } else if active.count < overflowLimit {
                // Full: look again when the oldest transfer turns slow and frees a slot.
                let threshold = configuration.slowRequestThreshold
                let slowSince = now - threshold
                if let turnsSlow = active.values.lazy.map(\.admittedAt).filter({ $0 > slowSince }).min() {
                    wakeAt = min(wakeAt, turnsSlow + threshold)
                }
            }
        }
        return max(0, (wakeAt - now).millisecondsRoundedUp)
    }

    private func poll(milliseconds: Int) {
        do {
            try CurlResult.check(
                curl_multi_poll(multi.raw, nil, 0, Int32(clamping: milliseconds), nil), "curl_multi_poll")
        } catch {
            // Never spin on a failing poll; the next round retries.
            usleep(10_000)
        }
    }

    // MARK: CurlTransferDelegate (inside curl_multi_perform)

    func transferWantsConnection(_ transfer: CurlTransfer) -> Bool {
        let allowed = gate.mayConnect(id: transfer.id)
        if allowed { storage.connectionAttempts.add(1, ordering: .relaxed) }
        return allowed
    }

    func transferConnectionReady(_ transfer: CurlTransfer) {
        gate.connectionReady(id: transfer.id)
    }

    /// The kernel thread id, read from `/proc/thread-self` (Glibc's `gettid` is not visible to Swift).
    private static func currentThreadID() -> Int32? {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let target = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.split(separator: "/").last.flatMap { Int32($0) }
    }
}
