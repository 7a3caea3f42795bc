import Foundation
import Synchronization
import SwitchboardLifecycle
import SwitchboardObservability
import SwitchboardPushCore

/// Drains the outbox: claims due jobs, drops those whose call stopped ringing, sends the rest
/// through the channel each job was written for, and records every outcome. A claim is a lease
/// held by this instance (``PushOutboxStore/instanceID``):
/// only it records the job's outcome, and when it crashes another instance takes the job over
/// once the lease runs out (``claimLease``, longer than one request may take). On SQLite, the
/// only dispatcher of its database, a start-up releases the claims of the process before it.
/// Delivery is at least once; a retry or a resend after a crash carries the same `apns-id`.
///
/// Every claimed job is sent on its own task: the loop claims the next due jobs while earlier
/// ones are still waiting for their answers, so one slow or hung token never delays another
/// (SPEC §3). Between passes the loop sleeps until the next job is due, a new job is committed
/// (`wake()`), or `idleCeiling` passes; an idle outbox costs one cheap read per ceiling.
public final class PushDispatcher: Sendable {
    let store: any PushOutboxStore
    /// The channels jobs are routed to, by the channel each job was written for: the server's
    /// own, or a gateway app's.
    public let directory: any PushChannelDirectory
    /// The server's own channels.
    public var channels: PushChannels { directory.server }
    let logger: Logger
    let metrics: Metrics
    /// Transport failures are logged once per cause per 5 minutes: a TLS mistake retried for a
    /// whole ring window says so at once, without a line per attempt.
    private let transportFailures = Mutex(LogThrottle(interval: .seconds(300)))
    /// Jobs claimed per write transaction.
    let batchSize = 64
    /// Jobs being sent at once; past it the loop waits for answers before claiming more.
    let maxInFlight: Int
    /// How long a claim keeps other passes and instances off a job: longer than one send may
    /// take (the provider's request deadline), so a live instance never loses a job it is
    /// still sending, and short enough that a crashed instance's jobs go out within the ring.
    let claimLease: TimeInterval
    /// The longest the loop sleeps with nothing due (a safety net: every write of a job wakes it).
    let idleCeiling: TimeInterval = 10
    /// The pause after a pass that failed (the database was unavailable).
    let failedPassBackoff: TimeInterval = 1
    let jitter: @Sendable () -> Double
    private let work = WakeSignal()
    private let pending = Atomic<Int>(0)
    private let passes = Atomic<Int>(0)
    private let inFlight = Mutex<Set<String>>([])

    /// Jobs waiting, as of the last pass (for the metrics gauge).
    public var pendingCount: Int { pending.load(ordering: .relaxed) }
    /// Passes over the outbox so far (tests bound it: an idle dispatcher must not spin).
    public var passCount: Int { passes.load(ordering: .relaxed) }
    /// Jobs whose sends have not finished.
    public var inFlightCount: Int { inFlight.withLock { $0.count } }

    public convenience init(
        store: any PushOutboxStore, channels: PushChannels, logger: Logger, metrics: Metrics, maxInFlight: Int = 1000,
        claimLease: TimeInterval = 15, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.init(
            store: store, directory: ServerChannelDirectory(channels), logger: logger, metrics: metrics,
            maxInFlight: maxInFlight,
            claimLease: claimLease, jitter: jitter)
    }

    public init(
        store: any PushOutboxStore, directory: any PushChannelDirectory, logger: Logger, metrics: Metrics,
        maxInFlight: Int = 1000,
        claimLease: TimeInterval = 15, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.claimLease = claimLease
        self.store = store
        self.directory = directory
        self.logger = logger
        self.metrics = metrics
        self.maxInFlight = max(1, maxInFlight)
        self.jitter = jitter
    }

    /// New jobs were committed: start at once instead of at the next due time.
    public func wake() { work.signal() }

    /// The name its sleeps carry (`BackgroundLoop.name`).
    public static let loopName = "push dispatcher"

    /// Runs until cancelled; sends still in flight are cancelled with it.
    public func run() async {
        await BackgroundLoop.$name.withValue(Self.loopName) { await runLoop() }
    }

