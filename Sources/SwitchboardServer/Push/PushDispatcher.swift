import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardStore

/// One push as a provider sends it.
struct PushJob: Sendable {
    let id: String
    let callID: String
    let userID: String
    let token: String
    let environment: String
    let payload: [UInt8]
    let headers: [(String, String)]
    let attempts: Int
    let expiresAt: Date
}

/// What a provider got back.
enum PushSendResult: Sendable, Equatable {
    /// The service answered with a status and (for errors) a reason.
    case response(status: Int, reason: String?)
    /// No answer: connection failure, timeout, protocol error (retried).
    case transportFailure(String)
}

/// Sends pushes to one service (APNs now; FCM and vendors later).
protocol PushProvider: Sendable {
    /// The name recorded on jobs and metrics.
    var name: String { get }
    func send(_ job: PushJob) async -> PushSendResult
}

/// Used when no APNs credentials are configured: every job fails at once with a clear reason.
struct UnconfiguredPushProvider: PushProvider {
    var name: String { "apns" }
    func send(_ job: PushJob) async -> PushSendResult { .response(status: 0, reason: "ProviderNotConfigured") }
}

/// Drains the outbox: claims due jobs, drops those whose call stopped ringing, sends the rest,
/// and records every outcome. Claims are leases, released at start-up, so a restart resumes
/// exactly the unfinished jobs. Delivery is at least once; a retry or a resend after a crash
/// carries the same `apns-id`.
final class PushDispatcher: Sendable {
    let store: ServerStore
    let provider: any PushProvider
    let logger: Logger
    let metrics: Metrics
    let batchSize = 64
    let claimLease: TimeInterval = 60
    let jitter: @Sendable () -> Double
    private let wakeState = Mutex<(pending: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let pending = Atomic<Int>(0)

    /// Jobs waiting, as of the last pass (for the metrics gauge).
    var pendingCount: Int { pending.load(ordering: .relaxed) }

    init(store: ServerStore, provider: any PushProvider, logger: Logger, metrics: Metrics, jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.store = store
        self.provider = provider
        self.logger = logger
        self.metrics = metrics
        self.jitter = jitter
    }

    /// New jobs were committed: start at once instead of at the next poll.
    func wake() {
        let waiter = wakeState.withLock { state -> CheckedContinuation<Void, Never>? in
            state.pending = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Runs until cancelled.
    func run() async {
        do {
            try await releaseClaims()
        } catch {
            logger.error("push dispatcher could not release old claims", ["error": .string(String(describing: error))])
        }
        while !Task.isCancelled {
            do {
                if try await drainOnce() > 0 { continue }
            } catch is CancellationError {
                return
            } catch {
                logger.error("push dispatcher pass failed", ["error": .string(String(describing: error))])
            }
            await waitForWork(upTo: .milliseconds(250))
        }
    }

    private func waitForWork(upTo timeout: Duration) async {
        let sleeper = Task {
            try? await Task.sleep(for: timeout)
            self.wake()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = wakeState.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        wakeState.withLock { $0.pending = false }
        sleeper.cancel()
    }

    /// Claims from a previous process are void: this is the only dispatcher of this database.
    func releaseClaims() async throws {
        _ = try await store.write { transaction in
            try transaction.connection.run("UPDATE push_jobs SET claimed_until_ms = NULL WHERE state = 'pending' AND claimed_until_ms IS NOT NULL")
        }
    }

    /// Claims and processes the jobs due now; returns how many.
    @discardableResult
    func drainOnce() async throws -> Int {
        let now = store.environment.now()
        let nowMS = CallStore.milliseconds(now)
        let leaseMS = Int64(claimLease * 1000)
        let batch = batchSize
        // One cheap read answers the gauge and whether anything is due, so an idle outbox
        // never takes the single writer.
        let (waiting, due) = try await store.read { connection -> (Int, Int) in
            let row = try connection.query(
                """
                SELECT count(*) AS pending, coalesce(sum(next_attempt_at_ms <= ?1 AND (claimed_until_ms IS NULL OR claimed_until_ms < ?1)), 0) AS due
                FROM push_jobs WHERE state = 'pending'
                """,
                [.integer(nowMS)]).first
            return (try row?.int("pending") ?? 0, try row?.int("due") ?? 0)
        }
        pending.store(waiting, ordering: .relaxed)
        guard due > 0 else { return 0 }
        let jobs = try await store.write { transaction -> [PushJob] in
            let rows = try transaction.connection.query(
                """
                SELECT * FROM push_jobs WHERE state = 'pending' AND next_attempt_at_ms <= ?1
                AND (claimed_until_ms IS NULL OR claimed_until_ms < ?1) ORDER BY next_attempt_at_ms LIMIT ?2
                """,
                [.integer(nowMS), .integer(Int64(batch))])
            return try rows.map { row in
                try transaction.connection.run(
                    "UPDATE push_jobs SET claimed_until_ms = ? WHERE id = ?", [.integer(nowMS + leaseMS), .text(try row.string("id"))])
                let pairs = (try? JSONSerialization.jsonObject(with: Data(try row.string("headers").utf8)) as? [[String]]) ?? []
                return PushJob(
                    id: try row.string("id"), callID: try row.string("call_id"), userID: try row.string("user_id"),
                    token: try row.string("token"), environment: try row.string("environment"),
                    payload: Array(try row.string("payload").utf8), headers: pairs.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil },
                    attempts: try row.int("attempts"), expiresAt: CallStore.date(try row.int64("expires_at_ms")))
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for job in jobs {
                group.addTask { await self.process(job) }
            }
        }
        return jobs.count
    }

    private enum Outcome: String {
        case delivered, dropped, expired, failed
    }

    private func process(_ job: PushJob) async {
        do {
            let (ringing, deviceLive) = try await store.read { connection -> (Bool, Bool) in
                let ringing = try !connection.query(
                    """
                    SELECT 1 FROM calls c JOIN call_invitations i ON i.call_id = c.id AND i.user_id = ?2
                    WHERE c.id = ?1 AND c.state != 'ended' AND i.state = 'ringing'
                    """,
                    [.text(job.callID), .text(job.userID)]).isEmpty
                let live = try !connection.query(
                    """
                    SELECT 1 FROM push_devices d JOIN sessions s ON s.id = d.session_id AND s.ended_at IS NULL
                    WHERE d.token = ? AND d.user_id = ?
                    """,
                    [.text(job.token), .text(job.userID)]).isEmpty
                return (ringing, live)
            }
            // A push must never ring a dead call.
            guard ringing else { return try await finish(job, .dropped, reason: "call_not_ringing") }
            guard deviceLive else { return try await finish(job, .dropped, reason: "device_unbound") }
            guard store.environment.now() < job.expiresAt else { return try await finish(job, .expired, reason: "ring_window_passed") }

            let result = await provider.send(job)
            let action: PushAction
            let reason: String
            switch result {
            case .transportFailure(let message):
                action = .retry
                reason = message
            case .response(let status, let text):
                action = APNsResponsePolicy.action(status: status, reason: text.map(APNsReason.init))
                reason = text ?? "HTTP \(status)"
            }
            switch action {
            case .delivered:
                try await finish(job, .delivered, reason: nil)
            case .retry, .refreshProviderTokenAndRetry:
                try await retry(job, reason: reason)
            case .deleteToken:
                try await finish(job, .failed, reason: reason, thenRun: "DELETE FROM push_devices WHERE token = ?")
                logger.info("push token deleted", ["token.suffix": .string(DeviceRoutes.suffix(job.token)), "reason": .string(reason)])
            case .reclassifyToken:
                // Possibly a sandbox/production or topic mismatch: delete only when it repeats.
                try await finish(
                    job, .failed, reason: reason,
                    thenRun: "UPDATE push_devices SET suspect_reports = suspect_reports + 1 WHERE token = ?",
                    andThen: "DELETE FROM push_devices WHERE token = ? AND suspect_reports >= 2")
            case .fail:
                try await finish(job, .failed, reason: reason)
            }
        } catch {
            logger.error("push job not processed; its claim will lapse and it will be retried", [
                "job.id": .string(job.id), "error": .string(String(describing: error)),
            ])
        }
    }

    private func retry(_ job: PushJob, reason: String) async throws {
        let now = store.environment.now()
        guard let next = PushRetryPolicy.nextAttempt(after: now, attempt: job.attempts, jitter: jitter(), expiresAt: job.expiresAt) else {
            return try await finish(job, .expired, reason: reason)
        }
        _ = try await store.write { transaction in
            try transaction.connection.run(
                "UPDATE push_jobs SET attempts = attempts + 1, next_attempt_at_ms = ?, reason = ?, claimed_until_ms = NULL WHERE id = ?",
                [.integer(CallStore.milliseconds(next)), .text(reason), .text(job.id)])
        }
        metrics.increment("switchboard_push_attempts_retried_total", help: "Push attempts that will be retried.", labels: [("provider", provider.name)])
    }

    private func finish(_ job: PushJob, _ outcome: Outcome, reason: String?, thenRun: String? = nil, andThen: String? = nil) async throws {
        let now = CallStore.milliseconds(store.environment.now())
        let attempted = outcome == .delivered || outcome == .failed
        _ = try await store.write { transaction in
            try transaction.connection.run(
                """
                UPDATE push_jobs SET state = ?, reason = coalesce(?, reason), finished_at_ms = ?, claimed_until_ms = NULL,
                    attempts = attempts + ? WHERE id = ? AND state = 'pending'
                """,
                [.text(outcome.rawValue), reason.map(SQLiteValue.text) ?? .null, .integer(now), .integer(attempted ? 1 : 0), .text(job.id)])
            if let thenRun { try transaction.connection.run(thenRun, [.text(job.token)]) }
            if let andThen { try transaction.connection.run(andThen, [.text(job.token)]) }
        }
        metrics.increment(
            "switchboard_push_jobs_total", help: "Push jobs finished, by provider, outcome and reason.",
            labels: [("provider", provider.name), ("outcome", outcome.rawValue), ("reason", reason ?? "")])
        if outcome == .failed {
            logger.warning("push failed", [
                "job.id": .string(job.id), "call.id": .string(job.callID), "token.suffix": .string(DeviceRoutes.suffix(job.token)),
                "reason": .string(reason ?? ""),
            ])
        }
    }
}
