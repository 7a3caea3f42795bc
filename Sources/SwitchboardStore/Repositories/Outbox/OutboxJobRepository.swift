import Foundation

/// What an outbox job carries out once the change that wrote it committed.
package enum OutboxJobKind: String, Sendable, CaseIterable {
    /// A media withdrawal (remove a participant from a room, delete a room).
    case media
    /// A webhook delivery to one of the app's endpoints.
    case webhook
}

/// Where a job stands: waiting (or being tried), carried out, or given up on.
package enum OutboxJobState: String, Sendable {
    case pending, done, dead
}

/// A job as a change writes it, in the change's own transaction. Jobs of one `queue` are
/// carried out one at a time, in the order they were written; different queues never wait for
/// each other.
package struct NewOutboxJob: Sendable, Equatable {
    package var id: String
    package var kind: OutboxJobKind
    package var queue: String
    /// What it goes to: the webhook endpoint's id, the media room.
    package var target: String
    /// What to carry out, as JSON.
    package var payload: String
    /// Past this moment a failed job is given up (dead-lettered) instead of tried again; `nil`: never.
    package var giveUpAtMS: Int64?

    package init(
        id: String, kind: OutboxJobKind, queue: String, target: String, payload: String, giveUpAtMS: Int64? = nil
    ) {
        self.id = id
        self.kind = kind
        self.queue = queue
        self.target = target
        self.payload = payload
        self.giveUpAtMS = giveUpAtMS
    }
}

/// A stored job. Times are milliseconds since 1970.
package struct OutboxJob: Sendable, Equatable {
    package var id: String
    package var kind: OutboxJobKind
    package var queue: String
    package var target: String
    package var payload: String
    package var state: OutboxJobState
    package var attempts: Int
    package var nextAttemptMS: Int64
    package var createdAtMS: Int64
    package var giveUpAtMS: Int64?
    package var finishedAtMS: Int64?
    /// The last attempt's answer: an HTTP status, when there was one.
    package var lastStatus: Int?
    package var lastLatencyMS: Int64?
    package var lastError: String?
}

/// One attempt at a job, as the operator sees it.
package struct OutboxAttempt: Sendable, Equatable {
    package var atMS: Int64
    package var status: Int?
    package var latencyMS: Int64
    package var error: String?

    package init(atMS: Int64, status: Int?, latencyMS: Int64, error: String?) {
        self.atMS = atMS
        self.status = status
        self.latencyMS = latencyMS
        self.error = error
    }
}

/// The outbox of jobs that are not pushes (table `outbox_jobs`, their attempts in
/// `outbox_attempts`). A claim is a lease: it moves the job's next attempt to the lease's end
/// and names its holder; only the holder records the outcome, and when its process ends
/// without one, the job falls due again when the lease runs out.
package protocol OutboxJobRepository {
    func enqueue(_ job: NewOutboxJob, at nowMS: Int64) throws
    /// Pending jobs of `kinds` due at `nowMS` that head their queue (no earlier job of the
    /// queue is pending), oldest due first, at most `limit`, leaving out `skipping` and the
    /// jobs for `busyTargets`.
    func due(
        at nowMS: Int64, limit: Int, kinds: Set<OutboxJobKind>, skipping: Set<String>, busyTargets: Set<String>
    ) throws -> [OutboxJob]
    /// When the next pending job of `kinds` that heads its queue falls due, if there is one.
    func nextDueMS(kinds: Set<OutboxJobKind>) throws -> Int64?
    /// A target's pending jobs fall due at `nowMS` at the latest (an endpoint enabled again).
    func hurry(_ kind: OutboxJobKind, target: String, at nowMS: Int64) throws
    /// Voids every claim: the pending jobs a process before this one held fall due at `nowMS`
    /// (a start-up as the database's only runner, on SQLite). Returns how many.
    func releaseClaims(at nowMS: Int64) throws -> Int
    /// Takes a due job for `instance` until `untilMS`. False when another took it first.
    func claim(_ id: String, by instance: String, until untilMS: Int64, at nowMS: Int64) throws -> Bool
    /// Ends a claimed job as `done` or `dead`, the attempt recorded. False when the claim was lost.
    func finish(
        _ id: String, _ state: OutboxJobState, by instance: String, attempt: OutboxAttempt?, at nowMS: Int64
    ) throws -> Bool
    /// A failed attempt (or, with `attempt` nil, a job not tried because `error` said it could
    /// not be): tried again at `nextMS`. False when the claim was lost.
    func retry(
        _ id: String, by instance: String, at nextMS: Int64, attempt: OutboxAttempt?, error: String?
    ) throws
        -> Bool
    func job(_ id: String) throws -> OutboxJob?
    /// The newest jobs of a kind for one target, newest first.
    func jobs(of kind: OutboxJobKind, target: String, limit: Int) throws -> [OutboxJob]
    /// A job's newest attempts, newest first.
    func attempts(of jobID: String, limit: Int) throws -> [OutboxAttempt]
    /// Sends a finished (or dead) job again, due at once, with a new give-up time, in a queue of
    /// its own (it is outside its old queue's order: the jobs after it went already). False when
    /// it is still pending.
    func resend(_ id: String, at nowMS: Int64, giveUpAtMS: Int64?) throws -> Bool
    /// Deletes every job of a kind for a target (an endpoint that goes), with their attempts.
    func deleteAll(of kind: OutboxJobKind, target: String) throws
    /// Deletes jobs finished before `beforeMS`, with their attempts; returns how many.
    func prune(finishedBefore beforeMS: Int64) throws -> Int
    /// Pending jobs of a kind.
    func pendingCount(of kind: OutboxJobKind) throws -> Int
}

