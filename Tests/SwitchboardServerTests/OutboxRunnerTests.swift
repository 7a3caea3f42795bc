import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardObservability
import SwitchboardStore
import SwitchboardTesting
import Testing

@testable import SwitchboardServer

/// The one outbox for jobs that are not pushes, with a handler the test controls: per-queue
/// order, retries that hold their queue, a hung target that cannot take every slot (nor make
/// the runner spin), and the migration that moved media withdrawals into it.
@Suite("The outbox runner", .serialized, .timeLimit(.minutes(2)))
struct OutboxRunnerTests {
    /// Jobs for `hung` wait until released; the first attempt at each id in `failOnce` fails.
    final class Handler: OutboxJobHandler {
        let released = Atomic<Bool>(false)
        let log = Mutex<[String]>([])
        let hungStarted = Atomic<Int>(0)
        let failOnce: Set<String>
        private let failed = Mutex<Set<String>>([])
        var lease: TimeInterval { 30 }
        var giveUpAfter: TimeInterval? { nil }

        init(failOnce: Set<String> = []) { self.failOnce = failOnce }

        func retryDelay(afterFailures failures: Int) -> TimeInterval { 0.01 }

        func attempt(_ job: OutboxJob) async -> OutboxAttemptResult {
            if job.target == "hung" {
                hungStarted.add(1, ordering: .relaxed)
                while !released.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
            }
            if failOnce.contains(job.id), failed.withLock({ $0.insert(job.id).inserted }) {
                log.withLock { $0.append("failed \(job.id)") }
                return OutboxAttemptResult(outcome: .retry(notBefore: nil), status: 503, error: "try again")
            }
            log.withLock { $0.append(job.id) }
            return OutboxAttemptResult(outcome: .done, status: 200)
        }

        var done: [String] { log.withLock { $0 }.filter { !$0.hasPrefix("failed") } }
    }

    /// A server's store (SQLite, or PostgreSQL in `make test`'s second pass) whose own runner
    /// carries out no media jobs (no managed rooms): the test's runner takes them alone.
    private func withStore(_ body: (ServerStore, CallTestClock) async throws -> Void) async throws {
        var configuration = ServerConfiguration()
        configuration.media.backend = .none
        let world = try CallWorld(configuration: configuration)
        defer { world.close() }
        try await body(world.app.application.store, world.clock)
    }

    private func enqueue(_ store: ServerStore, _ jobs: [(id: String, queue: String, target: String)]) async throws {
        try await store.write { transaction in
            for job in jobs {
                try transaction.enqueue(
                    NewOutboxJob(id: job.id, kind: .media, queue: job.queue, target: job.target, payload: "{}"))
            }
        }
    }

    @Test func aHungTargetHoldsOnlyItsShareOfTheSlots() async throws {
        try await withStore { store, _ in
            let handler = Handler()
            let runner = OutboxRunner(
                store: store, handlers: [.media: handler], logger: Logger(level: .error), metrics: Metrics(),
                maxInFlight: 4, maxInFlightPerTarget: 2)
            try await enqueue(store, (0..<6).map { ("h\($0)", "hung:\($0)", "hung") })
            try await enqueue(store, (0..<3).map { ("ok\($0)", "ok:\($0)", "ok") })
            let running = Task { await runner.run() }
            defer { running.cancel() }
            #expect(await eventually { handler.done.count == 3 && handler.hungStarted.load(ordering: .relaxed) == 2 })
            #expect(Set(handler.done) == ["ok0", "ok1", "ok2"])
            // Due jobs it may not take yet do not make it spin: it waits for a slot.
            let passes = runner.passCount
            try await Task.sleep(for: .seconds(1))
            #expect(runner.passCount - passes <= 5, "\(runner.passCount - passes) passes in a second")
            #expect(handler.hungStarted.load(ordering: .relaxed) == 2)
            handler.released.store(true, ordering: .relaxed)
            #expect(await eventually { handler.done.count == 9 })
            // The handler logs a job before the runner records its outcome: wait for the record.
            #expect(
                try await eventuallyTrying {
                    try await store.snapshot { try $0.outboxJobs.pendingCount(of: .media) } == 0
                })
        }
    }

    @Test func oneQueuesJobsGoInOrderAndARetryHoldsItsQueue() async throws {
        try await withStore { store, clock in
            let handler = Handler(failOnce: ["a"])
            handler.released.store(true, ordering: .relaxed)
            let runner = OutboxRunner(
                store: store, handlers: [.media: handler], logger: Logger(level: .error), metrics: Metrics())
            try await enqueue(store, [("a", "q", "t"), ("b", "q", "t"), ("c", "q", "t"), ("x", "other", "t")])
            let running = Task { await runner.run() }
            defer { running.cancel() }
            // The retry is due 10 ms later on the server's (manual) clock.
            #expect(
                await eventually {
                    if handler.done.count == 4 { return true }
                    clock.advance(seconds: 0.01)
                    return false
                })
            let log = handler.log.withLock { $0 }
            #expect(log.filter { $0 != "x" } == ["failed a", "a", "b", "c"])
            let a = try #require(try await store.snapshot { try $0.outboxJobs.job("a") })
            #expect(a.state == .done && a.attempts == 2 && a.lastStatus == 200)
            let attempts = try await store.snapshot { try $0.outboxJobs.attempts(of: "a", limit: 5) }
            #expect(attempts.map(\.status) == [200, 503])
        }
    }

    @Test func pendingMediaWithdrawalsMoveIntoTheOutbox() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sb-mig26-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("db.sqlite3").path
        let old = try Database(
            configuration: DatabaseConfiguration(path: path),
            migrations: Array(Schema.migrations.prefix { $0.version <= 25 }))
        try await old.write { connection in
            try connection.run(
                """
                INSERT INTO media_jobs (id, call_id, action, room, identity, attempts, next_attempt_ms, created_at_ms, last_error)
                VALUES ('j1', 'call1', 'remove_participant', 'call_call1', 'u9', 3, 1000, 500, 'livekit down')
                """, [])
        }
        old.close()
        let migrated = try Database(configuration: DatabaseConfiguration(path: path), migrations: Schema.migrations)
        defer { migrated.close() }
        let store = ServerStore(backend: migrated)
        let job = try #require(try await store.snapshot { try $0.outboxJobs.job("j1") })
        #expect(job.kind == .media && job.queue == "media:call1" && job.state == .pending && job.attempts == 3)
        #expect(job.nextAttemptMS == 1000 && job.lastError == "livekit down")
        let action = try #require(MediaWithdrawals.action(of: job))
        #expect(action.callID == "call1" && action.action == .removeParticipant(room: "call_call1", identity: "u9"))
    }
}
