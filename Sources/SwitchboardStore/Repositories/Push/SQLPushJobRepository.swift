import Foundation
import SwitchboardPushCore

/// ``PushJobRepository`` in SQL that SQLite and PostgreSQL both run (table `push_jobs`), working on the
/// connection of one transaction or snapshot.
package struct SQLPushJobRepository: PushJobRepository {
    package let connection: any SQLExecutor

    package func enqueue(_ job: NewPushJob) throws {
        try connection.run(
            """
            INSERT INTO push_jobs (id, call_id, user_id, device_id, provider, token, environment, payload, headers, state,
                reason, created_at_ms, next_attempt_at_ms, expires_at_ms, finished_at_ms, channel, kind)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13, ?14, ?15, ?16)
            """,
            [
                .text(job.id), .text(job.callID), .text(job.userID), .text(job.deviceID), .text(job.provider),
                .text(job.token),
                .text(job.environment), .text(job.payload), .text(job.headers), .text(job.state),
                job.reason.map(SQLiteValue.text) ?? .null,
                .integer(job.createdAtMS), .integer(job.expiresAtMS),
                job.state == "pending" ? .null : .integer(job.createdAtMS),
                .text(job.channel), .text(job.kind),
            ])
    }

    package func releaseClaims() throws {
        try connection.run(
            "UPDATE push_jobs SET claimed_until_ms = NULL, claimed_by = NULL WHERE state = 'pending' AND claimed_until_ms IS NOT NULL",
            [])
    }

    package func outlook(at nowMS: Int64) throws -> PushQueueOutlook {
        // When a pending job may go: its next attempt, and not before its claim runs out.
        let due = "\(connection.dialect.greatest)(next_attempt_at_ms, coalesce(claimed_until_ms + 1, 0))"
        let row = try connection.query(
            """
            SELECT count(*) AS pending,
                coalesce(sum(CASE WHEN \(due) <= ?1 THEN 1 ELSE 0 END), 0) AS due, min(\(due)) AS next
            FROM push_jobs WHERE state = 'pending'
            """,
            [.integer(nowMS)]
        ).first
        return PushQueueOutlook(
            pending: try row?.int("pending") ?? 0, due: try row?.int("due") ?? 0,
            nextDueMS: try row?.optionalInt64("next"))
    }

    package func claim(
        dueAt nowMS: Int64, limit: Int, leaseUntilMS: Int64, by instance: String, skipping: Set<String>
    ) throws -> [PushJob] {
        guard limit > 0 else { return [] }
        let rows = try connection.query(
            """
            SELECT * FROM push_jobs WHERE state = 'pending' AND next_attempt_at_ms <= ?1
            AND (claimed_until_ms IS NULL OR claimed_until_ms < ?1) ORDER BY next_attempt_at_ms LIMIT ?2\(connection.dialect.lockingRowsSkippingLocked)
            """,
            [.integer(nowMS), .integer(Int64(limit + skipping.count))])
        var claimed: [PushJob] = []
        for row in rows where claimed.count < limit {
            let id = try row.string("id")
            guard !skipping.contains(id) else { continue }
            try connection.run(
                "UPDATE push_jobs SET claimed_until_ms = ?, claimed_by = ? WHERE id = ?",
                [.integer(leaseUntilMS), .text(instance), .text(id)])
            let pairs =
                (try? JSONSerialization.jsonObject(with: Data(try row.string("headers").utf8)) as? [[String]]) ?? []
            claimed.append(
                PushJob(
                    id: id, callID: try row.string("call_id"), userID: try row.string("user_id"),
                    channel: try row.string("channel"),
                    kind: try row.value("kind", as: PushJobKind.self), token: try row.string("token"),
                    environment: try row.string("environment"),
                    payload: Array(try row.string("payload").utf8),
                    headers: pairs.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil },
                    attempts: try row.int("attempts"), expiresAt: StoredTime.date(try row.int64("expires_at_ms"))))
        }
        return claimed
    }

    package func reschedule(
        _ id: String, nextAttemptAtMS: Int64, reason: String, attempted: Bool, by instance: String
    ) throws -> Bool {
        try connection.run(
            """
            UPDATE push_jobs SET attempts = attempts + ?5, next_attempt_at_ms = ?1, reason = ?2, last_error = ?2,
                claimed_until_ms = NULL, claimed_by = NULL
            WHERE id = ?3 AND (claimed_by IS NULL OR claimed_by = ?4)
            """,
            [.integer(nextAttemptAtMS), .text(reason), .text(id), .text(instance), .integer(attempted ? 1 : 0)]) > 0
    }

    package func finish(
        _ id: String, _ outcome: PushJobOutcome, reason: String?, lastError: String?, attempted: Bool, at nowMS: Int64,
        by instance: String
    ) throws
        -> Bool
    {
        try connection.run(
            """
            UPDATE push_jobs SET state = ?1, reason = coalesce(?2, reason), finished_at_ms = ?3, claimed_until_ms = NULL, claimed_by = NULL,
                attempts = attempts + ?4, last_error = coalesce(?6, last_error)
            WHERE id = ?5 AND state = 'pending' AND (claimed_by IS NULL OR claimed_by = ?7)
            """,
            [
                .text(outcome.rawValue), reason.map(SQLiteValue.text) ?? .null, .integer(nowMS),
                .integer(attempted ? 1 : 0), .text(id),
                lastError.map(SQLiteValue.text) ?? .null, .text(instance),
            ]) > 0
    }

    package func rungDevices(callID: String, userID: String) throws -> Set<String> {
        Set(
            try connection.query(
                """
                SELECT device_id FROM push_jobs WHERE call_id = ? AND user_id = ? AND kind = 'ring'
                AND (state = 'delivered' OR attempts > 0 OR claimed_until_ms IS NOT NULL)
                """,
                [.text(callID), .text(userID)]
            ).map { try $0.string("device_id") })
    }

    package func rings(ofCall callID: String) throws -> [RingJobStatus] {
        try connection.query(
            "SELECT user_id, device_id, channel, state, reason FROM push_jobs WHERE call_id = ? AND kind = 'ring' ORDER BY user_id, device_id",
            [.text(callID)]
        ).map { row in
            RingJobStatus(
                userID: try row.string("user_id"), deviceID: try row.string("device_id"),
                channel: try row.string("channel"),
                state: try row.string("state"), reason: try row.optionalString("reason"))
        }
    }

    @discardableResult
    package func dropPendingRings(ofCall callID: String, at nowMS: Int64) throws -> Int {
        try connection.run(
            """
            UPDATE push_jobs SET state = 'dropped', reason = 'call_not_ringing', finished_at_ms = ?
            WHERE call_id = ? AND kind = 'ring' AND state = 'pending' AND (claimed_until_ms IS NULL OR claimed_until_ms < ?)
            """,
            [.integer(nowMS), .text(callID), .integer(nowMS)])
    }

    package func report(failures: Int) throws -> PushQueueReport {
        let queue = try connection.query(
            "SELECT count(*) AS pending, min(created_at_ms) AS oldest FROM push_jobs WHERE state = 'pending'", []
        ).first
        let outcomes = try connection.query(
            """
            SELECT provider, channel, state, reason, count(*) AS n FROM push_jobs WHERE state != 'pending'
            GROUP BY provider, channel, state, reason ORDER BY provider, channel, state, n DESC
            """, []
        ).map {
            PushQueueReport.Outcomes(
                provider: try $0.string("provider"), channel: try $0.string("channel"), state: try $0.string("state"),
                reason: try $0.optionalString("reason"), count: try $0.int("n"))
        }
        let newest = try connection.query(
            "SELECT * FROM push_jobs WHERE last_error IS NOT NULL AND state != 'pending' AND state != 'delivered' ORDER BY finished_at_ms DESC LIMIT ?",
            [.integer(Int64(max(0, failures)))]
        ).map { row in
            FinishedPushJob(
                id: try row.string("id"), callID: try row.string("call_id"), userID: try row.string("user_id"),
                provider: try row.string("provider"),
                channel: try row.string("channel"), token: try row.string("token"), state: try row.string("state"),
                reason: try row.optionalString("reason"),
                lastError: try row.optionalString("last_error"), attempts: try row.int("attempts"),
                finishedAtMS: try row.optionalInt64("finished_at_ms"))
        }
        return PushQueueReport(
            pending: try queue?.int("pending") ?? 0, oldestPendingCreatedMS: try queue?.optionalInt64("oldest"),
            outcomes: outcomes, newestFailures: newest)
    }

    package func deliveries(sinceMS: Int64) throws -> [(channel: String, createdAtMS: Int64, deliveredAtMS: Int64)] {
        try connection.query(
            """
            SELECT channel, created_at_ms, finished_at_ms FROM push_jobs
            WHERE state = 'delivered' AND finished_at_ms >= ? ORDER BY finished_at_ms LIMIT 20000
            """,
            [.integer(sinceMS)]
        ).map { (try $0.string("channel"), try $0.int64("created_at_ms"), try $0.int64("finished_at_ms")) }
    }

    package init(connection: any SQLExecutor) {
        self.connection = connection
    }
}