    private func runLoop() async {
        // Only on SQLite is this the database's one dispatcher; on PostgreSQL other instances'
        // claims are live leases, and a crashed instance's lapse by themselves.
        if !store.isShared {
            do {
                try await releaseClaims()
            } catch {
                logger.error(
                    "push dispatcher could not release old claims", ["error": .string(String(describing: error))])
            }
        }
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                let sleepUntil: Date
                do {
                    let pass = try await claimDue()
                    for job in pass.claimed {
                        group.addTask {
                            let rescheduled = await self.process(job)
                            let wasFull = self.inFlight.withLock { set in
                                defer { set.remove(job.id) }
                                return set.count >= self.maxInFlight
                            }
                            // The loop sleeps until the next due job it knew of: tell it about
                            // a sooner retry, or a free slot it was waiting for.
                            if rescheduled || wasFull { self.wake() }
                        }
                    }
                    if pass.more { continue }
                    sleepUntil = pass.nextDue
                } catch is CancellationError {
                    break
                } catch {
                    logger.error("push dispatcher pass failed", ["error": .string(String(describing: error))])
                    sleepUntil = store.now().addingTimeInterval(failedPassBackoff)
                }
                let store = self.store
                if await work.wait(sleep: { try await store.sleep(until: sleepUntil) }) == .cancelled { break }
            }
            group.cancelAll()
        }
    }

    /// Claims from a previous process are void: this is the only dispatcher of this (SQLite) database.
    func releaseClaims() async throws {
        try await store.releaseClaims()
    }

    /// One pass: the jobs it claimed, whether to look again at once (it claimed some), and
    /// otherwise when the next job falls due (capped at `idleCeiling`).
    public struct Pass: Sendable {
        var claimed: [PushJob]
        var more: Bool
        var nextDue: Date
    }

    /// Claims the jobs due now, up to the batch size and the in-flight budget.
    public func claimDue() async throws -> Pass {
        passes.add(1, ordering: .relaxed)
        let now = store.now()
        let nowMS = now.outboxMilliseconds
        let ceiling = now.addingTimeInterval(idleCeiling)
        let leaseMS = Int64(claimLease * 1000)
        let busy = inFlight.withLock { $0 }
        let budget = min(batchSize, maxInFlight - busy.count)
        // One cheap read answers the gauge, whether anything is due, and when the next job is;
        // an idle outbox never takes the single writer. A claimed job counts as due when its
        // lease lapses (its process ended without an outcome).
        let outlook = try await store.outlook(at: nowMS)
        pending.store(outlook.pending, ordering: .relaxed)
        let nextDue = outlook.nextDueMS.map { min(Date(timeIntervalSince1970: Double($0) / 1000), ceiling) } ?? ceiling
        // Nothing due, or nothing we may send yet: sleep until the next job (a finished send
        // wakes the loop when it frees a slot). Never loop at once without having claimed.
        guard outlook.due > 0, budget > 0 else {
            return Pass(claimed: [], more: false, nextDue: outlook.due > 0 ? ceiling : nextDue)
        }
        // A send still running past its lease (only a test's clock jumps that far) keeps its job.
        // The lease runs from when the claim is written (after any wait for the write lock),
        // not from when this pass began.
        let jobs = try await store.claim(dueAt: nowMS, limit: budget, leaseMS: leaseMS, skipping: busy)
        inFlight.withLock { set in for job in jobs { set.insert(job.id) } }
        // After a claim, look again at once: more may be due, and the next due time read above
        // was that of the jobs just claimed.
        return Pass(claimed: jobs, more: !jobs.isEmpty, nextDue: ceiling)
    }

    /// Claims and processes the jobs due now, waiting for their outcomes; returns how many.
    /// (The loop in `run()` does not wait; tests and tools that want one synchronous pass do.)
    @discardableResult
    public func drainOnce() async throws -> Int {
        let pass = try await claimDue()
        await withDiscardingTaskGroup { group in
            for job in pass.claimed {
                group.addTask {
                    _ = await self.process(job)
                    self.inFlight.withLock { _ = $0.remove(job.id) }
                }
            }
        }
        return pass.claimed.count
    }

    /// Sends one job and records its outcome; `true` when it was rescheduled for a retry or
    /// left for its lease to lapse (the loop's next due time may have moved earlier).
    private func process(_ job: PushJob) async -> Bool {
        do {
            // The attempt's window: it ends with the ring (a notice's expiry), and within the
            // claim's lease, so no request of it is still waiting when another pass may take
            // the job over.
            let remaining = job.expiresAt.timeIntervalSince(store.now())
            let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, min(remaining, claimLease * 0.9)) * 1000))
            var result: PushSendResult
            var channel: any PushChannel
            var lookedAgain = 0
            var sent = true
            repeat {
                // A push must never ring a dead call: asked before the first send, and again
                // whenever a send was held for a connection and handed back unsent.
                if let ended = try await ending(job) {
                    try await finish(job, ended.outcome, reason: ended.reason)
                    return false
                }
                guard let found = try await directory.channels(forCall: job.callID)[job.channel] else {
                    try await finish(
                        job, .failed, reason: PushChannels.missingChannelReason,
                        lastError: "no push channel '\(job.channel)' on this server")
                    return false
                }
                channel = found
                let attempt = RequestWindow(deadline: deadline)
                result = await attempt.withValue { await found.send(job) }
                sent = !attempt.wasHeldBack
                guard attempt.wasHeldBack else { break }
                lookedAgain += 1
                metrics.increment(
                    "switchboard_push_sends_held_total",
                    help: "Push sends held for a connection and handed back unsent, to be checked again.",
                    labels: labels(job))
            } while lookedAgain < Self.maxLooksAgain
            if case .transportFailure(let message) = result,
                case .log(let suppressed) = transportFailures.withLock({ $0.occurred(message, at: .now) })
            {
                logger.warning(
                    "push transport failure; the push is retried until its ring window ends",
                    [
                        "channel": .string(channel.name), "provider": .string(channel.provider),
                        "reason": .string(message),
                        "job.id": .string(job.id), "token.suffix": .string(Self.suffix(job.token)),
                        "sameFailuresNotLogged": .int(suppressed),
                    ])
            }
            let verdict = channel.verdict(for: result)
            let reason = verdict.reason
            switch verdict.action {
            case .delivered:
                try await finish(job, .delivered, reason: nil)
            case .retry, .refreshProviderTokenAndRetry:
                return try await retry(job, reason: reason, notBefore: verdict.retryAfter, attempted: sent)
            case .deleteToken:
                try await finish(job, .failed, reason: reason, lastError: reason, token: .forget)
                logger.info(
                    "push token deleted",
                    [
                        "channel": .string(channel.name), "token.suffix": .string(Self.suffix(job.token)),
                        "reason": .string(reason),
                    ])
            case .reclassifyToken:
                // Possibly a sandbox/production or topic mismatch: delete only when it repeats.
                try await finish(job, .failed, reason: reason, lastError: reason, token: .doubt)
            case .fail:
                try await finish(job, .failed, reason: reason, lastError: reason)
            }
            return false
        } catch {
            logger.error(
                "push job not processed; its claim will lapse and it will be retried",
                [
                    "job.id": .string(job.id), "error": .string(String(describing: error)),
                ])
            return true
        }
    }

    /// What logs show of a token.
    static func suffix(_ token: String) -> String { String(token.suffix(8)) }

    /// How often one claim of a job sends again after a send was handed back unsent (each
    /// time after the connection came back); past it the job is retried like any other failure.
    static let maxLooksAgain = 3

    /// Why a job is not to be sent (any more), or `nil` when it is: its call stopped ringing,
    /// its device or payload key changed, or its window passed.
    private func ending(_ job: PushJob) async throws -> (outcome: PushJobOutcome, reason: String)? {
        switch try await store.relevance(of: job) {
        case .callNotRinging: return (.dropped, "call_not_ringing")
        case .deviceUnbound: return (.dropped, "device_unbound")
        case .payloadKeyChanged: return (.dropped, "payload_key_changed")
        case .send: break
        }
        guard store.now() < job.expiresAt else { return (.expired, "ring_window_passed") }
        return nil
    }

    /// The metric labels of a job's channel.
    private func labels(_ job: PushJob) -> [(String, String)] {
        [("provider", channels[job.channel]?.provider ?? "none"), ("channel", job.channel)]
    }

    /// Schedules the next attempt; `false` when the ring window leaves none (the job expired).
    private func retry(
        _ job: PushJob, reason: String, notBefore retryAfter: TimeInterval? = nil, attempted: Bool = true
    ) async throws -> Bool {
        let now = store.now()
        // The service's Retry-After, when longer than the backoff, wins; both end at the ring window.
        let earliest = retryAfter.map { now.addingTimeInterval(min(max($0, 0), 3600)) }
        guard
            let backoff = PushRetryPolicy.nextAttempt(
                after: now, attempt: job.attempts, jitter: jitter(), expiresAt: job.expiresAt),
            let next = Optional(max(backoff, earliest ?? backoff)), next < job.expiresAt
        else {
            try await finish(job, .expired, reason: reason, lastError: reason)
            return false
        }
        try await store.reschedule(job, nextAttemptAtMS: next.outboxMilliseconds, reason: reason, attempted: attempted)
        metrics.increment(
            "switchboard_push_attempts_retried_total", help: "Push attempts that will be retried.", labels: labels(job))
        return true
    }

    /// Records the outcome; `lastError` is the error of the attempt that ended the job, if one did
    /// (a job dropped or expired later keeps the error of its latest failed attempt). `token`:
    /// what the outcome says about the device, recorded in the same transaction.
    private func finish(
        _ job: PushJob, _ outcome: PushJobOutcome, reason: String?, lastError: String? = nil,
        token: PushTokenVerdict? = nil
    ) async throws {
        let attempted = outcome == .delivered || outcome == .failed
        let recorded = try await store.finish(
            job, outcome, reason: reason, lastError: lastError, attempted: attempted,
            at: store.now().outboxMilliseconds, token: token)
        // Another instance took the job over after this one's lease ran out: its outcome counts.
        guard recorded else { return }
        metrics.increment(
            "switchboard_push_jobs_total", help: "Push jobs finished, by provider, channel, outcome and reason.",
            labels: labels(job) + [("outcome", outcome.rawValue), ("reason", reason ?? "")])
        if outcome == .failed {
            logger.warning(
                "push failed",
                [
                    "job.id": .string(job.id), "call.id": .string(job.callID), "channel": .string(job.channel),
                    "token.suffix": .string(Self.suffix(job.token)), "reason": .string(reason ?? ""),
                ])
        }
    }
}