/// ``OutboxJobRepository`` in SQL that SQLite and PostgreSQL both run.
package struct SQLOutboxJobRepository: OutboxJobRepository {
    package let connection: any SQLExecutor

    private static let columns = """
        id, kind, queue, target, payload, state, attempts, next_attempt_ms, created_at_ms, give_up_at_ms,
        finished_at_ms, last_status, last_latency_ms, last_error
        """

    package func enqueue(_ job: NewOutboxJob, at nowMS: Int64) throws {
        try connection.run(
            """
            INSERT INTO outbox_jobs (id, kind, queue, target, payload, state, attempts, next_attempt_ms, created_at_ms, give_up_at_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?6, ?7)
            """,
            [
                .text(job.id), .text(job.kind.rawValue), .text(job.queue), .text(job.target), .text(job.payload),
                .integer(nowMS), job.giveUpAtMS.map { .integer($0) } ?? .null,
            ])
    }

    /// `kind IN (…)` over the bindings from `first` on.
    private static func kindFilter(_ kinds: Set<OutboxJobKind>, from first: Int) -> (String, [SQLiteValue]) {
        let sorted = kinds.map(\.rawValue).sorted()
        guard !sorted.isEmpty else { return ("1 = 0", []) }
        let placeholders = sorted.indices.map { "?\($0 + first)" }.joined(separator: ", ")
        return ("j.kind IN (\(placeholders))", sorted.map { .text($0) })
    }

    /// The head of its queue: no earlier job of the queue is pending.
    private static let headOfQueue =
        "NOT EXISTS (SELECT 1 FROM outbox_jobs e WHERE e.queue = j.queue AND e.state = 'pending' AND e.seq < j.seq)"

    package func due(
        at nowMS: Int64, limit: Int, kinds: Set<OutboxJobKind>, skipping: Set<String>, busyTargets: Set<String>
    ) throws -> [OutboxJob] {
        // Asks for more than `limit` so that jobs still being carried out do not hide the others.
        let (kindSQL, kindValues) = Self.kindFilter(kinds, from: 3)
        let targets = busyTargets.sorted()
        let placeholders = targets.indices.map { "?\($0 + 3 + kindValues.count)" }.joined(separator: ", ")
        return try connection.query(
            """
            SELECT \(Self.columns) FROM outbox_jobs j
            WHERE j.state = 'pending' AND j.next_attempt_ms <= ?1 AND \(kindSQL)\(targets.isEmpty ? "" : " AND j.target NOT IN (\(placeholders))")
            AND \(Self.headOfQueue)
            ORDER BY j.next_attempt_ms, j.seq LIMIT ?2
            """,
            [.integer(nowMS), .integer(Int64(limit + skipping.count))] + kindValues + targets.map { .text($0) }
        ).compactMap(Self.job(from:)).filter { !skipping.contains($0.id) }.prefix(limit).map { $0 }
    }

    package func nextDueMS(kinds: Set<OutboxJobKind>) throws -> Int64? {
        let (kindSQL, kindValues) = Self.kindFilter(kinds, from: 1)
        return try connection.query(
            """
            SELECT min(j.next_attempt_ms) AS due FROM outbox_jobs j
            WHERE j.state = 'pending' AND \(kindSQL) AND \(Self.headOfQueue)
            """, kindValues
        ).first?.optionalInt64("due")
    }

    package func hurry(_ kind: OutboxJobKind, target: String, at nowMS: Int64) throws {
        try connection.run(
            """
            UPDATE outbox_jobs SET next_attempt_ms = ?1
            WHERE kind = ?2 AND target = ?3 AND state = 'pending' AND claimed_by IS NULL AND next_attempt_ms > ?1
            """,
            [.integer(nowMS), .text(kind.rawValue), .text(target)])
    }

    package func releaseClaims(at nowMS: Int64) throws -> Int {
        try connection.run(
            """
            UPDATE outbox_jobs SET claimed_by = NULL,
                next_attempt_ms = CASE WHEN next_attempt_ms < ?1 THEN next_attempt_ms ELSE ?1 END
            WHERE state = 'pending' AND claimed_by IS NOT NULL
            """,
            [.integer(nowMS)])
    }

    package func claim(_ id: String, by instance: String, until untilMS: Int64, at nowMS: Int64) throws -> Bool {
        try connection.run(
            """
            UPDATE outbox_jobs SET next_attempt_ms = ?1, claimed_by = ?2
            WHERE id = ?3 AND state = 'pending' AND next_attempt_ms <= ?4
            """,
            [.integer(untilMS), .text(instance), .text(id), .integer(nowMS)]) == 1
    }

    package func finish(
        _ id: String, _ state: OutboxJobState, by instance: String, attempt: OutboxAttempt?, at nowMS: Int64
    ) throws -> Bool {
        let applied =
            try connection.run(
                """
                UPDATE outbox_jobs SET state = ?1, finished_at_ms = ?2, claimed_by = NULL,
                    attempts = attempts + ?3, last_status = coalesce(?4, last_status),
                    last_latency_ms = coalesce(?5, last_latency_ms), last_error = ?6
                WHERE id = ?7 AND state = 'pending' AND claimed_by = ?8
                """,
                [
                    .text(state.rawValue), .integer(nowMS), .integer(attempt == nil ? 0 : 1),
                    attempt?.status.map { .integer(Int64($0)) } ?? .null,
                    attempt.map { .integer($0.latencyMS) } ?? .null,
                    attempt?.error.map { .text(String($0.prefix(500))) } ?? .null, .text(id), .text(instance),
                ]) == 1
        if applied, let attempt { try log(attempt, of: id) }
        return applied
    }

    package func retry(
        _ id: String, by instance: String, at nextMS: Int64, attempt: OutboxAttempt?, error: String?
    ) throws -> Bool {
        guard let attempt else {
            return try connection.run(
                """
                UPDATE outbox_jobs SET next_attempt_ms = ?1, claimed_by = NULL, last_error = ?2
                WHERE id = ?3 AND state = 'pending' AND claimed_by = ?4
                """,
                [.integer(nextMS), error.map { .text(String($0.prefix(500))) } ?? .null, .text(id), .text(instance)])
                == 1
        }
        let applied =
            try connection.run(
                """
                UPDATE outbox_jobs SET attempts = attempts + 1, next_attempt_ms = ?1, claimed_by = NULL,
                    last_status = ?2, last_latency_ms = ?3, last_error = ?4
                WHERE id = ?5 AND state = 'pending' AND claimed_by = ?6
                """,
                [
                    .integer(nextMS), attempt.status.map { .integer(Int64($0)) } ?? .null,
                    .integer(attempt.latencyMS), attempt.error.map { .text(String($0.prefix(500))) } ?? .null,
                    .text(id), .text(instance),
                ]) == 1
        if applied { try log(attempt, of: id) }
        return applied
    }

    private func log(_ attempt: OutboxAttempt, of jobID: String) throws {
        try connection.run(
            "INSERT INTO outbox_attempts (job_id, at_ms, status, latency_ms, error) VALUES (?1, ?2, ?3, ?4, ?5)",
            [
                .text(jobID), .integer(attempt.atMS), attempt.status.map { .integer(Int64($0)) } ?? .null,
                .integer(attempt.latencyMS), attempt.error.map { .text(String($0.prefix(500))) } ?? .null,
            ])
    }

    package func job(_ id: String) throws -> OutboxJob? {
        try connection.query("SELECT \(Self.columns) FROM outbox_jobs WHERE id = ?1", [.text(id)])
            .first.flatMap(Self.job(from:))
    }

    package func jobs(of kind: OutboxJobKind, target: String, limit: Int) throws -> [OutboxJob] {
        try connection.query(
            """
            SELECT \(Self.columns) FROM outbox_jobs WHERE kind = ?1 AND target = ?2 ORDER BY seq DESC LIMIT ?3
            """,
            [.text(kind.rawValue), .text(target), .integer(Int64(limit))]
        ).compactMap(Self.job(from:))
    }

    package func attempts(of jobID: String, limit: Int) throws -> [OutboxAttempt] {
        try connection.query(
            """
            SELECT at_ms, status, latency_ms, error FROM outbox_attempts WHERE job_id = ?1
            ORDER BY at_ms DESC LIMIT ?2
            """,
            [.text(jobID), .integer(Int64(limit))]
        ).map { row in
            OutboxAttempt(
                atMS: try row.int64("at_ms"), status: try row.optionalInt64("status").map { Int($0) },
                latencyMS: try row.int64("latency_ms"), error: try row.optionalString("error"))
        }
    }

    package func resend(_ id: String, at nowMS: Int64, giveUpAtMS: Int64?) throws -> Bool {
        try connection.run(
            """
            UPDATE outbox_jobs SET state = 'pending', next_attempt_ms = ?1, give_up_at_ms = ?2, finished_at_ms = NULL,
                claimed_by = NULL, queue = ?4
            WHERE id = ?3 AND state != 'pending'
            """,
            [.integer(nowMS), giveUpAtMS.map { .integer($0) } ?? .null, .text(id), .text("resend:\(id)")]) == 1
    }

    package func deleteAll(of kind: OutboxJobKind, target: String) throws {
        try connection.run(
            "DELETE FROM outbox_attempts WHERE job_id IN (SELECT id FROM outbox_jobs WHERE kind = ?1 AND target = ?2)",
            [.text(kind.rawValue), .text(target)])
        try connection.run(
            "DELETE FROM outbox_jobs WHERE kind = ?1 AND target = ?2", [.text(kind.rawValue), .text(target)])
    }

    package func prune(finishedBefore beforeMS: Int64) throws -> Int {
        try connection.run(
            """
            DELETE FROM outbox_attempts WHERE job_id IN
                (SELECT id FROM outbox_jobs WHERE state != 'pending' AND finished_at_ms < ?1)
            """,
            [.integer(beforeMS)])
        return try connection.run(
            "DELETE FROM outbox_jobs WHERE state != 'pending' AND finished_at_ms < ?1", [.integer(beforeMS)])
    }

    package func pendingCount(of kind: OutboxJobKind) throws -> Int {
        try connection.query(
            "SELECT COUNT(*) AS n FROM outbox_jobs WHERE kind = ?1 AND state = 'pending'", [.text(kind.rawValue)]
        ).first?.int("n") ?? 0
    }

    /// A row as a job; `nil` for a kind or state this build does not know.
    private static func job(from row: SQLiteRow) throws -> OutboxJob? {
        guard let kind = OutboxJobKind(rawValue: try row.string("kind")),
            let state = OutboxJobState(rawValue: try row.string("state"))
        else { return nil }
        return OutboxJob(
            id: try row.string("id"), kind: kind, queue: try row.string("queue"), target: try row.string("target"),
            payload: try row.string("payload"), state: state, attempts: try row.int("attempts"),
            nextAttemptMS: try row.int64("next_attempt_ms"), createdAtMS: try row.int64("created_at_ms"),
            giveUpAtMS: try row.optionalInt64("give_up_at_ms"), finishedAtMS: try row.optionalInt64("finished_at_ms"),
            lastStatus: try row.optionalInt64("last_status").map { Int($0) },
            lastLatencyMS: try row.optionalInt64("last_latency_ms"), lastError: try row.optionalString("last_error"))
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
