import Foundation
import Synchronization
import SwitchboardLifecycle
import SwitchboardObservability
import SwitchboardPush

/// Carries out the media withdrawals that changes wrote as jobs (`media_jobs`): each is tried
/// at once after its commit, then again with a growing pause (1 s, 2 s, 4 s … at most a minute)
/// until the media backend confirms it. A job is claimed with a lease before it is tried, so
/// two passes or instances do not both send it; the actions are idempotent anyway (LiveKit's
/// 404 for a room that is gone counts as done).
final class MediaJobRunner: Sendable {
    let store: ServerStore
    let media: any MediaBackend
    let logger: Logger
    /// How long a claim keeps others off a job: longer than one attempt may take.
    let lease: TimeInterval
    private let work = WakeSignal()
    private let pending = Atomic<Int>(0)

    /// Jobs not confirmed yet, as of the last pass.
    var pendingCount: Int { pending.load(ordering: .relaxed) }

    static let loopName = "media jobs"

    init(store: ServerStore, media: any MediaBackend, logger: Logger, lease: TimeInterval = 30) {
        self.store = store
        self.media = media
        self.logger = logger
        self.lease = lease
    }

    /// The pause before attempt `attempts + 1` after `attempts` failures.
    static func retryDelay(afterFailures attempts: Int) -> TimeInterval {
        min(60, pow(2, Double(max(0, min(attempts, 6)))))
    }

    /// There may be new jobs: run a pass now.
    func wake() { work.signal() }

    /// Runs until cancelled: a pass when woken, and at least every second for retries.
    func run() async {
        await BackgroundLoop.$name.withValue(Self.loopName) {
            while !Task.isCancelled {
                do {
                    _ = try await runPass()
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("media job pass failed", ["error": .string(String(describing: error))])
                }
                let environment = store.environment
                if await work.wait(sleep: { try await environment.sleep(for: .seconds(1)) }) == .cancelled { return }
            }
        }
    }

    /// A removal that came late: the user is back in the call (joined after the job was
    /// written), and taking them out now would undo that.
    private func isStale(_ job: MediaJob) async throws -> Bool {
        guard case .removeParticipant(_, let identity) = job.action else { return false }
        let call = try await store.snapshot { try $0.calls.load(job.callID)?.call }
        guard let call, call.state == .active else { return false }
        let written = Date(timeIntervalSince1970: TimeInterval(job.createdAtMS) / 1000)
        return call.participants.contains { $0.userID == identity && $0.isPresent && $0.joinedAt > written }
    }

    /// Tries every due job once; returns how many were confirmed.
    @discardableResult
    func runPass() async throws -> Int {
        let passStarted = CallStore.milliseconds(store.environment.now())
        let due = try await store.snapshot { try $0.mediaJobs.due(at: passStarted, limit: 100) }
        var done = 0
        for job in due {
            // The clock per job: an attempt may take the media deadline, and a lease taken from
            // the pass's start could be over before the job is tried.
            let now = CallStore.milliseconds(store.environment.now())
            let leaseUntil = now + Int64(lease * 1000)
            guard try await store.write({ try $0.mediaJobs.claim(job.id, until: leaseUntil, at: now) }) else {
                continue
            }
            do {
                if try await isStale(job) {
                    try await store.write { try $0.mediaJobs.finish(job.id) }
                    continue
                }
                try await media.perform([job.action])
                try await store.write { try $0.mediaJobs.finish(job.id) }
                done += 1
            } catch {
                let next =
                    CallStore.milliseconds(store.environment.now())
                    + Int64(Self.retryDelay(afterFailures: job.attempts) * 1000)
                logger.warning(
                    "media withdrawal failed; will retry",
                    [
                        "call.id": .string(job.callID), "attempts": .int(job.attempts + 1),
                        "error": .string(String(describing: error)),
                    ])
                try await store.write { try $0.mediaJobs.retry(job.id, at: next, error: String(describing: error)) }
            }
        }
        // The count costs a query: only when something was due or is still waiting, so an idle
        // server's pass each second is one read, not two.
        if !due.isEmpty || pending.load(ordering: .relaxed) > 0 {
            pending.store(try await store.snapshot { try $0.mediaJobs.pendingCount() }, ordering: .relaxed)
        }
        return done
    }
}
