import Foundation
import Synchronization
import SwitchboardLifecycle
import SwitchboardObservability
import SwitchboardPush
import SwitchboardStore

/// What one attempt at a job came to.
struct OutboxAttemptResult: Sendable {
    enum Outcome: Sendable, Equatable {
        /// Carried out (or no longer needed).
        case done
        /// Failed; try again after the back-off, and not before `notBefore` seconds (a `Retry-After`).
        case retry(notBefore: TimeInterval?)
        /// Failed for good: dead-letter it.
        case giveUp
    }

    var outcome: Outcome
    /// The answer's HTTP status, when there was one.
    var status: Int?
    var error: String?
    /// Whether anything was tried (a media withdrawal found stale was not): only then is an attempt recorded.
    var attempted = true
}

/// Carries out the jobs of one kind.
protocol OutboxJobHandler: Sendable {
    /// How long a claim keeps other passes and instances off a job: longer than an attempt may take.
    var lease: TimeInterval { get }
    /// How long after it was written a job is given up (dead-lettered) when it keeps failing; nil: never.
    var giveUpAfter: TimeInterval? { get }
    func attempt(_ job: OutboxJob) async -> OutboxAttemptResult
    /// The pause before the next attempt after `failures` failed ones.
    func retryDelay(afterFailures failures: Int) -> TimeInterval
}

/// The one outbox runner for every job that is not a push (`outbox_jobs`): media withdrawals
/// and webhook deliveries. A change writes its jobs in its own transaction; after the commit
/// the runner claims each due job with a lease (so two passes or instances never both try it,
/// and a crashed instance's jobs fall due again when the lease runs out), tries it on a task of
/// its own (a slow target delays no other: it holds at most `maxInFlightPerTarget` of the
/// runner's slots), and records the outcome: done, another attempt
/// after a growing pause, or given up. Jobs of one queue go one at a time, in order.
final class OutboxRunner: Sendable {
    let store: ServerStore
    let handlers: [OutboxJobKind: any OutboxJobHandler]
    let logger: Logger
    let metrics: Metrics
    /// Jobs tried at once; past it the loop waits for outcomes before claiming more.
    let maxInFlight: Int
    /// Jobs for one target (one webhook endpoint, one media room) tried at once: a target that
    /// hangs holds this many slots at most, never the runner's whole budget.
    let maxInFlightPerTarget: Int
    /// The longest the loop sleeps with nothing due: other instances' jobs wake no one here.
    let idleCeiling: TimeInterval = 1
    /// The jobs being tried, with their targets.
    private let inFlight = Mutex<[String: String]>([:])
    private let pending = Mutex<[OutboxJobKind: Int]>([:])

    static let loopName = "outbox"

    /// The kinds this runner carries out; jobs of others wait (a media job under a server whose
    /// media backend manages no rooms).
    var kinds: Set<OutboxJobKind> { Set(handlers.keys) }

    /// Passes over the outbox so far (tests bound it: a runner must not spin).
    var passCount: Int { passes.load(ordering: .relaxed) }
    private let passes = Atomic<Int>(0)
    private let work = WakeSignal()

    init(
        store: ServerStore, handlers: [OutboxJobKind: any OutboxJobHandler], logger: Logger, metrics: Metrics,
        maxInFlight: Int = 64, maxInFlightPerTarget: Int = 8
    ) {
        self.store = store
        self.handlers = handlers
        self.logger = logger
        self.metrics = metrics
        self.maxInFlight = max(1, maxInFlight)
        self.maxInFlightPerTarget = max(1, maxInFlightPerTarget)
        let work = self.work
        store.observeOutboxJobs { work.signal() }
    }

    /// Jobs of `kind` waiting, as of the last pass.
    func pendingCount(_ kind: OutboxJobKind) -> Int { pending.withLock { $0[kind] ?? 0 } }

    /// There may be new jobs: run a pass now.
    func wake() { work.signal() }

    /// Runs until cancelled; attempts still running are cancelled with it.
    func run() async {
        // Only on SQLite is this the database's one runner: the claims of the process before
        // it are void (on PostgreSQL other instances' claims are live leases, and a crashed
        // instance's lapse by themselves).
        if !store.backend.isShared {
            do {
                _ = try await store.write { transaction in
                    try transaction.outboxJobs.releaseClaims(at: CallStore.milliseconds(transaction.date))
                }
            } catch {
                logger.error("outbox could not release old claims", ["error": .string(String(describing: error))])
            }
        }
        await BackgroundLoop.$name.withValue(Self.loopName) {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    var sleepFor = idleCeiling
                    do {
                        let claimed = try await claimDue()
                        for job in claimed {
                            group.addTask {
                                await self.process(job)
                                self.inFlight.withLock { _ = $0.removeValue(forKey: job.id) }
                                // The next job of its queue may be due now; a slot is free.
                                self.wake()
                            }
                        }
                        if !claimed.isEmpty { continue }
                        // Sleep until the next head of a queue falls due. One that is due but
                        // could not be claimed waits for a slot: a finished attempt wakes the loop.
                        let now = CallStore.milliseconds(store.environment.now())
                        let kinds = self.kinds
                        if let next = try await store.snapshot({ try $0.outboxJobs.nextDueMS(kinds: kinds) }),
                            next > now
                        {
                            sleepFor = min(idleCeiling, Double(next - now) / 1000)
                        }
                    } catch is CancellationError {
                        break
                    } catch {
                        logger.error("outbox pass failed", ["error": .string(String(describing: error))])
                    }
                    let environment = store.environment, pause = Duration.milliseconds(Int64(sleepFor * 1000))
                    let wait = await work.wait(sleep: { try await environment.sleep(for: pause) })
                    if wait == .cancelled { break }
                }
                group.cancelAll()
            }
        }
    }

    /// Claims the jobs due now, up to the in-flight budget.
    func claimDue() async throws -> [OutboxJob] {
        passes.add(1, ordering: .relaxed)
        let busy = inFlight.withLock { $0 }
        let budget = maxInFlight - busy.count
        guard budget > 0 else { return [] }
        var perTarget: [String: Int] = [:]
        for target in busy.values { perTarget[target, default: 0] += 1 }
        let saturated = Set(perTarget.filter { $0.value >= maxInFlightPerTarget }.keys)
        let now = CallStore.milliseconds(store.environment.now())
        let skipping = Set(busy.keys)
        let kinds = self.kinds
        let due = try await store.snapshot {
            try $0.outboxJobs.due(at: now, limit: budget, kinds: kinds, skipping: skipping, busyTargets: saturated)
        }
        try await notePending(force: !due.isEmpty)
        var claimed: [OutboxJob] = []
        let instance = store.instanceID
        for job in due {
            guard let handler = handlers[job.kind], perTarget[job.target, default: 0] < maxInFlightPerTarget else {
                continue
            }
            let leaseMS = Int64(handler.lease * 1000)
            let won = try await store.write { transaction in
                let at = CallStore.milliseconds(transaction.date)
                return try transaction.outboxJobs.claim(job.id, by: instance, until: at + leaseMS, at: at)
            }
            guard won else { continue }
            perTarget[job.target, default: 0] += 1
            inFlight.withLock { $0[job.id] = job.target }
            claimed.append(job)
        }
        return claimed
    }

    /// Claims and tries the jobs due now, waiting for their outcomes; returns how many were
    /// tried. (The loop in `run()` does not wait; tests that want one synchronous pass do.)
    @discardableResult
    func drainOnce() async throws -> Int {
        let claimed = try await claimDue()
        await withDiscardingTaskGroup { group in
            for job in claimed {
                group.addTask {
                    await self.process(job)
                    self.inFlight.withLock { _ = $0.removeValue(forKey: job.id) }
                }
            }
        }
        try await notePending(force: true)
        return claimed.count
    }

    /// The gauges' counts cost a query: only when something was due or is still waiting.
    private func notePending(force: Bool) async throws {
        guard force || pending.withLock({ $0.values.contains { $0 > 0 } }) else { return }
        let counts = try await store.snapshot { snapshot in
            try Dictionary(
                uniqueKeysWithValues: OutboxJobKind.allCases.map { ($0, try snapshot.outboxJobs.pendingCount(of: $0)) })
        }
        pending.withLock { $0 = counts }
    }

    /// Tries one claimed job and records the outcome.
    private func process(_ job: OutboxJob) async {
        guard let handler = handlers[job.kind] else { return }
        let started = ContinuousClock.now
        let result = await handler.attempt(job)
        let elapsed = ContinuousClock.now - started
        let latencyMS = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        let now = CallStore.milliseconds(store.environment.now())
        let attempt =
            result.attempted
            ? OutboxAttempt(atMS: now, status: result.status, latencyMS: latencyMS, error: result.error) : nil
        let instance = store.instanceID
        var state: OutboxJobState?
        var next: Int64?
        switch result.outcome {
        case .done: state = .done
        case .giveUp: state = .dead
        case .retry(let notBefore):
            let delay = max(handler.retryDelay(afterFailures: job.attempts), min(notBefore ?? 0, 86_400))
            let at = now + Int64(delay * 1000)
            let giveUpAt = job.giveUpAtMS ?? handler.giveUpAfter.map { job.createdAtMS + Int64($0 * 1000) }
            // The last attempt falls at the give-up time itself; after it, the job is dead.
            if let giveUpAt, at > giveUpAt {
                if now < giveUpAt { next = giveUpAt } else { state = .dead }
            } else {
                next = at
            }
        }
        do {
            if let next {
                let error = result.error
                _ = try await store.write {
                    try $0.outboxJobs.retry(job.id, by: instance, at: next, attempt: attempt, error: error)
                }
            } else if let state {
                _ = try await store.write {
                    try $0.outboxJobs.finish(job.id, state, by: instance, attempt: attempt, at: now)
                }
            }
        } catch {
            logger.error(
                "outbox job outcome not recorded; its claim will lapse and it will be tried again",
                ["job.id": .string(job.id), "error": .string(String(describing: error))])
            return
        }
        let outcome =
            switch (state, result.outcome) {
            case (.done?, _): "done"
            case (.dead?, _): "dead"
            default: "retry"
            }
        metrics.increment(
            "switchboard_outbox_attempts_total",
            help: "Attempts at outbox jobs (media withdrawals, webhook deliveries), by kind and what came of them.",
            labels: [("kind", job.kind.rawValue), ("outcome", outcome)])
        if state == .dead {
            logger.warning(
                "outbox job given up",
                [
                    "job.id": .string(job.id), "kind": .string(job.kind.rawValue), "target": .string(job.target),
                    "attempts": .int(job.attempts + 1), "error": .string(result.error ?? ""),
                ])
        } else if next != nil {
            logger.info(
                "outbox job failed; will retry",
                [
                    "job.id": .string(job.id), "kind": .string(job.kind.rawValue), "target": .string(job.target),
                    "attempts": .int(job.attempts + 1), "error": .string(result.error ?? ""),
                ])
        }
    }
}
